// The places a program can run. Torch-free so flags and reports can name them.
#pragma once

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace divfuzz::exec {

enum class Target {
  kCpu,
  kCuda,
  kCpuF64,  // the reference: floating inputs upcast to float64, results rounded back
  // ATen's scalar (non-vectorized) CPU kernels, in a helper process started
  // with ATEN_CPU_CAPABILITY=default (the capability is fixed per process).
  kCpuScalar,
  // The float64 reference on the GPU (a witness only: with a CUDA side, the
  // oracle checks the CPU's float64 reference against it).
  kCudaF64,
};

absl::string_view TargetName(Target t);  // "cpu", "cuda", "cpu-f64", "cpu-scalar"
absl::StatusOr<Target> ParseTarget(absl::string_view name);
// "A,B", e.g. "cpu,cuda".
absl::StatusOr<std::pair<Target, Target>> ParseTargetPair(absl::string_view pair);

}  // namespace divfuzz::exec
