// gradient_attention_key_order: scaled_dot_product_attention is the same
// function of its keys in any order (permute k's and v's rows, and a mask's
// columns, alike: the output does not change; k's and v's gradients permute
// with them). Its backward sums over the keys (dP·1, Pᵀ·dO, P∘(dP - D)), and
// where those sums cancel (v constant in a row: the output is constant, its
// gradient exactly 0) what is left is the order's rounding. Each side's
// gradient, first order or the double backward inside a later statement, must
// lie within the range the CPU's own kernel gives in the dtype over eight
// orders of the keys from that side's inputs: PyTorch's numerical-accuracy
// notes, "floating point addition and multiplication are not associative, so
// the order of the operations affects the results". Session 38's judges: f32
// double backwards of 1.9e-5 and 2.8e-5 where the exact gradient is 0, the
// CPU's reorderings spanning 0 to 3.8e-5. A causal mask fixes the order, so
// it is left out.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "exec/executor.h"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "oracles/rules/gradient_rule.h"

namespace divfuzz::oracles::rules {
namespace {

constexpr int kOrders = 8;

// Which dim of a value runs over the keys: -2 for k and v, -1 for a mask; 0
// where it does not (q, the incoming gradient of the output).
struct Keyed {
  std::map<std::string, int64_t> dim;  // value name -> dim over the keys
  int64_t keys = 0;
};

at::Tensor Permuted(const at::Tensor& t, int64_t dim, const at::Tensor& perm, int64_t keys) {
  if (!t.defined() || t.dim() < -dim || t.size(dim) != keys) return t;
  return t.index_select(t.dim() + dim, perm);
}

}  // namespace

std::optional<RuleMatch> gradient_attention_key_order(const GradientContext& c) {
  if (c.d.cls != DivergenceClass::kTolerance || c.accumulation) return std::nullopt;
  const graph::Node* inner = exec::VjpInner(c.node);
  const graph::Node& sdpa = inner != nullptr ? *inner : c.node;
  const ops::OpSpec* spec = ops::FindOp(sdpa.QualifiedName());
  if (spec == nullptr || !(spec->cuda_kernels & ops::kCudaAttention)) return std::nullopt;
  const graph::Literal* causal = ops::FindArg(sdpa, 5, "is_causal");
  if (causal != nullptr && causal->kind == graph::Literal::Kind::kBool && causal->b) {
    return std::nullopt;
  }
  const std::vector<std::string> uses = OperandNames(sdpa);
  if (uses.size() < 3) return std::nullopt;
  // Self-attention (one value as q and k): reordering the keys reorders the
  // queries too, which is another function.
  if (uses[0] == uses[1] || uses[0] == uses[2]) return std::nullopt;
  Keyed keyed;
  keyed.dim[uses[1]] = -2;
  keyed.dim[uses[2]] = -2;
  if (uses.size() > 3) keyed.dim[uses[3]] = -1;
  // A step inside a later statement: its results are the gradients of
  // sdpa's floating inputs in order, and each one's incoming gradient is
  // keyed as that input is.
  std::vector<int64_t> incoming_dim;
  if (inner != nullptr) {
    for (const std::string& x : uses) {
      auto t = c.types.find(x);
      if (t == c.types.end() ||
          !(graph::IsFloating(t->second.dtype) || graph::IsComplex(t->second.dtype))) {
        continue;
      }
      auto k = keyed.dim.find(x);
      incoming_dim.push_back(k == keyed.dim.end() ? 0 : k->second);
    }
  }
  auto kd = keyed.dim.find(c.wrt);
  const int64_t out_dim = kd == keyed.dim.end() ? 0 : kd->second;
  double widest = 0;
  for (const GradientSide* s : {&c.a, &c.b}) {
    auto k = s->inputs.find(uses[1]);
    if (k == s->inputs.end() || !k->second.defined() || k->second.dim() < 2 ||
        !s->outgoing.defined() || s->outgoing.is_complex()) {
      return std::nullopt;
    }
    const int64_t keys = k->second.size(-2);
    if (keys < 2) return std::nullopt;
    const at::Tensor mine = s->outgoing.to(at::kDouble);
    at::Tensor lo, hi;
    for (int order = 0; order < kOrders; ++order) {
      at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(7919 + order);
      // The run's own order, its reverse, then random ones.
      const at::Tensor perm = order == 0   ? at::arange(keys, at::kLong)
                              : order == 1 ? at::arange(keys - 1, -1, -1, at::kLong)
                                           : at::randperm(keys, gen, at::kLong);
      std::map<std::string, at::Tensor> inputs = s->inputs;
      for (auto& [name, t] : inputs) {
        auto it = keyed.dim.find(name);
        if (it != keyed.dim.end()) t = Permuted(t, it->second, perm, keys);
      }
      std::vector<at::Tensor> incoming = s->incoming;
      for (size_t j = 0; j < incoming.size() && j < incoming_dim.size(); ++j) {
        if (incoming_dim[j] != 0) incoming[j] = Permuted(incoming[j], incoming_dim[j], perm, keys);
      }
      exec::VjpResult r =
          exec::RunNodeVjp(c.node, inputs, incoming, c.types, exec::Target::kCpu, false, nullptr,
                           nullptr, false);
      if (r.result.error || c.out >= r.result.outputs.size()) return std::nullopt;
      at::Tensor g = r.result.outputs[c.out].to(at::kDouble);
      // Back into the run's order of the keys.
      if (out_dim != 0 && g.dim() >= -out_dim && g.size(out_dim) == keys) {
        g = g.index_select(g.dim() + out_dim, at::argsort(perm));
      }
      if (g.sizes() != mine.sizes()) return std::nullopt;
      lo = lo.defined() ? at::fmin(lo, g) : g;
      hi = hi.defined() ? at::fmax(hi, g) : g;
    }
    const double atol = c.policy.For(sdpa.QualifiedName(), c.dtype).atol;
    const at::Tensor ok = ((mine >= lo - atol) & (mine <= hi + atol)) | at::isfinite(mine).logical_not();
    if (!ok.all().item<bool>()) return std::nullopt;
    widest = std::max(widest, (hi - lo).masked_select(at::isfinite(hi - lo)).max().item<double>());
  }
  return RuleMatch{"gradient_attention_key_order",
                   absl::StrCat("each side's ", inner != nullptr ? "double backward" : "backward",
                                " of ", sdpa.QualifiedName(), " lies within the range the CPU's "
                                "kernel gives in ", std::string(graph::DTypeName(c.dtype)),
                                " over ", kOrders, " orders of the keys (the same function; at "
                                "most ", widest, " apart, plus atol): the order of its sums "
                                "over the keys, which floating point does not make associative")};
}

}  // namespace divfuzz::oracles::rules
