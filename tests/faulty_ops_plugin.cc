// A deliberately faulty plugin for the reliability tests (loaded with
// --plugins): it replaces the CPU kernels of eight real ATen ops so that, on
// float32 inputs, they do what buggy kernels do to a fuzzer's process:
//   aten::expm1  segfaults            aten::log1p  aborts
//   aten::exp2   hangs                aten::rsqrt  throws
//   aten::log2   dies before libFuzzer can write an artifact (SIGKILL: as
//                from the OOM killer, or a heap so corrupted that libFuzzer's
//                crash handler dies in malloc, as MKL's sgebal left it)
//   aten::log10  hangs where libFuzzer's -timeout cannot see it (SIGALRM
//                ignored, as when a corrupted heap wedges libFuzzer's alarm
//                handler)
//   aten::erfc   segfaults on a [7, m, n] input only: what a batched run of
//                seven value variants makes of an [m, n] program
//   aten::atan   segfaults on a float64 input whose first element is 0.875,
//                only: a crash in the float64 witness that the float32 pair
//                never shows (session 52's 4c45624b)
//   aten::frac   in any dtype, writes "out of bounds" on every call and is
//                caught by the next: it segfaults on its second call in a
//                process, so a pair's second target crashes for the first's
//                fault (session 50's GridSampler2DBackward0 33997877)
// These three only when the first element is their marker (0.375, 0.125,
// 0.625):
// other ops call log2 inside (matrix_exp), and mutated programs should
// rarely reach them.
// Other dtypes compute the function from other ops, so the damage stays in
// one (op, f32) bucket each.
#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/asin.h>
#include <ATen/ops/div.h>
#include <ATen/ops/erf.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/log.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/trunc.h>
#include <torch/library.h>
#include <unistd.h>

#include <atomic>
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

bool Marked(const at::Tensor& t, float marker) {
  return Faulty(t) && t.numel() > 0 && t.flatten()[0].item<float>() == marker;
}

at::Tensor Log2DiesWithoutAnArtifact(const at::Tensor& self) {
  if (Marked(self, 0.375f)) std::raise(SIGKILL);
  return at::div(at::log(self), 0.6931471805599453);
}

at::Tensor FracCorruptsUntilItCrashes(const at::Tensor& self) {
  static std::atomic<int> calls{0};
  const bool marked = self.numel() > 0 && (self.is_floating_point()) &&
                      self.flatten()[0].item<double>() == 0.625;
  if (marked && ++calls >= 2) {
    volatile int* null = nullptr;
    *null = 1;
  }
  return at::sub(self, at::trunc(self));
}

at::Tensor Log10HangsPastTheAlarm(const at::Tensor& self) {
  if (Marked(self, 0.125f)) {
    std::signal(SIGALRM, SIG_IGN);
    for (;;) sleep(1);
  }
  return at::div(at::log(self), 2.302585092994046);
}

at::Tensor AtanSegfaultsInFloat64(const at::Tensor& self) {
  if (self.scalar_type() == at::kDouble && self.numel() > 0 &&
      self.flatten()[0].item<double>() == 0.875) {
    volatile int* null = nullptr;
    *null = 1;
  }
  // atan(x) = asin(x / sqrt(1 + x²)), from ops the plugin leaves alone.
  return at::asin(at::div(self, at::sqrt(at::add(at::pow(self, 2), 1))));
}

at::Tensor ErfcSegfaultsWhenBatched(const at::Tensor& self) {
  if (Faulty(self) && self.dim() == 3 && self.size(0) == 7) {
    volatile int* null = nullptr;
    *null = 1;
  }
  return at::sub(at::ones_like(self), at::erf(self));
}

}  // namespace

// Replaces the kernels ATen registered (torch warns that it overrides them).
TORCH_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("expm1", &Expm1Segfaults);
  m.impl("log1p", &Log1pAborts);
  m.impl("exp2", &Exp2Hangs);
  m.impl("rsqrt", &RsqrtThrows);
  m.impl("log2", &Log2DiesWithoutAnArtifact);
  m.impl("log10", &Log10HangsPastTheAlarm);
  m.impl("erfc", &ErfcSegfaultsWhenBatched);
  m.impl("frac", &FracCorruptsUntilItCrashes);
  m.impl("atan", &AtanSegfaultsInFloat64);
}
