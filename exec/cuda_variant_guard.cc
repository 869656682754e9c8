#include "exec/cuda_variant_guard.h"

#include <ATen/Context.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "exec/cuda_variants.h"

namespace divfuzz::exec {
namespace {

std::vector<int> ReadSettings() {
  at::Context& ctx = at::globalContext();
  return {
#define DIVFUZZ_CUDA_SETTING(name, getter, setter) static_cast<int>(getter),
#include "exec/cuda_variants.def"
  };
}

void WriteSettings(const std::vector<int>& values) {
  at::Context& ctx = at::globalContext();
  const std::vector<int> now = ReadSettings();
  size_t i = 0;
  // Only what differs: some setters warn each time they are called.
#define DIVFUZZ_CUDA_SETTING(name, getter, setter) \
  if (now[i] != values[i]) {                       \
    const int v = values[i];                       \
    setter;                                        \
  }                                                \
  ++i;
#include "exec/cuda_variants.def"
  (void)ctx;
}

void MakeVariant(size_t row) {
  at::Context& ctx = at::globalContext();
  size_t i = 0;
#define DIVFUZZ_CUDA_VARIANT(name, library, group, kernels, doc, python, ...) \
  if (i++ == row) {                                                   \
    __VA_ARGS__;                                                      \
  }
#include "exec/cuda_variants.def"
  (void)ctx;
}

}  // namespace

CudaVariantGuard::CudaVariantGuard(VariantSet variants) {
  if (variants == 0) return;
  saved_ = ReadSettings();
  for (size_t row = 0; row < CudaVariants().size(); ++row) {
    if (variants & (VariantSet{1} << row)) MakeVariant(row);
  }
}

CudaVariantGuard::~CudaVariantGuard() {
  if (saved_.empty()) return;
  try {
    WriteSettings(saved_);
  } catch (const std::exception&) {
    // A setter that refuses its own earlier value: nothing better to do in a
    // destructor (none does in torch 2.11).
  }
}

std::string DescribeCudaSettings() {
  const std::vector<int> values = ReadSettings();
  std::string out;
  size_t i = 0;
#define DIVFUZZ_CUDA_SETTING(name, getter, setter) \
  absl::StrAppend(&out, i == 0 ? "" : " ", #name, "=", values[i]);  \
  ++i;
#include "exec/cuda_variants.def"
  return out;
}

}  // namespace divfuzz::exec
