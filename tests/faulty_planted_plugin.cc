// A deliberately faulty plugin for the --baseline tests (loaded with
// --plugins), built twice: with DIVFUZZ_PLANTED_EXPM1 it replaces the CPU
// kernel of aten::expm1, else that of aten::sin, with one that is wrong by a
// factor of 1.5 on float32 (a planted bug against the float64 reference);
// other dtypes compute the function from other ops, correctly.
#include <ATen/core/Tensor.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sub.h>
#include <torch/library.h>

namespace {

at::Tensor WrongOnFloat(const at::Tensor& self, const at::Tensor& right) {
  return self.scalar_type() == at::kFloat ? at::mul(right, 1.5) : right;
}

#ifdef DIVFUZZ_PLANTED_EXPM1
at::Tensor Expm1(const at::Tensor& self) { return WrongOnFloat(self, at::sub(at::exp(self), 1)); }
TORCH_LIBRARY_IMPL(aten, CPU, m) { m.impl("expm1", &Expm1); }
#else
at::Tensor Sin(const at::Tensor& self) {
  return WrongOnFloat(self, at::cos(at::sub(self, 1.5707963267948966)));
}
TORCH_LIBRARY_IMPL(aten, CPU, m) { m.impl("sin", &Sin); }
#endif

}  // namespace
