// The child protocol of `divfuzz locate` and `divfuzz isolated` names each
// node before it runs ("RUN target node op"); a crash inside a gradient
// statement then names autograd::grad, not the backward kernel that died
// (session 38: CPU group_norm's null-dX segfault, two buckets named
// autograd::grad). While alive, this prints "BACKWARD target node Name" before
// each autograd backward node runs (NativeGroupNormBackward0), through
// libtorch's RecordFunction observer for the BACKWARD_FUNCTION scope, on
// whichever thread the engine runs it.
#pragma once

#include <ATen/record_function.h>

#include <string>

namespace divfuzz::fuzz {

class BackwardAnnouncer {
 public:
  BackwardAnnouncer();
  ~BackwardAnnouncer();
  BackwardAnnouncer(const BackwardAnnouncer&) = delete;
  BackwardAnnouncer& operator=(const BackwardAnnouncer&) = delete;

  // The target and program node the lines name from now on.
  static void At(const std::string& target, int node);

 private:
  at::CallbackHandle handle_ = 0;
};

}  // namespace divfuzz::fuzz
