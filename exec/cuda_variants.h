// The CUDA variants (exec/cuda_variants.def) as data: names, libraries,
// groups, the kernel classes each changes and its settings as text. Torch-free
// so flags, help and reports can use it; exec/cuda_variant_guard.h makes the
// settings.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "exec/target.h"

namespace divfuzz::exec {

struct CudaVariant {
  absl::string_view name;      // "magma"
  absl::string_view library;   // "MAGMA"
  absl::string_view group;     // "linalg"
  uint32_t kernels;            // ops::CudaKernel bits it changes
  absl::string_view doc;
  absl::string_view python;    // the same in Python (torch.backends ...)
  absl::string_view settings;  // the statements on at::globalContext(), as written
};

// Every row, in the table's order (bit i of a VariantSet is row i).
const std::vector<CudaVariant>& CudaVariants();
// The row named `name`, or null.
const CudaVariant* FindCudaVariant(absl::string_view name);
VariantSet VariantBit(const CudaVariant& v);
// Whether `target` carries the switch named `name` ("tf32").
bool HasSwitch(Target target, absl::string_view name);

// The variants whose kernel classes meet `cuda_kernels` (an op's catalogue
// entry, ops::OpSpec::cuda_kernels): those the ablation reruns it under.
std::vector<const CudaVariant*> VariantsChanging(uint32_t cuda_kernels);

// "+magma+cublaslt" for a set (empty for none), in the table's order.
std::string VariantSuffix(VariantSet variants);
// The libraries of a set: "MAGMA + cuBLASLt"; "default libraries" for none.
std::string VariantLibraries(VariantSet variants);

// `target` with `variants` added (only cuda and cuda-f64 take them); an
// error naming the conflict when two switches of one group meet.
absl::StatusOr<Target> WithVariants(Target target, VariantSet variants);

// "magma,cublaslt+tf32" (a campaign's --cuda_variants): each item a set of
// switches, "default" (or "") for none. An error names the bad item.
absl::StatusOr<std::vector<VariantSet>> ParseVariantList(absl::string_view list);

// The pair "A,B" with `variants` added to each CUDA side ("cpu,cuda" ->
// "cpu,cuda+magma"); an error when neither side is CUDA or a switch conflicts.
absl::StatusOr<std::string> PairWithVariants(absl::string_view pair, VariantSet variants);
// A campaign worker's pair: item `worker` mod N of `variant_list`
// (ParseVariantList) added by PairWithVariants; `pair` itself for an empty list.
absl::StatusOr<std::string> RotatedTargets(absl::string_view pair, absl::string_view variant_list,
                                           int worker);

// `divfuzz help targets`: every target and every switch with its settings,
// kernel classes and doc; `markdown` for docs/CLI.md.
std::string TargetsHelp(bool markdown);

// The names of the ops::CudaKernel bits: "solver, blas".
std::string CudaKernelNames(uint32_t kernels);

}  // namespace divfuzz::exec
