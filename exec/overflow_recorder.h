// The ATen calls a computation makes, in order, each with its floating
// outputs, so that a run in a dtype can be set beside the same computation in
// float64: an op whose finite inputs give a non-finite output is an
// intermediate past the dtype's range (PyTorch's numerical-accuracy notes,
// "Extremal values") only where the float64 run's same op is past that range
// too; otherwise the op overflowed early (the CPU's cosh at 89 in float32) or
// its inputs were already wrong (log_ndtr's backward, exp of a cancelled
// exponent). It observes through libtorch's RecordFunction callbacks, the
// profiler's own hook, on the recorder's thread and on the autograd engine's
// threads that inherit its thread-local state.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "graph/dtype.h"

namespace divfuzz::exec {

// Calls that convert, allocate or alias: present in one run and not the
// other (a cast to the dtype a value already has dispatches nothing), and
// none of them rounds a value.
bool IncidentalOp(const c10::OperatorName& op);

struct OpCall {
  c10::OperatorName op{"", ""};
  std::optional<at::ScalarType> input_dtype;  // its floating inputs' dtype; none when mixed
  bool inputs_finite = true;
  std::vector<at::Tensor> outputs;  // its floating tensor outputs, copied
  // Its floating tensor inputs' largest magnitude and smallest nonzero one.
  double input_max = 0, input_min = std::numeric_limits<double>::infinity();
  // Where every floating input has the output's element count or one
  // element: whether the inputs are finite, element by element (a NaN at
  // another element says nothing of this one's); undefined otherwise.
  at::Tensor finite_at;
  // Likewise, each element's largest finite operand magnitude and smallest
  // nonzero one (float64; 0 and inf where none): an operand at a far end of
  // the range is judged at the element, not anywhere in the tensor.
  at::Tensor max_at, min_at;
  // Finite inputs (at `where`'s elements, where given and finite_at allows),
  // a non-finite output of the inputs' dtype (a cast is not).
  bool Overflows(const at::Tensor& where = at::Tensor()) const;
  bool InputsFinite(const at::Tensor& where = at::Tensor()) const;
};

class OpRecorder {
 public:
  // Records from now until destruction; stops recording (Complete() false)
  // past `limit` calls or `max_elements` copied elements.
  explicit OpRecorder(size_t limit = 4096, int64_t max_elements = 1 << 22);
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;

  std::vector<OpCall> Calls() const;
  bool Complete() const;

  struct Sink {
    std::mutex mu;
    std::vector<OpCall> calls;
    size_t limit = 0;
    int64_t max_elements = 0, elements = 0;
    bool overflowed = false;
  };

 private:
  std::shared_ptr<Sink> sink_;
  at::CallbackHandle handle_ = 0;
};

// An operand at a far end of `dtype`'s range: where a product, quotient or
// power of it can leave the range though the formula is a stable one. In
// float32 and bf16 |v| >= sqrt(max) or, nonzero, <= 1/sqrt(max) (overflow)
// and <= sqrt(smallest normal) (underflow). f16's range is narrow enough
// that ordinary values square past it (2000: pytorch#193040 calls an f16
// formula that does so a bug; session 50's judges), so there: within 16x of
// its largest value, or subnormal (overflow), and below 16x its smallest
// normal (underflow).
struct FarEnds {
  double big = 0, small = 0, tiny = 0;  // overflow: >= big or <= small; underflow: <= tiny
};
FarEnds FarEndsOf(graph::DType dtype);

// The first call of `run` (in `dtype`) that overflows where the same call
// of `wide` (the same computation in float64, aligned call by call: the
// same ops in the same order) is finite and past the dtype's largest finite
// value at every element where `run`'s output is not: its op's name;
// "" when none is, or the runs do not align. Only an op with an operand at
// a far end of the range (FarEndsOf) is such an intermediate: exp of an
// ordinary 98.9 in float32 is a formula that forms what a stable one would
// not (soft_margin_loss's backward, session 50's judges). With `where` (a
// mask over the result the calls lead to), an output of that many elements
// is judged at those elements only (an elementwise formula: a pole at
// another element, pow(0, -1), is not this element's overflow), and must
// overflow there; its inputs need be finite there only.
std::string OverflowPastTheRange(const std::vector<OpCall>& run, const std::vector<OpCall>& wide,
                                 graph::DType dtype, const at::Tensor& where = at::Tensor());

// The first call of `run` with finite inputs (at `where`) and an output of
// their dtype whose same call in `wide` is nonzero and below the dtype's
// smallest normal at an element of `where` (an output of that many
// elements: an elementwise formula), where `run`'s output is off it by more
// than eps relatively (flushed to 0, or a subnormal's few bits), with an
// operand at the small end of the range (FarEndsOf's tiny: a product or
// quotient needs one to fall below it): its op's name; "" when none is, or
// the runs do not align. atan2's backward squares a y of 1e-36 to 0 in
// float32 and masks the zero denominator to a 0 gradient.
std::string UnderflowBelowTheRange(const std::vector<OpCall>& run,
                                   const std::vector<OpCall>& wide, graph::DType dtype,
                                   const at::Tensor& where);

}  // namespace divfuzz::exec
