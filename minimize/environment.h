// The environment a divergence was seen in, for reports: torch and its CUDA
// runtime, cuBLAS and cuSOLVER, the GPU and its driver, the CPU, its vector
// ISA as ATen dispatches it, BLAS/LAPACK, and the OS. Gathered from libtorch
// and, for the CUDA libraries, by asking the loaded shared objects directly
// (dlopen/dlsym), so no CUDA headers are needed and nothing fails without a GPU.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace divfuzz::minimize {

struct Environment {
  std::string torch_version;       // "2.11.0" (libtorch's TORCH_VERSION)
  std::string torch_build;         // "CUDA 13.0, cuDNN 9.19.0" as torch was built
  std::string cuda_runtime;        // "13.0" of the loaded runtime, or empty
  std::string cublas;              // "13.1.0", or empty
  std::string cusolver;            // "12.0.4", or empty
  std::string gpu;                 // "NVIDIA H200 (sm_90)", or empty without a GPU
  std::string gpu_driver;          // "580.95.05 (CUDA 13.0)", or empty
  std::string cpu_model;           // /proc/cpuinfo's model name
  int cpu_cores = 0;               // logical, as the OS reports them
  std::string cpu_capability;      // ATen's dispatch: "AVX512", "AVX2", "DEFAULT" ...
  std::string cpu_capability_env;  // ATEN_CPU_CAPABILITY when set
  int threads = 0;                 // at::get_num_threads()
  std::string blas;                // "mkl (Intel oneAPI MKL 2024.2)"
  std::string os;                  // "Debian GNU/Linux 12 (bookworm), Linux 6.1.0 x86_64"
  std::string compiler;            // of this binary

  // Label, value pairs in a fixed order; empty values read "n/a".
  std::vector<std::pair<std::string, std::string>> Items() const;
};

// Asks the running process. Cheap after the first call (cached).
const Environment& CurrentEnvironment();

}  // namespace divfuzz::minimize
