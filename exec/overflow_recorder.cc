#include "exec/overflow_recorder.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <limits>

namespace divfuzz::exec {
namespace {

// The recorder whose callbacks are live: callbacks are plain function
// pointers, so they reach it through this (one recorder at a time).
std::mutex g_mu;
std::shared_ptr<OverflowRecorder::Sink> g_sink;

bool Floating(const at::Tensor& t) {
  return t.defined() && (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()));
}

bool AllFinite(const at::Tensor& t) {
  return t.numel() == 0 || at::isfinite(t).all().item<bool>();
}

struct Context : at::ObserverContext {
  std::vector<c10::IValue> inputs;
  bool finite = true;
};

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  if (!fn.operator_name()) return nullptr;
  at::DisableRecordFunctionGuard off;  // our own copies are not observed
  auto c = std::make_unique<Context>();
  for (const c10::IValue& v : fn.inputs()) {
    if (v.isTensor() && Floating(v.toTensor())) {
      const at::Tensor& t = v.toTensor();
      if (!AllFinite(t)) c->finite = false;
      c->inputs.emplace_back(t.clone());
    } else {
      c->inputs.push_back(v);
    }
  }
  return c;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  auto* c = static_cast<Context*>(ctx);
  if (c == nullptr || !c->finite) return;
  at::DisableRecordFunctionGuard off;
  std::vector<at::Tensor> outs;
  bool overflow = false;
  for (const c10::IValue& v : fn.outputs()) {
    if (!v.isTensor() || !Floating(v.toTensor())) continue;
    outs.push_back(v.toTensor().clone());
    if (!AllFinite(v.toTensor())) overflow = true;
  }
  if (!overflow) return;
  std::shared_ptr<OverflowRecorder::Sink> sink;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    sink = g_sink;
  }
  if (!sink) return;
  std::lock_guard<std::mutex> lock(sink->mu);
  if (sink->events.size() >= sink->limit) return;
  sink->events.push_back({*fn.operator_name(), std::move(c->inputs), std::move(outs)});
}

}  // namespace

OverflowRecorder::OverflowRecorder(size_t limit) : sink_(std::make_shared<Sink>()) {
  sink_->limit = limit;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_sink = sink_;
  }
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&OnStart, &OnEnd).needsInputs(true).needsOutputs(true));
}

OverflowRecorder::~OverflowRecorder() {
  at::removeCallback(handle_);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sink == sink_) g_sink.reset();
}

std::vector<OverflowEvent> OverflowRecorder::Events() const {
  std::lock_guard<std::mutex> lock(sink_->mu);
  return sink_->events;
}

std::optional<std::vector<at::Tensor>> RerunInFloat64(const OverflowEvent& e) {
  try {
    std::optional<c10::OperatorHandle> op =
        c10::Dispatcher::singleton().findSchema(e.op);
    if (!op) return std::nullopt;
    at::DisableRecordFunctionGuard off;
    torch::jit::Stack stack;
    for (const c10::IValue& v : e.inputs) {
      if (v.isTensor() && Floating(v.toTensor())) {
        const at::Tensor& t = v.toTensor();
        stack.emplace_back(t.is_complex() ? t.to(at::kComplexDouble) : t.to(at::kDouble));
      } else {
        stack.push_back(v);
      }
    }
    op->callBoxed(&stack);
    std::vector<at::Tensor> outs;
    for (const c10::IValue& v : stack) {
      if (v.isTensor() && Floating(v.toTensor())) outs.push_back(v.toTensor());
    }
    return outs;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool PastTheRange(const OverflowEvent& e) {
  std::optional<at::ScalarType> in;  // the inputs' floating dtype
  for (const c10::IValue& v : e.inputs) {
    if (!v.isTensor() || !Floating(v.toTensor())) continue;
    if (in && *in != v.toTensor().scalar_type()) return false;
    in = v.toTensor().scalar_type();
  }
  if (!in || at::isComplexType(*in)) return false;
  for (const at::Tensor& o : e.outputs) {
    if (o.scalar_type() != *in) return false;  // a narrowing (or widening) cast
  }
  const std::optional<std::vector<at::Tensor>> wide = RerunInFloat64(e);
  if (!wide || wide->size() != e.outputs.size()) return false;
  double largest = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, *in, "largest", [&] {
    largest = static_cast<double>(std::numeric_limits<scalar_t>::max());
  });
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    const at::Tensor mine = e.outputs[i], w = (*wide)[i];
    if (w.sizes() != mine.sizes()) return false;
    const at::Tensor off = at::isfinite(mine).logical_not();
    const at::Tensor past = (w.abs() > largest) | at::isfinite(w).logical_not();
    if (!(past | off.logical_not()).all().item<bool>()) return false;
  }
  return true;
}

}  // namespace divfuzz::exec
