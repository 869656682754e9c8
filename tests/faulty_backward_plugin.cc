// A deliberately faulty plugin (loaded with --plugins): it replaces the CPU
// kernel of aten::threshold_backward, relu's backward kernel (ReluBackward0),
// with one that has two faults in float32, one of each kind the oracle must
// tell apart:
//   - where relu's result is 0 it passes the gradient through: at the kink
//     (x == 0)
//     subgradient 1 where PyTorch chooses 0, a valid choice
//     (nondifferentiable_point), but for x < 0 a wrong one;
//   - where self is exactly 3 it doubles the gradient: a wrong backward.
// Other dtypes, and float64 (the reference), are computed correctly.
// It also replaces aten::sigmoid_backward (SigmoidBackward0) with one that is
// 1% high in float64 only: the float64 reference shares the fault and blames
// the correct float32 side, which only the exact derivative can tell. Under
// ATen's scalar kernels (ATEN_CPU_CAPABILITY=default: the cpu-scalar target)
// it is 5% high in float64 and 3% in float32, a kernel whose scalar path
// alone is wrong.
// And aten::tanh_backward (TanhBackward0), which in float32 doubles the
// gradient on its first call in a process and then raises a CUDA fault's
// message on every later one: the oracle's rerun of that backward meets "the
// CUDA context" failing, as a CUDA side's rerun can on a GPU host.
// And aten::hardswish_backward (HardswishBackward0), which raises PyTorch's
// dispatch message for bfloat16, as a derivative with no kernel for a dtype
// does (i1_backward's for bf16): a one-sided dtype gap inside a backward;
// and in float32 doubles the gradient where self is channels_last, as a
// kernel whose path follows the layout can be wrong in one layout only
// (pytorch#195075: hardswish_backward's vector lanes and scalar tail).
// And aten::hardsigmoid_backward (HardsigmoidBackward0), which in float32
// raises a CUDA runtime error's message for an empty input, as CUDA's
// group_norm backward launches a kernel with no blocks (session 40's G6:
// "CUDA error: invalid argument" where the answer, an empty gradient, is
// fixed by the shape). In float32 it views a 2-d gradient that is not
// contiguous, and so raises view()'s layout message, as CUDA's
// ChannelShuffleBackward0 (its math path) does for a transposed gradient
// (session 47, judged real); and for a 3-d one it raises the CPU's max_pool3d
// backward's "Unsupported memory format" (session 49, judged real).
// And aten::_softmax_backward_data (SoftmaxBackward0), which in float32 is
// 1.5x high where an incoming gradient exceeds 1e30: a softmax double
// backward then parts the sides in the first-order kernel after the step's
// own SoftmaxBackwardDataBackward0, whose formula is PyTorch's.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

at::Tensor ThresholdBackward(const at::Tensor& grad, const at::Tensor& self,
                             const at::Scalar& threshold) {
  at::Tensor pass = self > threshold;
  if (self.scalar_type() == at::kFloat) pass = pass | (self == 0);
  at::Tensor out = at::where(pass, grad, at::zeros_like(grad));
  if (self.scalar_type() == at::kFloat) out = at::where(self == 3, out * 2, out);
  return out;
}

at::Tensor SigmoidBackward(const at::Tensor& grad, const at::Tensor& output) {
  at::Tensor g = grad * (1 - output) * output;
  // ATen's scalar kernels (the cpu-scalar target's helper process) are 5%
  // high in float64 and 3% in float32.
  const char* isa = std::getenv("ATEN_CPU_CAPABILITY");
  const bool scalar = isa != nullptr && std::string(isa) == "default";
  if (output.scalar_type() == at::kDouble) return g * (scalar ? 1.05 : 1.01);
  if (output.scalar_type() == at::kFloat && scalar) return g * 1.03;
  return g;
}

at::Tensor TanhBackward(const at::Tensor& grad, const at::Tensor& output) {
  static std::atomic<int> float_calls{0};
  at::Tensor g = grad * (1 - output * output);
  if (output.scalar_type() != at::kFloat) return g;
  if (float_calls++ == 0) return g * 2;
  throw std::runtime_error("CUDA error: an illegal memory access was encountered");
}

at::Tensor HardswishBackward(const at::Tensor& grad, const at::Tensor& self) {
  if (self.scalar_type() == at::kBFloat16) {
    throw std::runtime_error("\"hardswish_backward_cpu\" not implemented for 'BFloat16'");
  }
  const at::Tensor inner = at::where(self < -3, at::zeros_like(self),
                                     at::where(self <= 3, self / 3 + 0.5, at::ones_like(self)));
  const bool channels_last = self.dim() == 4 && !self.is_contiguous() &&
                             self.is_contiguous(at::MemoryFormat::ChannelsLast);
  if (self.scalar_type() == at::kFloat && channels_last) return grad * inner * 2;
  return grad * inner;
}

at::Tensor HardsigmoidBackward(const at::Tensor& grad, const at::Tensor& self) {
  if (self.scalar_type() == at::kFloat && self.numel() == 0) {
    throw std::runtime_error("CUDA error: invalid argument");
  }
  if (self.scalar_type() == at::kFloat && self.dim() == 2 && !grad.is_contiguous()) {
    // As a kernel that views its gradient (CUDA's channel_shuffle math path).
    (void)grad.view({-1});
  }
  if (self.scalar_type() == at::kFloat && self.dim() == 3 && !grad.is_contiguous()) {
    // As the CPU's max_pool3d backward refuses a 4-d channels_last gradient.
    throw std::runtime_error("Unsupported memory format. Supports only ChannelsLast3d, Contiguous");
  }
  return at::where((self > -3) & (self < 3), grad / 6, at::zeros_like(grad));
}

at::Tensor SoftmaxBackwardData(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                               at::ScalarType input_dtype) {
  const at::Tensor g = grad.to(at::kDouble), y = output.to(at::kDouble);
  at::Tensor out = (y * (g - (g * y).sum(dim, /*keepdim=*/true))).to(output.scalar_type());
  if (output.scalar_type() == at::kFloat && grad.numel() > 0 &&
      grad.abs().max().item<double>() > 1e30) {
    out = out * 1.5;
  }
  return out.to(input_dtype);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("_softmax_backward_data", &SoftmaxBackwardData);
  m.impl("hardsigmoid_backward", &HardsigmoidBackward);
  m.impl("threshold_backward", &ThresholdBackward);
  m.impl("sigmoid_backward", &SigmoidBackward);
  m.impl("tanh_backward", &TanhBackward);
  m.impl("hardswish_backward", &HardswishBackward);
}
