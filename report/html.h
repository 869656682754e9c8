// Escaping and path helpers for the HTML report.
#pragma once

#include <string>
#include <string_view>

namespace divfuzz::report {

// Escapes & < > " ' so the text is safe in element content and in quoted
// attribute values alike.
std::string HtmlEscape(std::string_view text);

// Percent-encodes every byte of a relative URL path except unreserved
// characters and '/', so file names with spaces, '#', '?' or '%' link right.
std::string UrlPathEscape(std::string_view path);

// The path of `to` relative to the folder `from_dir`; both absolute and
// normalized (no "." or ".." segments, no trailing '/'). E.g.
// ("/a/campaign", "/a/findings/x/repro.py") -> "../findings/x/repro.py".
std::string RelativePath(const std::string& from_dir, const std::string& to);

// realpath(3) of an existing path; empty when it does not exist.
std::string RealPath(const std::string& path);

}  // namespace divfuzz::report
