#include "exec/cuda_variants.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ops/op_spec.h"

namespace divfuzz::exec {

const std::vector<CudaVariant>& CudaVariants() {
  static const std::vector<CudaVariant>* rows = new std::vector<CudaVariant>{
#define DIVFUZZ_CUDA_VARIANT(name, library, group, kernels, doc, python, ...) \
  {#name, library, group, static_cast<uint32_t>(kernels), doc, python, #__VA_ARGS__},
#include "exec/cuda_variants.def"
  };
  static_assert(sizeof(VariantSet) * 8 >= 12, "a VariantSet holds a bit per row");
  return *rows;
}

const CudaVariant* FindCudaVariant(absl::string_view name) {
  for (const CudaVariant& v : CudaVariants()) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

VariantSet VariantBit(const CudaVariant& v) {
  return VariantSet{1} << static_cast<unsigned>(&v - CudaVariants().data());
}

bool HasSwitch(Target target, absl::string_view name) {
  const CudaVariant* v = FindCudaVariant(name);
  return v != nullptr && (target.variants() & VariantBit(*v)) != 0;
}

std::vector<const CudaVariant*> VariantsChanging(uint32_t cuda_kernels) {
  std::vector<const CudaVariant*> out;
  for (const CudaVariant& v : CudaVariants()) {
    if ((v.kernels & cuda_kernels) != 0) out.push_back(&v);
  }
  return out;
}

std::string VariantSuffix(VariantSet variants) {
  std::string out;
  for (const CudaVariant& v : CudaVariants()) {
    if (variants & VariantBit(v)) absl::StrAppend(&out, "+", v.name);
  }
  return out;
}

std::string VariantLibraries(VariantSet variants) {
  std::vector<std::string> libs;
  for (const CudaVariant& v : CudaVariants()) {
    if (variants & VariantBit(v)) libs.emplace_back(v.library);
  }
  return libs.empty() ? "default libraries" : absl::StrJoin(libs, " + ");
}

absl::StatusOr<Target> WithVariants(Target target, VariantSet variants) {
  if (variants == 0) return Target(target.base(), target.variants());
  if (target.base() != Target::kCuda && target.base() != Target::kCudaF64) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA switches (", VariantSuffix(variants),
                     ") apply to cuda and cuda-f64 only, not to a CPU target"));
  }
  const VariantSet all = target.variants() | variants;
  for (const CudaVariant& a : CudaVariants()) {
    for (const CudaVariant& b : CudaVariants()) {
      if (&a < &b && a.group == b.group && (all & VariantBit(a)) && (all & VariantBit(b))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the CUDA switches ", a.name, " and ", b.name, " both choose the ", a.group,
            " path: give one"));
      }
    }
  }
  return Target(target.base(), all);
}

absl::StatusOr<std::vector<VariantSet>> ParseVariantList(absl::string_view list) {
  std::vector<VariantSet> out;
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item.empty() || item == "default") {
      out.push_back(0);
      continue;
    }
    absl::StatusOr<Target> t = ParseTarget(absl::StrCat("cuda+", item));
    if (!t.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected CUDA switch sets separated by commas (each 'default' or switches joined by "
          "'+', e.g. 'default,magma,cublaslt+tf32'), got '", item, "': ", t.status().message()));
    }
    out.push_back(t->variants());
  }
  return out;
}

absl::StatusOr<std::string> PairWithVariants(absl::string_view pair, VariantSet variants) {
  absl::StatusOr<std::pair<Target, Target>> p = ParseTargetPair(pair);
  if (!p.ok()) return p.status();
  auto cuda = [](Target t) { return t == Target::kCuda || t == Target::kCudaF64; };
  if (!cuda(p->first) && !cuda(p->second)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA switches need a CUDA side, and the targets '", pair, "' have none"));
  }
  std::string out;
  for (Target t : {p->first, p->second}) {
    if (cuda(t)) {
      absl::StatusOr<Target> with = WithVariants(t, variants);
      if (!with.ok()) return with.status();
      t = *with;
    }
    absl::StrAppend(&out, out.empty() ? "" : ",", TargetName(t));
  }
  return out;
}

absl::StatusOr<std::string> RotatedTargets(absl::string_view pair, absl::string_view variant_list,
                                           int worker) {
  if (variant_list.empty()) return std::string(pair);
  absl::StatusOr<std::vector<VariantSet>> sets = ParseVariantList(variant_list);
  if (!sets.ok()) return sets.status();
  return PairWithVariants(pair, (*sets)[static_cast<size_t>(worker) % sets->size()]);
}

std::string CudaKernelNames(uint32_t kernels) {
  static constexpr std::pair<uint32_t, absl::string_view> kNames[] = {
      {ops::kCudaSolver, "solver"},   {ops::kCudaBlas, "blas"},
      {ops::kCudaDnn, "cudnn"},       {ops::kCudaAttention, "attention"},
      {ops::kCudaAtomics, "atomics"},
  };
  std::vector<absl::string_view> names;
  for (const auto& [bit, name] : kNames) {
    if (kernels & bit) names.push_back(name);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

std::string TargetsHelp(bool markdown) {
  std::string out;
  if (markdown) {
    absl::StrAppend(
        &out,
        "Targets: `cpu`, `cuda`, `cpu-f64`, `cpu-scalar`, `cuda-f64`. `cuda` and `cuda-f64` take "
        "CUDA switches joined by `+` (`cuda+magma`, `cuda+magma+cublaslt`); switches of one "
        "group do not combine. Each is set on `at::globalContext()` for that target's runs only "
        "and restored after. From `exec/cuda_variants.def`.\n\n",
        "| switch | library | changes | settings | what |\n|---|---|---|---|---|\n");
    for (const CudaVariant& v : CudaVariants()) {
      absl::StrAppend(&out, "| `", v.name, "` | ", v.library, " | ", CudaKernelNames(v.kernels),
                      " | `", v.settings, "` | ", v.doc, " |\n");
    }
    return out;
  }
  absl::StrAppend(
      &out,
      "Targets: cpu, cuda, cpu-f64, cpu-scalar, cuda-f64.\n"
      "cuda and cuda-f64 take CUDA switches joined by '+' (cuda+magma, cuda+magma+cublaslt);\n"
      "switches of one group do not combine. Each is set on at::globalContext() for that\n"
      "target's runs only and restored after. Pairs may mix them: --targets=cuda,cuda+magma.\n\n");
  for (const CudaVariant& v : CudaVariants()) {
    absl::StrAppend(&out, "  +", v.name, "  (", v.library, "; group ", v.group, "; changes ",
                    CudaKernelNames(v.kernels), " kernels)\n      ", v.doc, "\n      sets: ",
                    v.settings, "\n");
  }
  return out;
}

}  // namespace divfuzz::exec
