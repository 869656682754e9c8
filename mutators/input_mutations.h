// Mutations of a program's inputs that reach numerics: payloads that break
// them (limits, domain edges, ties, dynamic range, singular/ill-conditioned/
// SPD/badly scaled matrices), memory layouts, edge shapes (empty, 0-d,
// size-1, broadcast) and sizes that cross the CPU's vector widths. Each keeps
// the program parseable; typing is Repair's job (mutator.cc).
#pragma once

#include "graph/program.h"
#include "mutators/random.h"

namespace divfuzz::mutators {

// A numerics payload for one input, fitting its dtype and shape.
bool MutateNumericPayload(graph::Program& p, Random& random);
// One input gets another layout valid for its rank.
bool MutateLayout(graph::Program& p, Random& random);
// An empty dim, a 0-d scalar, a size-1 dim, one more leading size-1 dim or a
// channels-last NCHW batch;
// sometimes applied to every input of the same shape, so broadcasts stay valid.
bool MutateShapeEdge(graph::Program& p, Random& random);
// The last dim becomes k*C + r, C the unrolled AVX512 chunk of the dtype and
// r below the AVX2 width, so every vector loop has a body and a scalar tail;
// inputs of the same shape follow, and the payload becomes planted() so
// limits land in both.
bool MutateVectorSize(graph::Program& p, Random& random);

// One of the above, chosen at random.
bool MutateInputNumerics(graph::Program& p, Random& random);

// A generated program's inputs, sometimes given a numerics payload, a layout
// or a vector-crossing size (kept only when every node still types).
graph::Program SeasonInputs(graph::Program p, Random& random);

// Payloads and layouts that no longer fit their input's type after a shape or
// dtype change become planted() / contiguous, so the program stays valid.
void FitPayloadsToTypes(graph::Program& p, Random& random);

}  // namespace divfuzz::mutators
