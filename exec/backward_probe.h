// The backward nodes of one op's own autograd graph (a composite op such as
// cosine_similarity records several: DivBackward0, LinalgVectorNormBackward0,
// ExpandBackward0, SumBackward1), observed while torch::autograd::grad runs:
// each node's name and outputs in the order the engine ran them, and, for the
// gradient oracle's rounding witness, each node's outputs moved by eps.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>

#include <cstdint>
#include <string>
#include <vector>

namespace divfuzz::exec {

// A backward node's name, its place in the op's graph (sequence number from
// the op's first node: the same on every device for the same graph) and its
// outputs (the gradients it sends on, on the CPU).
struct BackwardStep {
  uint64_t seq = 0;
  std::string name;
  std::vector<at::Tensor> outputs;
};

struct BackwardProbeOptions {
  bool record = false;     // keep each node's outputs (BackwardStep)
  double noise_eps = 0;    // > 0: multiply each output element by 1 ± noise_eps
  uint64_t noise_seed = 0;  // the signs: per node and element, from this seed
  bool mirror = false;      // the opposite signs of the same draw
};

// Whether a backward node only moves values (views, expands, transposes):
// it computes nothing, so neither rounds nor names a kernel.
bool MovesOnly(const std::string& grad_fn);

// The op's own backward nodes reachable from `roots` (those made since
// `first_seq`: an input's AccumulateGrad or producer is not the op's).
std::vector<torch::autograd::Node*> OwnBackwardNodes(const std::vector<at::Tensor>& roots,
                                                     uint64_t first_seq);

// Installs post-hooks on `nodes`; `steps` (when recording) fills as the
// engine runs them. The probe must outlive the backward call.
class BackwardProbe {
 public:
  BackwardProbe(const std::vector<torch::autograd::Node*>& nodes, uint64_t first_seq,
                const BackwardProbeOptions& options);
  const std::vector<BackwardStep>& steps() const { return *steps_; }

 private:
  std::shared_ptr<std::vector<BackwardStep>> steps_;
};

}  // namespace divfuzz::exec
