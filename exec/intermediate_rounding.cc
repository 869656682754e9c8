#include "exec/intermediate_rounding.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <set>
#include <string>

#include "exec/backward_nodes.h"
#include "exec/overflow_recorder.h"

namespace divfuzz::exec {
namespace {

// One guard at a time per thread; the autograd engine's worker threads
// inherit the callback through the thread-local state, so the settings are
// process-wide and a guard holds them.
struct Settings {
  double eps = 0;
  double floor = 0;
  uint64_t seed = 0;
  bool mirror = false;
  int64_t calls = 0, moved = 0;
  std::optional<at::ScalarType> grid;
};
std::mutex g_mu;
constexpr double kSentinel = 1e300;
Settings* g_settings = nullptr;

// Calls that round nothing of a formula's own: exec/overflow_recorder.h's
// incidental ones, and those exact in any dtype.
bool RoundsNothing(const c10::OperatorName& op) {
  static const std::set<std::string> kExact = {
      "aten::ones", "aten::full", "aten::full_like", "aten::sign", "aten::sgn", "aten::neg",
      "aten::abs", "aten::where", "aten::masked_fill", "aten::sum_to_size"};
  return IncidentalOp(op) || kExact.count(op.name) > 0;
}

struct Context : at::ObserverContext {
  std::vector<at::Tensor> inputs;  // to tell an output that aliases one
};

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  if (std::unique_ptr<at::ObserverContext> node = EnterIfBackwardNode(fn)) return node;
  if (!InsideBackwardNode() || !fn.operator_name() || RoundsNothing(*fn.operator_name())) {
    return nullptr;
  }
  auto c = std::make_unique<Context>();
  for (const c10::IValue& v : fn.inputs()) {
    if (v.isTensor() && v.toTensor().defined()) c->inputs.push_back(v.toTensor());
  }
  return c;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  if (ctx == nullptr || LeaveIfBackwardNode(ctx)) return;
  auto* c = static_cast<Context*>(ctx);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_settings == nullptr) return;
  at::DisableRecordFunctionGuard off;
  at::NoGradGuard no_grad;
  for (const c10::IValue& v : fn.outputs()) {
    if (!v.isTensor()) continue;
    const at::Tensor& t = v.toTensor();
    if (!t.defined() || t.scalar_type() != at::kDouble || t.numel() == 0 || t.is_view()) continue;
    bool aliases = false;
    for (const at::Tensor& in : c->inputs) {
      if (in.has_storage() && t.has_storage() && in.storage().is_alias_of(t.storage())) {
        aliases = true;
      }
    }
    if (aliases) continue;
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(
        g_settings->seed * 1000003 + static_cast<uint64_t>(g_settings->calls++));
    at::Tensor sign = at::randint(0, 2, t.sizes(), gen, at::kDouble).mul_(2).sub_(1);
    if (g_settings->mirror) sign.neg_();
    // variable_data(): the same storage under a fresh version counter, so a
    // node that saved this output reads the moved values without an
    // in-place modification error.
    at::Tensor data = t.variable_data();
    at::Tensor factor = (sign.to(data.device()) * g_settings->eps).add_(1);
    // A value past every narrower dtype's range is a formula's sentinel
    // (logcumsumexp_backward's log of a zero gradient, the dtype's lowest):
    // the dtype's own run holds its sentinel exactly, since anything added
    // to it is absorbed, and a relative move of 1e301 in an exponent would
    // make or remove whole terms (session 43's 7d9a4e69).
    factor.masked_fill_(data.abs() >= kSentinel, 1.0);
    at::Tensor moves = data.ne(0);
    if (g_settings->grid) {
      const at::Tensor exact = data.to(*g_settings->grid).to(data.scalar_type()).eq(data);
      factor.masked_fill_(exact, 1.0);
      moves = moves & exact.logical_not();
    }
    if (g_settings->floor > 0) {
      // Where eps of the value is less than the floor, the move is the floor.
      const at::Tensor small = (data.abs() * g_settings->eps < g_settings->floor) & moves;
      if (small.any().item<bool>()) {
        const at::Tensor step = sign.to(data.device()) * g_settings->floor;
        data.copy_(at::where(small, data + step, data * factor));
        ++g_settings->moved;
        continue;
      }
    }
    data.mul_(factor);
    ++g_settings->moved;
  }
}

}  // namespace

IntermediateRounding::IntermediateRounding(double eps, uint64_t seed, bool mirror, double floor,
                                           std::optional<at::ScalarType> grid) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_settings = new Settings{eps, floor, seed, mirror, 0, 0, grid};
  }
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&OnStart, &OnEnd).needsInputs(true).needsOutputs(true));
}

IntermediateRounding::~IntermediateRounding() {
  at::removeCallback(handle_);
  std::lock_guard<std::mutex> lock(g_mu);
  delete g_settings;
  g_settings = nullptr;
}

int64_t IntermediateRounding::moved() const {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_settings ? g_settings->moved : 0;
}

}  // namespace divfuzz::exec
