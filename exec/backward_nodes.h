#pragma once
// The ATen ops an observer sees inside autograd's backward nodes only: a
// RecordFunction call of scope BACKWARD_FUNCTION (a node such as
// SinhBackward0) enters one, its end leaves it, per thread. The forward that
// builds the graph, and the executor's own conversions around it, differ
// between a dtype's run and float64's; the ops a backward node calls do not.
// Shared by the observers of exec/overflow_recorder.h and
// exec/intermediate_rounding.h.
#include <ATen/record_function.h>

#include <memory>

namespace divfuzz::exec {

// At a call's start: for a backward node, enters it and returns the context
// its end hands to LeaveIfBackwardNode; nullptr for any other call.
std::unique_ptr<at::ObserverContext> EnterIfBackwardNode(const at::RecordFunction& fn);

// Whether this thread is inside a backward node now.
bool InsideBackwardNode();

// At a call's end: true (and left) where `ctx` is a backward node's, from
// EnterIfBackwardNode.
bool LeaveIfBackwardNode(at::ObserverContext* ctx);

}  // namespace divfuzz::exec
