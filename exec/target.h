// The places a program can run. Torch-free so flags and reports can name them.
//
// A target is a base (cpu, cuda, cpu-f64, cpu-scalar, cuda-f64) plus a set of
// CUDA switches ("cuda+magma+cublaslt": exec/cuda_variants.def). The base is
// what decides device and dtype, so `t == Target::kCuda` and `switch (t)`
// compare the base only (a cuda+magma run is a CUDA run everywhere); the
// switches travel with the value and show in its name (RunResult::target,
// verdicts' wrong_side, the store's targets).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace divfuzz::exec {

// Bit i: row i of exec/cuda_variants.def.
using VariantSet = uint32_t;

class Target {
 public:
  enum Kind : uint8_t {
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
  constexpr Target() = default;
  // Implicit both ways, so code written for the plain enum keeps working.
  constexpr Target(Kind kind) : kind_(kind) {}  // NOLINT
  constexpr Target(Kind kind, VariantSet variants) : kind_(kind), variants_(variants) {}
  constexpr operator Kind() const { return kind_; }  // NOLINT
  constexpr Kind base() const { return kind_; }
  constexpr VariantSet variants() const { return variants_; }
  // The same base and the same switches (== compares the base only).
  constexpr bool Same(Target other) const {
    return kind_ == other.kind_ && variants_ == other.variants_;
  }

 private:
  Kind kind_ = kCpu;
  VariantSet variants_ = 0;
};

// "cpu", "cuda", "cpu-f64", "cpu-scalar", "cuda-f64", "cuda+magma+cublaslt".
absl::string_view TargetName(Target t);
// A base name, then "+switch" for each CUDA switch (cuda and cuda-f64 only).
absl::StatusOr<Target> ParseTarget(absl::string_view name);
// "A,B", e.g. "cpu,cuda".
absl::StatusOr<std::pair<Target, Target>> ParseTargetPair(absl::string_view pair);

}  // namespace divfuzz::exec
