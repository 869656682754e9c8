#include "oracles/verdict.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace divfuzz::oracles {

absl::string_view ClassName(DivergenceClass c) {
  switch (c) {
    case DivergenceClass::kCrash:
      return "crash";
    case DivergenceClass::kHang:
      return "hang";
    case DivergenceClass::kErrorSplit:
      return "error_split";
    case DivergenceClass::kDtypeGap:
      return "dtype_gap";
    case DivergenceClass::kMetaSplit:
      return "meta_split";
    case DivergenceClass::kClassSplit:
      return "class_split";
    case DivergenceClass::kExactMismatch:
      return "exact_mismatch";
    case DivergenceClass::kTolerance:
      return "tolerance";
    case DivergenceClass::kNondeterminism:
      return "nondeterminism";
  }
  return "?";
}

std::vector<const Divergence*> Verdict::Roots() const {
  std::vector<const Divergence*> roots;
  for (const Divergence& d : divergences) {
    if (d.root) roots.push_back(&d);
  }
  return roots;
}

std::string Signature(const Divergence& d) {
  return absl::StrCat(d.op, "|", d.dtype, "|", ClassName(d.cls), "|", d.wrong_side);
}

int SeverityRank(const Divergence& d) {
  if (d.cls == DivergenceClass::kCrash) return 1;
  if (d.cls == DivergenceClass::kHang) return 2;
  if (d.tier == "expected") return 7;
  if (d.tier == "dtype_gap" || d.cls == DivergenceClass::kDtypeGap) return 6;
  if (d.tier == "bug") return d.cls == DivergenceClass::kTolerance ? 4 : 3;
  return 5;
}

absl::string_view SeverityName(int rank) {
  switch (rank) {
    case 1:
      return "crash";
    case 2:
      return "hang";
    case 3:
      return "bug-split";
    case 4:
      return "bug-tolerance";
    case 5:
      return "divergence";
    case 6:
      return "dtype-gap";
    default:
      return "expected";
  }
}

}  // namespace divfuzz::oracles
