// Attention-shaped calls of scaled_dot_product_attention: the learned generic
// forms give q, k and v one shape, tiny sequences and no masks, which never
// reach the flash, memory-efficient or cuDNN kernels' tiling (their bugs sit
// at sequence lengths around multiples of 64 and 128: pytorch#196678).
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "mutators/node_builder.h"
#include "ops/generic.h"
#include "ops/infer.h"

namespace divfuzz::mutators {
namespace {

using graph::DType;
using graph::Literal;
using Shape = std::vector<int64_t>;

// Sequence lengths: small, and one either side of the kernels' tile sizes.
const std::vector<int64_t> kSequences = {1, 2, 5, 8, 16, 31, 32, 33, 63, 64, 65, 127, 128, 129, 192};
const std::vector<int64_t> kHeadDims = {8, 16, 32, 64};

int64_t Numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

}  // namespace

bool NodeBuilder::AppendAttention(const ops::OpSpec& spec, DType dtype) {
  const graph::Program saved_program = program_;
  const ops::TypeEnv saved_types = types_;
  // Inputs up to 4x the usual cap: a 128-long sequence is the point.
  const int64_t cap = 4 * kMaxGeneratedNumel;
  const int64_t l = random_.Pick(kSequences);
  const int64_t s = random_.Chance(0.5) ? l : random_.Pick(kSequences);
  int64_t e = random_.Pick(kHeadDims);
  const int64_t ev = random_.Chance(0.8) ? e : random_.Pick(kHeadDims);
  const int64_t b = random_.Range(1, 2);
  const int64_t hkv = random_.Pick(std::vector<int64_t>{1, 2, 4});
  // Grouped-query attention: more query heads than key/value heads.
  const bool gqa = random_.Chance(0.15);
  const int64_t hq = gqa ? hkv * random_.Pick(std::vector<int64_t>{2, 4}) : hkv;
  const bool batched = random_.Chance(0.85);
  auto shape = [&](int64_t heads, int64_t seq, int64_t dim) {
    return batched ? Shape{b, heads, seq, dim} : Shape{heads, seq, dim};
  };
  Shape q = shape(hq, l, e), k = shape(hkv, s, e), v = shape(hkv, s, ev);
  while ((Numel(q) > cap || Numel(k) > cap || Numel(v) > cap) && e > 8) {
    e /= 2;
    q = shape(hq, l, e);
    k = shape(hkv, s, e);
    v = shape(hkv, s, std::min(ev, e));
  }
  if (Numel(q) > cap || Numel(k) > cap || Numel(v) > cap) return false;
  // Scores of unit-variance inputs grow with sqrt(e): keep them so, mostly.
  auto input = [&](const Shape& shape, DType d) {
    const std::string name = NewInput({d, shape}, ops::Domain::kAny);
    if (d == dtype && random_.Chance(0.7)) {
      graph::Payload& p = program_.inputs.back().payload;
      p.kind = graph::Payload::Kind::kNormal;
      p.a = 0;
      p.b = 1;
    }
    return name;
  };
  graph::Node node;
  node.op = "aten::scaled_dot_product_attention";
  node.args.push_back({"", Literal::Value(input(q, dtype))});
  node.args.push_back({"", Literal::Value(input(k, dtype))});
  node.args.push_back({"", Literal::Value(input(v, dtype))});
  // Mask: none, boolean (True keeps a score) or additive, [L, S] or per head.
  const double m = random_.Uniform(0, 1);
  const bool causal = m < 0.25;  // PyTorch refuses a mask with is_causal
  Literal mask = Literal::None();
  if (m >= 0.45) {
    const DType md = m < 0.7 ? DType::kBool : dtype;
    const Shape ms = random_.Chance(0.5) ? Shape{l, s} : shape(batched ? 1 : hq, l, s);
    if (Numel(ms) > cap) return (program_ = saved_program, types_ = saved_types, false);
    mask = Literal::Value(input(ms, md));
  }
  node.args.push_back({"", mask});
  node.args.push_back({"", Literal::Float(0.0)});  // dropout: random on each side
  node.args.push_back({"", Literal::Bool(causal)});
  if (random_.Chance(0.2)) node.args.push_back({"scale", Literal::Float(random_.Uniform(0.05, 2))});
  if (gqa) node.args.push_back({"enable_gqa", Literal::Bool(true)});
  absl::StatusOr<std::vector<graph::TensorType>> out = ops::InferGeneric(node, types_);
  if (!out.ok() || out->size() != 1) {
    program_ = saved_program;
    types_ = saved_types;
    return false;
  }
  (void)spec;
  node.results.push_back(FreshName("v"));
  types_[node.results.back()] = out->front();
  program_.nodes.push_back(std::move(node));
  return true;
}

}  // namespace divfuzz::mutators
