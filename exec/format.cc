#include "exec/format.h"

#include <ATen/ops/view_as_real.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "exec/dtype_convert.h"
#include "graph/printer.h"

namespace divfuzz::exec {

std::string FormatTensor(const at::Tensor& t, size_t max_elements) {
  if (!t.defined()) return "undefined";
  const auto dtype = FromScalarType(t.scalar_type());
  std::string out = absl::StrCat(dtype ? std::string(graph::DTypeName(*dtype)) : "?", "[",
                                 absl::StrJoin(t.sizes(), ","), "] = [");
  const bool complex = at::isComplexType(t.scalar_type());
  at::Tensor d = complex ? at::view_as_real(t.contiguous()) : t;
  d = d.to(at::kDouble).contiguous().reshape({-1});
  const double* p = d.data_ptr<double>();
  const int64_t n = d.numel();
  const int64_t step = complex ? 2 : 1;
  std::vector<std::string> items;
  for (int64_t i = 0; i < n && items.size() < max_elements; i += step) {
    items.push_back(complex ? absl::StrCat("(", graph::FormatFloat(p[i]), ", ",
                                           graph::FormatFloat(p[i + 1]), ")")
                            : graph::FormatFloat(p[i]));
  }
  absl::StrAppend(&out, absl::StrJoin(items, ", "),
                  n / step > static_cast<int64_t>(max_elements) ? ", ...]" : "]");
  return out;
}

}  // namespace divfuzz::exec
