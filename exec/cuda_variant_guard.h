// Switches at::globalContext() to a target's CUDA variant for one run and
// back: the switches are process-wide, so without this a cuda+magma run
// would leave the next target's runs on MAGMA.
#pragma once

#include <string>
#include <vector>

#include "exec/target.h"

namespace divfuzz::exec {

class CudaVariantGuard {
 public:
  // Saves every setting exec/cuda_variants.def lists, then makes `variants`'
  // settings. Nothing at all for an empty set (every plain run).
  explicit CudaVariantGuard(VariantSet variants);
  // Restores each saved setting that differs now.
  ~CudaVariantGuard();
  CudaVariantGuard(const CudaVariantGuard&) = delete;
  CudaVariantGuard& operator=(const CudaVariantGuard&) = delete;

 private:
  std::vector<int> saved_;
};

// Every listed setting's current value, "linalg_backend=0 blas_backend=1 ...":
// how tests see that nothing leaked.
std::string DescribeCudaSettings();

}  // namespace divfuzz::exec
