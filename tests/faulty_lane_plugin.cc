// A deliberately hanging plugin for the isolated lane's tests (loaded with
// --plugins): aten::linalg_matrix_exp's CPU kernel, on a float32 matrix whose
// first element is +inf (so its 1-norm is not finite), loops forever, as CUDA's matrix_exp does when the
// number of squarings is an undefined cast of an infinite norm. divfuzz
// declines such a node (exec/index_precheck.h, kFiniteMatrixNorm), so only
// the campaign's isolated lane ever runs it: there it must become a hang
// finding within --isolated_timeout while the workers go on.
// Every other call computes exp(A) by a truncated Taylor series after
// scaling (the same code for every dtype, so cpu and cpu-f64 agree).
#include <ATen/core/Tensor.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/add.h>
#include <ATen/ops/div.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/matmul.h>
#include <torch/library.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace {

at::Tensor MatrixExpHangsOnAnInfiniteNorm(const at::Tensor& self) {
  // Only a float32 matrix whose first element is +inf (its norm is then
  // infinite, so every worker declines it): the backward's block matrix
  // [[A^T, G], [0, A^T]] of a forward a worker ran starts with a finite A[0,0].
  if (self.scalar_type() == at::kFloat && self.numel() > 0 &&
      self.flatten()[0].item<float>() == INFINITY) {
    for (;;) sleep(1);
  }
  const at::Tensor norm = at::abs(self).sum(-2).amax(-1);
  const double largest = self.numel() == 0 ? 0 : norm.max().item<double>();
  const int squarings =
      std::isfinite(largest) && largest > 0.5 ? static_cast<int>(std::ceil(std::log2(largest))) + 1 : 0;
  const at::Tensor a = at::div(self, std::ldexp(1.0, std::min(squarings, 1000)));
  at::Tensor term = at::eye(self.size(-1), self.options()).expand_as(self).clone();
  at::Tensor sum = term.clone();
  for (int k = 1; k <= 18; ++k) {
    term = at::div(at::matmul(term, a), static_cast<double>(k));
    sum = at::add(sum, term);
  }
  for (int i = 0; i < std::min(squarings, 1000); ++i) sum = at::matmul(sum, sum);
  return sum;
}

}  // namespace

// Replaces the kernel ATen registered (torch warns that it overrides it).
TORCH_LIBRARY_IMPL(aten, CPU, m) { m.impl("linalg_matrix_exp", &MatrixExpHangsOnAnInfiniteNorm); }
