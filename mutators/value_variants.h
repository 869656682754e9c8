// Value variants (issue 18): one program run with many input values at once.
// Variant k of a program is the program with every seeded input payload's
// seed mixed with k (variant 0 is the program itself), so each variant is an
// ordinary program with its own exact inputs. When every node is pointwise
// (ops::kPointwise), variants 1..count stack along a new leading dim into one
// batched program, itself an ordinary program: each variant input, an
// aten::stack of them, a reshape that pads the rank, then the original nodes
// unchanged. Its output slice j is variant j + 1's output.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "graph/program.h"
#include "ops/infer.h"

namespace divfuzz::mutators {

// Variant k (k >= 0) of `program`: its inputs' seeds mixed with k.
graph::Program Variant(const graph::Program& program, int k);

struct VariantBatch {
  graph::Program program;  // the batched program
  ops::TypeEnv types;      // its inferred types
  int count = 0;           // variants 1..count, in slices 0..count-1
  // The variant (1..count) whose slice holds flat `element` of the batched
  // value `value`; 0 when that is not known (an element of -1, a name that
  // is not a batched value).
  int VariantOf(const std::string& value, long long element) const;
};

// The batched program of variants 1..count of `program` (typed `types`), or
// why it cannot be batched: a node that is not pointwise, an input that is
// not contiguous, 0-d inputs beside others (their dtype promotion would
// change), no seeded input, or types that would not be the program's own
// with a leading dim.
absl::StatusOr<VariantBatch> BatchVariants(const graph::Program& program,
                                           const ops::TypeEnv& types, int count);

}  // namespace divfuzz::mutators
