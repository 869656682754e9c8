// Program generation and structure-aware mutation. Every function returns a
// valid, typed program and is deterministic for a given seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "graph/program.h"

namespace divfuzz::mutators {

struct GenerateOptions {
  int max_nodes = 5;
  // Non-empty: every op comes from this catalogue family ("linalg", "fft" ...).
  std::string family;
  // Non-empty: every op is this one ("aten::grid_sampler_3d", qualified as
  // OpSpec::Qualified names it): `divfuzz seeds --gradients` draws a program
  // per backward kernel this way.
  std::string op;
  // The share of programs given a gradient statement (mutators/
  // gradient_mutations.h) where one fits: --grad_share's in a campaign
  // (fuzz/settings.def); 0 here, so code that generates programs for
  // another purpose gets none unless it asks.
  double grad_share = 0;
};

struct MutateOptions {
  // Mutation adds gradient statements at the rate that keeps about this share
  // of programs with one (gradient programs lose theirs at 1 - grad_share of
  // the same rate); the other gradient mutations (the inputs differentiated
  // against, the cotangents) apply to programs that have one whatever it is.
  double grad_share = 0;
};

// A valid program of up to max_nodes ops; with a family that fits nothing, a
// program without nodes.
graph::Program Generate(uint64_t seed, const GenerateOptions& options = {});

// Drops nodes that no longer type-check (unknown op, undefined or mistyped
// input), then unused inputs; outputs become the surviving requested outputs
// plus every unused result. A gradient statement keeps what still types
// (RepairGradient). nullopt when no node survives.
std::optional<graph::Program> Repair(graph::Program program);

// One structural or value mutation of a valid program: insert, delete or
// replace an op, change attributes, an input's shape or dtype, or its values
// (with special values: 0, -0, denormals, near-overflow, inf, nan), or its
// gradient statement (add or remove one, an input of its list, a cotangent).
graph::Program Mutate(const graph::Program& program, uint64_t seed,
                      const MutateOptions& options = {});

// Splices b's inputs and a prefix of its nodes into a, sometimes rewiring one
// of b's operands to a value of a with the same type.
graph::Program CrossOver(const graph::Program& a, const graph::Program& b, uint64_t seed,
                         const MutateOptions& options = {});

// The outputs of a program made of these nodes: results nobody consumes.
std::vector<std::string> Leaves(const graph::Program& program);

}  // namespace divfuzz::mutators
