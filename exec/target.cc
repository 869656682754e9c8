#include "exec/target.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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
  }
  return "?";
}

absl::StatusOr<Target> ParseTarget(absl::string_view name) {
  for (Target t : {Target::kCpu, Target::kCuda, Target::kCpuF64, Target::kCpuScalar}) {
    if (TargetName(t) == name) return t;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected a target (cpu, cuda, cpu-f64, cpu-scalar), got '", name, "'"));
}

}  // namespace divfuzz::exec
