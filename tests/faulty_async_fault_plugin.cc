// A deliberately faulty plugin (loaded with --plugins) that mimics an
// asynchronous CUDA fault on the CPU, for `divfuzz replay`:
//   - aten::rad2deg in float32 "launches" the fault: with
//     CUDA_LAUNCH_BLOCKING=1 it raises an illegal memory access's message
//     itself, as a synchronous launch would; without, it returns a correct
//     result and leaves the process's context poisoned;
//   - aten::exp2 in float32 raises that message once the context is
//     poisoned, as every later CUDA call does after a sticky fault, so the
//     fault surfaces at a node after the one that caused it;
//   - aten::embedding_dense_backward in float32 launches it as rad2deg
//     does: a backward kernel's fault inside a gradient statement (session
//     47's bb491aab, CUDA's on a zero-width weight).
// Other dtypes (float64, the reference) are computed correctly.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

std::atomic<bool> poisoned{false};
const char kFault[] = "CUDA error: an illegal memory access was encountered";

at::Tensor Rad2deg(const at::Tensor& self) {
  if (self.scalar_type() == at::kFloat) {
    const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
    if (blocking != nullptr && std::string(blocking) == "1") throw std::runtime_error(kFault);
    poisoned = true;
  }
  return at::mul(self, 180.0 / M_PI);
}

at::Tensor Exp2(const at::Tensor& self) {
  if (self.scalar_type() == at::kFloat && poisoned) throw std::runtime_error(kFault);
  return at::pow(2.0, self);
}

at::Tensor EmbeddingDenseBackward(const at::Tensor& grad, const at::Tensor& indices,
                                  int64_t num_weights, int64_t padding_idx,
                                  bool scale_grad_by_freq) {
  (void)padding_idx;
  (void)scale_grad_by_freq;
  if (grad.scalar_type() == at::kFloat) {
    const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
    if (blocking != nullptr && std::string(blocking) == "1") throw std::runtime_error(kFault);
    poisoned = true;
  }
  const int64_t d = grad.size(-1);
  return at::zeros({num_weights, d}, grad.options())
      .index_add_(0, indices.reshape(-1), grad.reshape({-1, d}));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("rad2deg", Rad2deg);
  m.impl("exp2", Exp2);
  m.impl("embedding_dense_backward", EmbeddingDenseBackward);
}
