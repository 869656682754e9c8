// A deliberately faulty plugin for the reliability tests (loaded with
// --plugins): it replaces the CPU kernels of four real ATen ops so that, on
// float32 inputs, they do what buggy kernels do to a fuzzer's process:
//   aten::expm1  segfaults            aten::log1p  aborts
//   aten::exp2   hangs                aten::rsqrt  throws
// Other dtypes compute the function from other ops, so the damage stays in
// one (op, f32) bucket each.
#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/log.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/sub.h>
#include <torch/library.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

namespace {

bool Faulty(const at::Tensor& t) { return t.scalar_type() == at::kFloat; }

at::Tensor Expm1Segfaults(const at::Tensor& self) {
  if (Faulty(self)) {
    volatile int* null = nullptr;
    *null = 1;
  }
  return at::sub(at::exp(self), 1);
}

at::Tensor Log1pAborts(const at::Tensor& self) {
  if (Faulty(self)) std::abort();
  return at::log(at::add(self, 1));
}

at::Tensor Exp2Hangs(const at::Tensor& self) {
  while (Faulty(self)) sleep(1);
  return at::pow(2.0, self);
}

at::Tensor RsqrtThrows(const at::Tensor& self) {
  TORCH_CHECK(!Faulty(self), "divfuzz faulty plugin: rsqrt refuses float32");
  return at::reciprocal(at::sqrt(self));
}

}  // namespace

// Replaces the kernels ATen registered (torch warns that it overrides them).
TORCH_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("expm1", &Expm1Segfaults);
  m.impl("log1p", &Log1pAborts);
  m.impl("exp2", &Exp2Hangs);
  m.impl("rsqrt", &RsqrtThrows);
}
