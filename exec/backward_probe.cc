#include "exec/backward_probe.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function_hook.h>

#include <deque>
#include <memory>
#include <set>

namespace divfuzz::exec {

bool MovesOnly(const std::string& grad_fn) {
  static const std::set<std::string> kMovesOnly = {
      "ViewBackward0",      "ReshapeAliasBackward0", "UnsafeViewBackward0", "TBackward0",
      "TransposeBackward0", "PermuteBackward0",      "ExpandBackward0",     "SqueezeBackward0",
      "SqueezeBackward1",   "SqueezeBackward2",      "UnsqueezeBackward0",  "CloneBackward0",
      "AsStridedBackward0", "AliasBackward0",        "SliceBackward0",      "SelectBackward0"};
  return kMovesOnly.count(grad_fn) > 0;
}

std::vector<torch::autograd::Node*> OwnBackwardNodes(const std::vector<at::Tensor>& roots,
                                                     uint64_t first_seq) {
  auto own = [&](const torch::autograd::Node* fn) {
    return fn != nullptr && fn->sequence_nr() >= first_seq && fn->sequence_nr() != UINT64_MAX;
  };
  std::vector<torch::autograd::Node*> nodes;
  std::set<torch::autograd::Node*> seen;
  std::deque<torch::autograd::Node*> queue;
  for (const at::Tensor& t : roots) {
    if (t.defined() && own(t.grad_fn().get())) queue.push_back(t.grad_fn().get());
  }
  while (!queue.empty()) {
    torch::autograd::Node* fn = queue.front();
    queue.pop_front();
    if (!seen.insert(fn).second) continue;
    nodes.push_back(fn);
    for (const torch::autograd::Edge& e : fn->next_edges()) {
      if (own(e.function.get())) queue.push_back(e.function.get());
    }
  }
  return nodes;
}

namespace {

class Hook : public torch::autograd::FunctionPostHook {
 public:
  Hook(std::shared_ptr<std::vector<BackwardStep>> steps, uint64_t seq, std::string name,
       const BackwardProbeOptions& options)
      : steps_(std::move(steps)), seq_(seq), name_(std::move(name)), options_(options) {}

  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    torch::autograd::variable_list moved = outputs;
    if (options_.noise_eps > 0) {
      // The signs depend on the node's place and the output's index only, so
      // a draw and its mirror move every element exactly oppositely.
      for (size_t i = 0; i < moved.size(); ++i) {
        at::Tensor& g = moved[i];
        if (!g.defined() || !(g.is_floating_point() || g.is_complex())) continue;
        at::Generator gen =
            at::detail::createCPUGenerator(options_.noise_seed * 1000003 + seq_ * 131 + i);
        at::Tensor sign =
            at::bernoulli(at::full(g.sizes(), 0.5, at::TensorOptions().dtype(at::kDouble)), gen)
                .mul_(2)
                .sub_(1);
        if (options_.mirror) sign.neg_();
        const at::Tensor factor = sign.mul_(options_.noise_eps).add_(1).to(g.device());
        g = g * factor.to(g.is_complex() ? c10::toRealValueType(g.scalar_type())
                                         : g.scalar_type());
      }
    }
    if (options_.record) {
      BackwardStep step{seq_, name_, {}};
      for (const at::Tensor& g : moved) {
        step.outputs.push_back(g.defined() ? g.detach().to(at::kCPU).clone() : at::Tensor());
      }
      steps_->push_back(std::move(step));
    }
    return moved;
  }

 private:
  std::shared_ptr<std::vector<BackwardStep>> steps_;
  uint64_t seq_;
  std::string name_;
  BackwardProbeOptions options_;
};

}  // namespace

BackwardProbe::BackwardProbe(const std::vector<torch::autograd::Node*>& nodes, uint64_t first_seq,
                             const BackwardProbeOptions& options)
    : steps_(std::make_shared<std::vector<BackwardStep>>()) {
  for (torch::autograd::Node* fn : nodes) {
    fn->add_post_hook(
        std::make_unique<Hook>(steps_, fn->sequence_nr() - first_seq, fn->name(), options));
  }
}

}  // namespace divfuzz::exec
