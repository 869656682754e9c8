#include "exec/target.h"

#include <mutex>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "exec/cuda_variants.h"

namespace divfuzz::exec {
namespace {

constexpr Target::Kind kBases[] = {Target::kCpu, Target::kCuda, Target::kCpuF64,
                                   Target::kCpuScalar, Target::kCudaF64};

absl::string_view BaseName(Target::Kind k) {
  switch (k) {
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

constexpr char kExpected[] =
    "a target (cpu, cuda, cpu-f64, cpu-scalar, cuda-f64; cuda and cuda-f64 may add CUDA "
    "switches, cuda+magma: `divfuzz help targets`)";

}  // namespace

absl::string_view TargetName(Target t) {
  if (t.variants() == 0) return BaseName(t.base());
  // Names with switches are few and live as long as the process, so callers
  // may keep the view as they keep a plain target's.
  static std::mutex mu;
  static std::set<std::string>* names = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  return *names->insert(absl::StrCat(BaseName(t.base()), VariantSuffix(t.variants()))).first;
}

absl::StatusOr<Target> ParseTarget(absl::string_view name) {
  const std::vector<absl::string_view> parts = absl::StrSplit(name, '+');
  for (Target::Kind k : kBases) {
    if (BaseName(k) != parts[0]) continue;
    VariantSet variants = 0;
    for (size_t i = 1; i < parts.size(); ++i) {
      const CudaVariant* v = FindCudaVariant(parts[i]);
      if (v == nullptr) {
        std::vector<absl::string_view> known;
        for (const CudaVariant& row : CudaVariants()) known.push_back(row.name);
        return absl::InvalidArgumentError(absl::StrCat(
            "target '", name, "': unknown CUDA switch '", parts[i], "' (expected one of ",
            absl::StrJoin(known, ", "), ")"));
      }
      variants |= VariantBit(*v);
    }
    absl::StatusOr<Target> t = WithVariants(Target(k), variants);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("target '", name, "': ", t.status().message()));
    return t;
  }
  return absl::InvalidArgumentError(absl::StrCat("expected ", kExpected, ", got '", name, "'"));
}

absl::StatusOr<std::pair<Target, Target>> ParseTargetPair(absl::string_view pair) {
  const std::vector<absl::string_view> parts = absl::StrSplit(pair, ',');
  if (parts.size() == 2) {
    absl::StatusOr<Target> a = ParseTarget(parts[0]), b = ParseTarget(parts[1]);
    if (a.ok() && b.ok()) return std::make_pair(*a, *b);
    // A bad switch says which; a bad base falls through to the pair's message.
    if (!a.ok() && absl::StrContains(parts[0], '+')) return a.status();
    if (!b.ok() && absl::StrContains(parts[1], '+')) return b.status();
  }
  return absl::InvalidArgumentError(absl::StrCat("expected two targets 'A,B', each ", kExpected,
                                                 ", got '", pair, "'"));
}

}  // namespace divfuzz::exec
