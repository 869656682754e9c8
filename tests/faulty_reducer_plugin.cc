// A deliberately faulty plugin for the reducer's supervisor test (loaded with
// --plugins): two real ATen ops whose CPU kernels, on float32, are wrong by a
// factor of 1.5 (a planted divergence from the float64 reference), except on
// one-element inputs, where
//   aten::sinh  hangs             aten::cosh  segfaults
// so a finding reduces fine until the shapes pass tries the smallest shape.
// And two whose own programs fail, for hang and crash findings: on a float32
// tensor with an element above 100,
//   aten::tan   hangs             aten::tanh  segfaults
// (else they are right). Other dtypes compute the function from exp.
#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/div.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/sub.h>
#include <torch/library.h>
#include <unistd.h>

namespace {

bool Faulty(const at::Tensor& t) { return t.scalar_type() == at::kFloat; }

at::Tensor Sinh(const at::Tensor& self) {
  return at::div(at::sub(at::exp(self), at::exp(at::neg(self))), 2);
}

at::Tensor Cosh(const at::Tensor& self) {
  return at::div(at::add(at::exp(self), at::exp(at::neg(self))), 2);
}

at::Tensor SinhWrongOrHangs(const at::Tensor& self) {
  if (!Faulty(self)) return Sinh(self);
  while (self.numel() == 1) sleep(1);
  return at::mul(Sinh(self), 1.5);
}

at::Tensor CoshWrongOrSegfaults(const at::Tensor& self) {
  if (!Faulty(self)) return Cosh(self);
  if (self.numel() == 1) {
    volatile int* null = nullptr;
    *null = 1;
  }
  return at::mul(Cosh(self), 1.5);
}

bool AnyAbove100(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat && at::gt(t, 100).any().item<bool>();
}

at::Tensor TanOrHangs(const at::Tensor& self) {
  while (AnyAbove100(self)) sleep(1);
  return at::div(at::sin(self), at::cos(self));
}

at::Tensor TanhOrSegfaults(const at::Tensor& self) {
  if (AnyAbove100(self)) {
    volatile int* null = nullptr;
    *null = 1;
  }
  return at::div(Sinh(self), Cosh(self));  // not aten::sinh, which this plugin breaks
}

}  // namespace

// Replaces the kernels ATen registered (torch warns that it overrides them).
TORCH_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("sinh", &SinhWrongOrHangs);
  m.impl("cosh", &CoshWrongOrSegfaults);
  m.impl("tan", &TanOrHangs);
  m.impl("tanh", &TanhOrSegfaults);
}
