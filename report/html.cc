#include "report/html.h"

#include <limits.h>
#include <stdlib.h>

#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace divfuzz::report {

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string UrlPathEscape(std::string_view path) {
  std::string out;
  for (unsigned char c : path) {
    const bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~' || c == '/';
    if (keep) {
      out += static_cast<char>(c);
    } else {
      out += absl::StrFormat("%%%02X", c);
    }
  }
  return out;
}

std::string RelativePath(const std::string& from_dir, const std::string& to) {
  std::vector<std::string> from_parts = absl::StrSplit(from_dir, '/', absl::SkipEmpty());
  std::vector<std::string> to_parts = absl::StrSplit(to, '/', absl::SkipEmpty());
  size_t common = 0;
  while (common < from_parts.size() && common < to_parts.size() &&
         from_parts[common] == to_parts[common]) {
    ++common;
  }
  std::vector<std::string> rel;
  for (size_t i = common; i < from_parts.size(); ++i) rel.push_back("..");
  for (size_t i = common; i < to_parts.size(); ++i) rel.push_back(to_parts[i]);
  return rel.empty() ? "." : absl::StrJoin(rel, "/");
}

std::string RealPath(const std::string& path) {
  // realpath(3) rather than std::filesystem: libtorch.so exports its own
  // std::filesystem symbols and divfuzz links it.
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return "";
  return buf;
}

}  // namespace divfuzz::report
