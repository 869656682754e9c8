// What is compared of a node's outputs. Decompositions (qr, svd, eigh) have
// factors that are free up to sign or phase, so they are compared through
// invariants (|diag(R)|, singular values, eigenvalues, reconstructions) and
// never through raw factors.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "graph/program.h"
#include "ops/op_spec.h"

namespace divfuzz::oracles {

// The outputs themselves, or for a kDecomposition op its invariants (computed
// in float64, rounded back to the outputs' dtype).
std::vector<at::Tensor> Comparable(const ops::OpSpec* spec, const std::vector<at::Tensor>& outputs);

// What invariant i of Comparable is, as a report names it ("the singular
// values S"); "" where the op has none (not a decomposition, or no such i).
std::string InvariantName(const ops::OpSpec* spec, int i);

// Which output of an op with ops::kIndicesOutput holds its indices (0 for
// argmax-like and kIndicesFirst ops, else 1).
size_t IndicesOutput(const ops::OpSpec& spec);

// The values of `x` (the node's input 0) that `indices` (its indices
// output) select along the op's dim, unsqueezed where the op drops it;
// undefined where they cannot be gathered (indices out of range, a layout
// this does not model: max_pool's flat plane indices). Indices are judged by
// what they select: ties may break either way, a NaN must still come last.
at::Tensor SelectedValues(const ops::OpSpec& spec, const graph::Node& node, const at::Tensor& x,
                          const at::Tensor& indices);

// For an op whose value may be any most frequent value (kValueTies: mode),
// whether `values` (its value output) holds one in every row of `x` along
// the op's dim, under one way of counting NaNs: grouped, each on its own, or
// left out (torch.mode leaves it unsaid, pytorch#46225). One flag per row;
// empty where the shapes do not fit.
std::vector<bool> ModeValuesValid(const ops::OpSpec& spec, const graph::Node& node,
                                  const at::Tensor& x, const at::Tensor& values);

}  // namespace divfuzz::oracles
