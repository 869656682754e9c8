// What is compared of a node's outputs. Decompositions (qr, svd, eigh) have
// factors that are free up to sign or phase, so they are compared through
// invariants (|diag(R)|, singular values, eigenvalues, reconstructions) and
// never through raw factors.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "ops/op_spec.h"

namespace divfuzz::oracles {

// The outputs themselves, or for a kDecomposition op its invariants (computed
// in float64, rounded back to the outputs' dtype).
std::vector<at::Tensor> Comparable(const ops::OpSpec* spec, const std::vector<at::Tensor>& outputs);

// What invariant i of Comparable is, as a report names it ("the singular
// values S"); "" where the op has none (not a decomposition, or no such i).
std::string InvariantName(const ops::OpSpec* spec, int i);

}  // namespace divfuzz::oracles
