// What running a program on one target produced: every node's outputs (kept
// so the oracle can localize a divergence) or a structured error.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/target.h"

namespace divfuzz::exec {

struct NodeError {
  enum class Kind {
    kRaised,          // the op threw (c10::Error or std::exception)
    kNotImplemented,  // ... saying the dtype is not implemented there
    kSkipped,         // an input came from a node that failed
    kBadArguments,    // the program's arguments do not fit the schema
    kCudaFatal,       // the CUDA context is poisoned (device assert, illegal address)
  };
  Kind kind = Kind::kRaised;
  std::string message;
  // Not run: its inputs break a precondition PyTorch does not check
  // (exec/index_precheck.h), on every target alike; `message` says which.
  bool declined = false;
  // Declined for a hang or crash the kernel may have (a loop bounded only by
  // a value, LAPACK's geev on NaN), not for undefined reads: a campaign runs
  // such a node in its isolated lane (fuzz/campaign/isolated_lane.h), where
  // a hang or crash is a finding. Implies `declined`.
  bool isolable = false;
};

struct NodeResult {
  // Snapshots on the CPU, taken right after the node ran (in-place ops later
  // in the program cannot change them). On cpu-f64 these are rounded back to
  // the program's dtype; `exact` keeps the float64 values.
  std::vector<at::Tensor> outputs;
  std::vector<at::Tensor> exact;
  std::optional<NodeError> error;
  // A forward node run under autograd: the backward node PyTorch recorded for
  // its first differentiable result, as PyTorch names it ("SinhBackward0").
  std::string grad_fn;
  // A result is one of the node's inputs itself, not a view or a copy
  // (flatten of a 1-d tensor returns self): autograd sees one value where the
  // program names two, so a gradient statement's sums for either name take
  // the uses of both (session 43's InputBuffer::add false alarm).
  bool returns_input = false;
  // A gradient statement (graph/gradient.h): dL/dv of L = sum(cotangent * y)
  // for every value v on a path from its inputs to its outputs (program
  // inputs and forward results alike), on the CPU, rounded to the value's
  // dtype as the outputs are. How the oracle finds the backward kernel where
  // the two sides part.
  std::map<std::string, at::Tensor> value_grads;
  // On the float64 targets: the same before rounding (a sum past the dtype's
  // range that the run carried on finite: the oracle's accumulation check).
  std::map<std::string, at::Tensor> value_grads_exact;
  // The layouts of those gradients as the engine made them (RunResult::formats).
  std::map<std::string, std::vector<int64_t>> value_grad_formats;
};

struct RunResult {
  Target target = Target::kCpu;
  std::map<std::string, at::Tensor> inputs;  // the program's inputs as built, on the CPU
  std::vector<NodeResult> nodes;             // one per program node
  bool cuda_fatal = false;                   // stop using this process's CUDA context
  std::string setup_error;                   // inputs could not be built (nodes then empty)
  std::string cpu_capability;                // ATen's CPU kernel ISA in the process that ran it
  // Seconds spent moving values: inputs to the target's device and dtype, and
  // every node's snapshot back to the host (a synchronizing copy on CUDA).
  double transfer_seconds = 0;
  // The strides of the values the run held in another layout than plain
  // contiguous (channels_last, a transpose, a strided slice; snapshots are
  // contiguous): the oracle's reruns restore them, since a kernel's path (its
  // vector lanes, cuDNN's algorithm, SDPA's choice of backend) follows the
  // layout.
  std::map<std::string, std::vector<int64_t>> formats;
};

// `t`'s strides where it is not plain contiguous and no two elements share
// memory (a broadcast's stride 0 cannot be rebuilt by a copy).
std::optional<std::vector<int64_t>> RunStrides(const at::Tensor& t);

// `t` copied into the strides `formats` records for `name` (same rank), else `t`.
at::Tensor InRunFormat(const std::map<std::string, std::vector<int64_t>>& formats,
                       const std::string& name, const at::Tensor& t);

}  // namespace divfuzz::exec
