// A deliberately faulty plugin (loaded with --plugins): it replaces the CPU
// kernel of aten::linalg_eigvals with one that does what CUDA's did on the
// H100: for a float32 matrix stored column-major (a transposed view, as
// QR's Q is), it hands the input's own storage to the routine, which
// overwrites it (here with zeros). The eigenvalues it returns are right.
#include <ATen/core/Tensor.h>
#include <ATen/ops/linalg_eig.h>
#include <torch/library.h>

namespace {

at::Tensor EigvalsWritesItsInput(const at::Tensor& self) {
  at::Tensor values = std::get<0>(at::linalg_eig(self));  // not linalg_eigvals: this kernel
  const bool column_major = self.dim() == 2 && self.size(0) > 1 && self.stride(0) == 1;
  if (self.scalar_type() == at::kFloat && column_major) {
    const_cast<at::Tensor&>(self).zero_();
  }
  return values;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, CPU, m) { m.impl("linalg_eigvals", &EigvalsWritesItsInput); }
