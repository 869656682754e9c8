// Debian's Abseil is built with its own absl::string_view
// (ABSL_OPTION_USE_STD_STRING_VIEW 0), which std::string_view does not convert
// to implicitly; Sv() bridges that build and one where the two are the same.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace divfuzz::graph {

inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace divfuzz::graph
