// The ATen calls that overflow while a computation runs: each dispatcher op
// whose floating tensor inputs are all finite and one of whose floating
// outputs is not, kept with copies of its inputs, so that the op can be run
// again in float64 to tell an intermediate past its dtype's range (PyTorch's
// numerical-accuracy notes, "Extremal values") from a kernel that overflows
// early (the CPU's cosh at 89 in float32). It observes through libtorch's
// RecordFunction callbacks, the profiler's own hook, on the recorder's thread
// and on the autograd engine's threads that inherit its thread-local state.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace divfuzz::exec {

struct OverflowEvent {
  c10::OperatorName op;
  std::vector<c10::IValue> inputs;  // copies taken before the call (in-place ops change them)
  std::vector<at::Tensor> outputs;  // its floating tensor outputs
};

class OverflowRecorder {
 public:
  // Records from now until destruction (at most `limit` events).
  explicit OverflowRecorder(size_t limit = 64);
  ~OverflowRecorder();
  OverflowRecorder(const OverflowRecorder&) = delete;
  OverflowRecorder& operator=(const OverflowRecorder&) = delete;

  std::vector<OverflowEvent> Events() const;

  struct Sink {
    std::mutex mu;
    std::vector<OverflowEvent> events;
    size_t limit = 0;
  };

 private:
  std::shared_ptr<Sink> sink_;
  at::CallbackHandle handle_ = 0;
};

// The event's op run again on its inputs with every floating tensor (and
// floating scalar) as float64: its floating outputs, or nullopt when the op
// will not run so (a dtype argument, an op without a float64 kernel).
std::optional<std::vector<at::Tensor>> RerunInFloat64(const OverflowEvent& e);

// Whether the event is an intermediate past its dtype's range: an op that
// keeps its inputs' floating dtype (a narrowing cast is not one: session
// 38's CPU batch_norm f16 casting a float sum to Half was judged a bug),
// whose float64 rerun is past that dtype's largest finite value, or not
// finite, at every element where its output is not finite.
bool PastTheRange(const OverflowEvent& e);

}  // namespace divfuzz::exec
