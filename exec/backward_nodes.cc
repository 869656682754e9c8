#include "exec/backward_nodes.h"

namespace divfuzz::exec {
namespace {

thread_local int t_backward_depth = 0;

struct BackwardNodeContext : at::ObserverContext {};

}  // namespace

std::unique_ptr<at::ObserverContext> EnterIfBackwardNode(const at::RecordFunction& fn) {
  if (fn.scope() != at::RecordScope::BACKWARD_FUNCTION) return nullptr;
  ++t_backward_depth;
  return std::make_unique<BackwardNodeContext>();
}

bool InsideBackwardNode() { return t_backward_depth > 0; }

bool LeaveIfBackwardNode(at::ObserverContext* ctx) {
  if (dynamic_cast<BackwardNodeContext*>(ctx) == nullptr) return false;
  --t_backward_depth;
  return true;
}

}  // namespace divfuzz::exec
