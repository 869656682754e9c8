#include "exec/overflow_recorder.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "exec/backward_nodes.h"

namespace divfuzz::exec {
namespace {

// The recorder whose callbacks are live: callbacks are plain function
// pointers, so they reach it through this (one recorder at a time).
std::mutex g_mu;
std::shared_ptr<OpRecorder::Sink> g_sink;

bool Floating(const at::Tensor& t) {
  return t.defined() && (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()));
}

bool AllFinite(const at::Tensor& t) {
  return t.numel() == 0 || at::isfinite(t).all().item<bool>();
}

struct Context : at::ObserverContext {
  std::optional<at::ScalarType> dtype;
  bool mixed = false;
  bool finite = true;
  at::Tensor finite_at;  // per element, over the inputs of the largest element count
  at::Tensor max_at, min_at;  // per element: largest finite |v|, smallest nonzero finite |v|
  bool aligned = true;   // every floating input has that count or one element
  double max = 0, min = std::numeric_limits<double>::infinity();
};

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  if (std::unique_ptr<at::ObserverContext> node = EnterIfBackwardNode(fn)) return node;
  if (!InsideBackwardNode() || !fn.operator_name() || IncidentalOp(*fn.operator_name())) {
    return nullptr;
  }
  at::DisableRecordFunctionGuard off;  // our own checks are not observed
  auto c = std::make_unique<Context>();
  // Before the call: an in-place op changes its inputs.
  // A 0-dim operand of another floating dtype does not take part in type
  // promotion (an f32 0-dim times f16 gives f16): the op computes in its
  // other operands' dtype (session 50's SmoothL1LossBackwardBackward0).
  std::optional<at::ScalarType> zero_dim;
  double scalar_max = 0, scalar_min = std::numeric_limits<double>::infinity();
  for (const c10::IValue& v : fn.inputs()) {
    if (!v.isTensor() || !Floating(v.toTensor())) continue;
    const at::Tensor& t = v.toTensor();
    if (t.dim() == 0) {
      if (zero_dim && *zero_dim != t.scalar_type()) c->mixed = true;
      zero_dim = t.scalar_type();
    } else {
      if (c->dtype && *c->dtype != t.scalar_type()) c->mixed = true;
      c->dtype = t.scalar_type();
    }
    if (!AllFinite(t)) c->finite = false;
    if (t.numel() > 1 && c->aligned && !t.is_complex()) {
      const at::Tensor here = at::isfinite(t).reshape(-1);
      const at::Tensor a = t.abs().to(at::kDouble).reshape(-1);
      const at::Tensor big = at::where(here, a, at::zeros_like(a));
      const at::Tensor small =
          at::where(here & a.ne(0), a, at::full_like(a, std::numeric_limits<double>::infinity()));
      if (!c->finite_at.defined()) {
        c->finite_at = here.clone();
        c->max_at = big;
        c->min_at = small;
      } else if (c->finite_at.numel() == here.numel()) {
        c->finite_at &= here;
        c->max_at = at::fmax(c->max_at, big);
        c->min_at = at::fmin(c->min_at, small);
      } else {
        c->aligned = false;
      }
    } else if (t.numel() == 1 && !AllFinite(t)) {
      c->aligned = false;  // a non-finite scalar reaches every element
    } else if (t.numel() == 1 && !t.is_complex()) {
      // A one-element operand meets every element.
      const double v = std::abs(t.to(at::kDouble).item<double>());
      scalar_max = std::max(scalar_max, v);
      if (v != 0) scalar_min = std::min(scalar_min, v);
    }
    if (t.numel() > 0 && !t.is_complex()) {
      // Over the finite values: an inf elsewhere is no operand of this size.
      const at::Tensor all = t.abs().to(at::kDouble);
      const at::Tensor a = all.masked_select(at::isfinite(all));
      if (a.numel() > 0) c->max = std::max(c->max, a.max().item<double>());
      const at::Tensor nonzero = a.masked_select(a.ne(0));
      if (nonzero.numel() > 0) c->min = std::min(c->min, nonzero.min().item<double>());
    }
  }
  if (!c->dtype) c->dtype = zero_dim;  // all 0-dim: they promote among themselves
  if (c->max_at.defined()) {
    c->max_at = at::clamp_min(c->max_at, scalar_max);
    c->min_at = at::clamp_max(c->min_at, scalar_min);
  }
  return c;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  if (ctx == nullptr || LeaveIfBackwardNode(ctx)) return;
  auto* c = static_cast<Context*>(ctx);
  std::shared_ptr<OpRecorder::Sink> sink;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    sink = g_sink;
  }
  if (!sink) return;
  at::DisableRecordFunctionGuard off;
  OpCall call;
  call.op = *fn.operator_name();
  if (!c->mixed) call.input_dtype = c->dtype;
  call.inputs_finite = c->finite;
  if (c->aligned && c->finite_at.defined()) {
    call.finite_at = c->finite_at;
    call.max_at = c->max_at;
    call.min_at = c->min_at;
  }
  call.input_max = c->max;
  call.input_min = c->min;
  int64_t n = 0;
  for (const c10::IValue& v : fn.outputs()) {
    if (!v.isTensor() || !Floating(v.toTensor())) continue;
    call.outputs.push_back(v.toTensor().detach().clone().cpu());
    n += v.toTensor().numel();
  }
  std::lock_guard<std::mutex> lock(sink->mu);
  if (sink->overflowed) return;
  if (sink->calls.size() >= sink->limit || sink->elements + n > sink->max_elements) {
    sink->overflowed = true;
    return;
  }
  sink->elements += n;
  sink->calls.push_back(std::move(call));
}

}  // namespace

bool IncidentalOp(const c10::OperatorName& op) {
  static const std::set<std::string> kIncidental = {
      "aten::to", "aten::_to_copy", "aten::copy_", "aten::empty", "aten::empty_strided",
      "aten::empty_like", "aten::detach", "aten::clone", "aten::contiguous", "aten::lift_fresh",
      "aten::alias", "aten::resize_", "aten::zeros", "aten::zeros_like", "aten::ones_like",
      "aten::fill_", "aten::zero_", "aten::result_type", "aten::is_nonzero", "aten::item",
      "aten::_local_scalar_dense", "aten::view", "aten::reshape", "aten::_reshape_alias",
      "aten::expand", "aten::as_strided", "aten::unsqueeze", "aten::squeeze", "aten::t",
      "aten::transpose", "aten::permute", "aten::select", "aten::slice", "aten::_unsafe_view"};
  return kIncidental.count(op.name) > 0;
}

bool OpCall::InputsFinite(const at::Tensor& where) const {
  if (inputs_finite) return true;
  if (!where.defined() || !finite_at.defined() || finite_at.numel() != where.numel()) {
    return false;
  }
  return (finite_at | where.reshape(-1).to(at::kBool).logical_not()).all().item<bool>();
}

bool OpCall::Overflows(const at::Tensor& where) const {
  if (!InputsFinite(where) || !input_dtype || at::isComplexType(*input_dtype)) return false;
  bool any = false;
  for (const at::Tensor& o : outputs) {
    if (o.scalar_type() != *input_dtype) return false;  // a narrowing (or widening) cast
    if (!AllFinite(o)) any = true;
  }
  return any;
}

OpRecorder::OpRecorder(size_t limit, int64_t max_elements) : sink_(std::make_shared<Sink>()) {
  sink_->limit = limit;
  sink_->max_elements = max_elements;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_sink = sink_;
  }
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&OnStart, &OnEnd).needsInputs(true).needsOutputs(true));
}

OpRecorder::~OpRecorder() {
  at::removeCallback(handle_);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sink == sink_) g_sink.reset();
}

std::vector<OpCall> OpRecorder::Calls() const {
  std::lock_guard<std::mutex> lock(sink_->mu);
  return sink_->calls;
}

bool OpRecorder::Complete() const {
  std::lock_guard<std::mutex> lock(sink_->mu);
  return !sink_->overflowed;
}

FarEnds FarEndsOf(graph::DType dtype) {
  const double largest = graph::MaxFinite(dtype), smallest = graph::SmallestNormal(dtype);
  if (dtype == graph::DType::kF16) return {largest / 16, smallest, 16 * smallest};
  return {std::sqrt(largest), 1 / std::sqrt(largest), std::sqrt(smallest)};
}

std::string OverflowPastTheRange(const std::vector<OpCall>& run, const std::vector<OpCall>& wide,
                                 graph::DType dtype, const at::Tensor& where) {
  const double largest = graph::MaxFinite(dtype);
  const FarEnds ends = FarEndsOf(dtype);
  if (run.size() != wide.size()) return "";
  for (size_t i = 0; i < run.size(); ++i) {
    if (run[i].op != wide[i].op || run[i].outputs.size() != wide[i].outputs.size()) return "";
  }
  const bool elementwise = where.defined() && where.numel() > 1;
  at::Tensor covered;  // the judged elements an op's overflow explains
  std::string names;
  std::string whole;  // the first op past the range over a differently shaped output
  for (size_t i = 0; i < run.size(); ++i) {
    if (!run[i].Overflows(where)) continue;
    if (run[i].input_max < ends.big && run[i].input_min > ends.small) continue;
    bool past = true;
    bool shaped = false;  // an output shaped like `where`: judged element by element
    for (size_t j = 0; j < run[i].outputs.size() && past; ++j) {
      const at::Tensor &mine = run[i].outputs[j], &w = wide[i].outputs[j];
      if (mine.sizes() != w.sizes() || w.is_complex()) {
        past = false;
        break;
      }
      const at::Tensor wd = w.to(at::kDouble);
      const at::Tensor off = at::isfinite(mine).logical_not();
      // Finite past the range: an infinity in float64 too is a pole (log of
      // 0 in logcumsumexp's backward, session 35's real f16 bug) or a
      // domain edge, no magnitude that overflowed.
      // Nor is a value near float64's own limit: a mask's sentinel
      // (numeric_limits<scalar_t>::lowest(), -65504 in f16 and -1.8e308 in
      // float64, logcumsumexp's backward) that overflows in the dtype only
      // because the dtype's sentinel sits at its edge.
      const at::Tensor beyond = (wd.abs() > largest) & (wd.abs() < 1e300);
      if (elementwise && where.numel() == off.numel()) {
        shaped = true;
        at::Tensor here = where.reshape(-1).to(at::kBool) & off.reshape(-1);
        // An operand at a far end at this element, where known per element.
        const OpCall& call = run[i];
        if (call.max_at.defined() && call.max_at.numel() == here.numel()) {
          here &= (call.max_at >= ends.big) | (call.min_at <= ends.small);
        }
        past = here.any().item<bool>() &&
               (beyond.reshape(-1) | here.logical_not()).all().item<bool>();
        if (past) covered = covered.defined() ? covered | here : here;
        continue;
      }
      past = (beyond | off.logical_not()).all().item<bool>();
    }
    if (past) {
      const c10::OperatorName& op = run[i].op;
      const std::string name =
          op.overload_name.empty() ? op.name : absl::StrCat(op.name, ".", op.overload_name);
      if (!elementwise) return name;
      if (!shaped) {
        if (whole.empty()) whole = name;
      } else if (names.find(name) == std::string::npos) {
        absl::StrAppend(&names, names.empty() ? "" : ", ", name);
      }
    }
  }
  // Every judged element explained by some op's overflow; where no op's
  // output has the gradient's shape (a reduction's formula), the first op
  // past the range over its whole output, as without `where`.
  if (covered.defined()) {
    return (covered | where.reshape(-1).to(at::kBool).logical_not()).all().item<bool>() ? names
                                                                                       : "";
  }
  return whole;
}

std::string UnderflowBelowTheRange(const std::vector<OpCall>& run,
                                   const std::vector<OpCall>& wide, graph::DType dtype,
                                   const at::Tensor& where) {
  if (run.size() != wide.size() || !where.defined()) return "";
  const double smallest = graph::SmallestNormal(dtype), eps = graph::Epsilon(dtype);
  for (size_t i = 0; i < run.size(); ++i) {
    if (run[i].op != wide[i].op || run[i].outputs.size() != wide[i].outputs.size()) return "";
  }
  const double edge = FarEndsOf(dtype).tiny;
  const at::Tensor at = where.reshape(-1).to(at::kBool);
  at::Tensor covered = at::zeros_like(at);
  std::string names;
  for (size_t i = 0; i < run.size(); ++i) {
    const OpCall& call = run[i];
    if (!call.InputsFinite(where) || !call.input_dtype || at::isComplexType(*call.input_dtype) ||
        !(call.input_min <= edge)) {
      continue;
    }
    for (size_t j = 0; j < call.outputs.size(); ++j) {
      const at::Tensor& mine = call.outputs[j];
      const at::Tensor& w = wide[i].outputs[j];
      if (mine.scalar_type() != *call.input_dtype || mine.numel() != at.numel() ||
          w.numel() != at.numel() || w.is_complex()) {
        continue;
      }
      const at::Tensor wd = w.reshape(-1).to(at::kDouble);
      const at::Tensor md = mine.reshape(-1).to(at::kDouble);
      at::Tensor below = wd.ne(0) & (wd.abs() < smallest) & at::isfinite(md) &
                         ((md - wd).abs() > eps * wd.abs()) & at;
      // The tiny operand at this element (an output lost because its input
      // already was, 0 from an overflow upstream, is not this op's).
      if (call.min_at.defined() && call.min_at.numel() == below.numel()) {
        below &= call.min_at <= edge;
      }
      if (below.any().item<bool>()) {
        covered |= below;
        const c10::OperatorName& op = call.op;
        const std::string name =
            op.overload_name.empty() ? op.name : absl::StrCat(op.name, ".", op.overload_name);
        if (names.find(name) == std::string::npos) {
          absl::StrAppend(&names, names.empty() ? "" : ", ", name);
        }
      }
    }
  }
  // Every judged element explained by some op's underflow, or none is.
  return (covered | at.logical_not()).all().item<bool>() ? names : "";
}

}  // namespace divfuzz::exec

