#include "exec/target.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace divfuzz::exec {

absl::string_view TargetName(Target t) {
  switch (t) {
    case Target::kCpu:
      return "cpu";
    case Target::kCuda:
      return "cuda";
    case Target::kCpuF64:
      return "cpu-f64";
    case Target::kCpuScalar:
      return "cpu-scalar";
    case Target::kCudaF64:
      return "cuda-f64";
  }
  return "?";
}

absl::StatusOr<Target> ParseTarget(absl::string_view name) {
  for (Target t : {Target::kCpu, Target::kCuda, Target::kCpuF64, Target::kCpuScalar, Target::kCudaF64}) {
    if (TargetName(t) == name) return t;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected a target (cpu, cuda, cpu-f64, cpu-scalar, cuda-f64), got '", name, "'"));
}

absl::StatusOr<std::pair<Target, Target>> ParseTargetPair(absl::string_view pair) {
  const std::vector<absl::string_view> parts = absl::StrSplit(pair, ',');
  if (parts.size() == 2) {
    absl::StatusOr<Target> a = ParseTarget(parts[0]), b = ParseTarget(parts[1]);
    if (a.ok() && b.ok()) return std::make_pair(*a, *b);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "expected two targets 'A,B' from cpu, cuda, cpu-f64, cpu-scalar, cuda-f64, got '", pair, "'"));
}

}  // namespace divfuzz::exec
