// Gradient statements in generated and mutated programs (issue 31, item 5):
// `%g0, %g1 = autograd::grad(%y, [%x0, %x1], grad_outputs=%ct0)` over the
// program inputs that reach the differentiated values, each cotangent a fresh
// input of its output's exact type with a payload drawn as other inputs'
// are. Every function keeps the program valid (graph::ValidateProgram and
// ops::InferProgram) or returns false leaving it as it was.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "graph/program.h"
#include "mutators/random.h"
#include "ops/infer.h"

namespace divfuzz::mutators {

// Random ops (dropout, rrelu, bernoulli, the samplers) are never
// differentiated: their backward replays a mask the other side cannot share.
// By name, as exec/generic_ops.cc keeps them out of the catalogue.
bool IsRandomOp(const graph::Node& node);
bool HasRandomOp(const graph::Program& program);

// The program inputs among `values` and everything they are computed from.
std::set<std::string> InputsReaching(const graph::Program& program,
                                     const std::vector<std::string>& values);

// Appends a gradient statement over floating or complex node results (some of
// the outputs, or the last node's results) with respect to some of the
// floating or complex inputs reaching them, cotangents new inputs; the
// gradients join the outputs. False when the program has a random op or
// nothing to differentiate.
bool AddGradient(graph::Program& p, Random& random);
// Drops one input from a statement's list (and its gradient), keeping one.
bool DropGradientInput(graph::Program& p, Random& random);
// Adds another floating or complex input reaching the statement's outputs.
bool AddGradientInput(graph::Program& p, Random& random);
// Gives a cotangent a new payload (fill(1.0), normal, special, limits,
// edges ...), sometimes a layout; a cotangent that is no input of its own
// becomes one.
bool ChangeCotangent(graph::Program& p, Random& random);
// Removes a gradient statement; later uses of a gradient read its input.
bool RemoveGradient(graph::Program& p, Random& random);

// One of the above for a program with a gradient statement (removal at
// 1 - grad_share of its turns, another statement at grad_share), or, for one
// without, AddGradient.
bool MutateGradient(graph::Program& p, Random& random, double grad_share);

// Repair's step for a gradient statement over the nodes kept before it
// (`types` types them): drops the output/cotangent pairs that no longer type
// (a cotangent input used nowhere else is retyped to its output's type
// instead) and the inputs that are no floating or complex program inputs or
// reach no output; false when nothing is left. Defines the results in types.
bool RepairGradient(graph::Program& program, const std::vector<graph::Node>& kept,
                    const std::set<std::string>& single_use, graph::Node& node,
                    ops::TypeEnv& types);

// Whether the whole program validates and types (the mutators' guard).
bool ProgramValid(const graph::Program& p);

}  // namespace divfuzz::mutators
