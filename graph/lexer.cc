#include "graph/lexer.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace divfuzz::graph {
namespace {

// ASCII only: <cctype> is locale-dependent and undefined for negative chars.
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsIdentStart(char c) { return IsAlpha(c) || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }
bool IsNameChar(char c) { return IsIdentChar(c) || c == '.'; }

// Printable ASCII kept, everything else as \xHH, at most max_len source bytes.
std::string Escape(std::string_view s, size_t max_len = 32) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_len; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += absl::StrFormat("\\x%02X", c);
    }
  }
  if (s.size() > max_len) out += "...";
  return out;
}

std::string Quote(std::string_view s) { return absl::StrCat("'", Escape(s), "'"); }

// Digit runs: returns the end of [a-run of pred] starting at i.
template <typename Pred>
size_t Skip(std::string_view s, size_t i, Pred pred) {
  while (i < s.size() && pred(s[i])) ++i;
  return i;
}

std::string FloatOutOfRange(std::string_view text) {
  return absl::StrCat("float literal out of range: expected a value in double range, got ",
                      Quote(text));
}

// body is unsigned and begins with a digit or '.'; negation happens later.
std::string ParseDecimal(std::string_view body, std::string_view text, bool ints_as_double,
                         NumberLiteral* out) {
  size_t i = Skip(body, 0, IsDigit);
  size_t digits = i;
  bool is_float = false;
  if (i < body.size() && body[i] == '.') {
    is_float = true;
    size_t j = Skip(body, i + 1, IsDigit);
    digits += j - i - 1;
    i = j;
  }
  if (digits == 0) return absl::StrCat("expected number, got ", Quote(text));
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    is_float = true;
    size_t j = i + 1;
    if (j < body.size() && (body[j] == '+' || body[j] == '-')) ++j;
    size_t k = Skip(body, j, IsDigit);
    if (k == j) return absl::StrCat("expected digits in the exponent, got ", Quote(text));
    i = k;
  }
  if (i != body.size()) return absl::StrCat("expected number, got ", Quote(text));
  out->is_float = is_float;
  const char* end = body.data() + body.size();
  if (is_float || ints_as_double) {
    auto r = std::from_chars(body.data(), end, out->f, std::chars_format::general);
    if (r.ec == std::errc::result_out_of_range) return FloatOutOfRange(text);
    if (r.ec != std::errc() || r.ptr != end) {
      return absl::StrCat("expected number, got ", Quote(text));
    }
    return "";
  }
  uint64_t u = 0;
  auto r = std::from_chars(body.data(), end, u, 10);
  if (r.ec == std::errc::result_out_of_range) {
    return absl::StrCat("integer literal out of range: expected a value in int64 range, got ",
                        Quote(text));
  }
  out->i = static_cast<int64_t>(u);  // range-checked by the caller
  return r.ec == std::errc() && r.ptr == end ? ""
                                             : absl::StrCat("expected number, got ", Quote(text));
}

// digits follows "0x": hex integer, or hex float with '.' and/or 'p'.
std::string ParseHex(std::string_view digits, std::string_view text, bool ints_as_double,
                     NumberLiteral* out) {
  size_t i = Skip(digits, 0, IsHexDigit);
  size_t n = i;
  bool is_float = false;
  if (i < digits.size() && digits[i] == '.') {
    is_float = true;
    size_t j = Skip(digits, i + 1, IsHexDigit);
    n += j - i - 1;
    i = j;
  }
  if (i < digits.size() && (digits[i] == 'p' || digits[i] == 'P')) {
    is_float = true;
    size_t j = i + 1;
    if (j < digits.size() && (digits[j] == '+' || digits[j] == '-')) ++j;
    size_t k = Skip(digits, j, IsDigit);
    i = k == j ? std::string_view::npos : k;  // 'p' needs decimal digits
  }
  if (n == 0 || i != digits.size()) {
    return absl::StrCat(is_float ? "expected hex float like 0x1.8p-3, got "
                                 : "expected hex integer like 0x1f, got ",
                        Quote(text));
  }
  out->is_float = is_float;
  const char* end = digits.data() + digits.size();
  if (is_float || ints_as_double) {
    auto r = std::from_chars(digits.data(), end, out->f, std::chars_format::hex);
    if (r.ec == std::errc::result_out_of_range) return FloatOutOfRange(text);
    if (r.ec != std::errc() || r.ptr != end) {
      return absl::StrCat("expected hex float like 0x1.8p-3, got ", Quote(text));
    }
    return "";
  }
  uint64_t u = 0;
  auto r = std::from_chars(digits.data(), end, u, 16);
  if (r.ec == std::errc::result_out_of_range) {
    return absl::StrCat("integer literal out of range: expected a value in int64 range, got ",
                        Quote(text));
  }
  out->i = static_cast<int64_t>(u);
  return r.ec == std::errc() && r.ptr == end
             ? ""
             : absl::StrCat("expected hex integer like 0x1f, got ", Quote(text));
}

}  // namespace

std::string DescribeToken(const Token& token) {
  switch (token.kind) {
    case Token::Kind::kEnd:
      return "end of file";
    case Token::Kind::kNewline:
      return "end of line";
    default:
      return Quote(token.text);
  }
}

int Lexer::Col(size_t at) const {
  size_t col = at - line_start_ + 1;
  return col > static_cast<size_t>(std::numeric_limits<int>::max())
             ? std::numeric_limits<int>::max()
             : static_cast<int>(col);
}

Token Lexer::Make(Token::Kind kind, size_t start) {
  Token t;
  t.kind = kind;
  t.text = text_.substr(start, pos_ - start);
  t.line = line_;
  t.col = Col(start);
  return t;
}

Token Lexer::Error(size_t at, std::string message) {
  failed_ = true;
  error_ = Token();
  error_.kind = Token::Kind::kError;
  error_.text = text_.substr(at, at < text_.size() ? 1 : 0);
  error_.str = std::move(message);
  error_.line = line_;
  error_.col = Col(at);
  return error_;
}

Token Lexer::Next() {
  if (failed_) return error_;
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '#') {
      size_t nl = text_.find('\n', pos_);
      pos_ = nl == std::string_view::npos ? text_.size() : nl;
    } else {
      break;
    }
  }
  size_t start = pos_;
  if (pos_ >= text_.size()) return Make(Token::Kind::kEnd, start);
  char c = text_[pos_];
  char next = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
  if (c == '\n') {
    ++pos_;
    Token t = Make(Token::Kind::kNewline, start);
    ++line_;
    line_start_ = pos_;
    return t;
  }
  if (c == '%') {
    pos_ = Skip(text_, pos_ + 1, IsNameChar);
    if (pos_ == start + 1) {
      Token got;
      got.kind = next == '\n' ? Token::Kind::kNewline : Token::Kind::kOther;
      got.text = text_.substr(pos_, 1);
      if (pos_ >= text_.size()) got.kind = Token::Kind::kEnd;
      return Error(pos_, absl::StrCat("expected value name ([A-Za-z0-9_.]+) after '%', got ",
                                      DescribeToken(got)));
    }
    return Make(Token::Kind::kName, start);
  }
  if (c == '"') return LexString(start);
  if (IsDigit(c) || (c == '.' && IsDigit(next)) ||
      ((c == '-' || c == '+') && (IsDigit(next) || next == '.' || IsAlpha(next)))) {
    return LexNumber(start);
  }
  if (IsIdentStart(c)) {
    pos_ = Skip(text_, pos_, IsIdentChar);
    return Make(Token::Kind::kIdent, start);
  }
  if (c == ':' && next == ':') {
    pos_ += 2;
    return Make(Token::Kind::kPunct, start);
  }
  ++pos_;
  switch (c) {
    case '=':
    case ',':
    case ':':
    case '.':
    case '(':
    case ')':
    case '[':
    case ']':
      return Make(Token::Kind::kPunct, start);
    default:
      return Make(Token::Kind::kOther, start);
  }
}

Token Lexer::LexString(size_t start) {
  std::string value;
  size_t i = start + 1;
  while (true) {
    if (i >= text_.size() || text_[i] == '\n') {
      Token got;
      got.kind = i >= text_.size() ? Token::Kind::kEnd : Token::Kind::kNewline;
      return Error(i, absl::StrCat("expected '\"' to close the string, got ", DescribeToken(got)));
    }
    char c = text_[i];
    if (c == '"') break;
    if (c != '\\') {
      value += c;
      ++i;
      continue;
    }
    char e = i + 1 < text_.size() ? text_[i + 1] : '\0';
    if (e == '"' || e == '\\') {
      value += e;
      i += 2;
    } else if (e == 'n' || e == 't' || e == 'r') {
      value += e == 'n' ? '\n' : (e == 't' ? '\t' : '\r');
      i += 2;
    } else if (e == 'x' && i + 3 < text_.size() && IsHexDigit(text_[i + 2]) &&
               IsHexDigit(text_[i + 3])) {
      unsigned v = 0;
      std::from_chars(text_.data() + i + 2, text_.data() + i + 4, v, 16);
      value += static_cast<char>(v);
      i += 4;
    } else {
      return Error(i, absl::StrCat("expected escape (\\\" \\\\ \\n \\t \\r \\xHH), got ",
                                   Quote(text_.substr(i, 2))));
    }
  }
  pos_ = i + 1;
  Token t = Make(Token::Kind::kString, start);
  t.str = std::move(value);
  return t;
}

Token Lexer::LexNumber(size_t start) {
  size_t i = start;
  if (text_[i] == '-' || text_[i] == '+') ++i;
  bool hex =
      i + 1 < text_.size() && text_[i] == '0' && (text_[i + 1] == 'x' || text_[i + 1] == 'X');
  // Like a C pp-number: a sign continues the token right after an exponent
  // letter (e/E in decimal, p/P in both), so 1e-3 and 0x1p-3 are one token.
  while (i < text_.size()) {
    char c = text_[i];
    if (IsNameChar(c)) {
      ++i;
      continue;
    }
    char prev = i > start ? text_[i - 1] : '\0';
    bool exp_letter = prev == 'p' || prev == 'P' || (!hex && (prev == 'e' || prev == 'E'));
    if ((c == '+' || c == '-') && exp_letter) {
      ++i;
      continue;
    }
    break;
  }
  pos_ = i;
  return Make(Token::Kind::kNumber, start);
}

std::optional<double> ParseNonFiniteWord(std::string_view word) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  auto equals = [&](std::string_view want) {
    if (word.size() != want.size()) return false;
    for (size_t i = 0; i < word.size(); ++i) {
      if (lower(word[i]) != want[i]) return false;
    }
    return true;
  };
  if (equals("inf")) return HUGE_VAL;
  if (equals("nan")) return std::numeric_limits<double>::quiet_NaN();
  // nan_0xF: the NaN whose float64 fraction field (the 52 bits below the
  // exponent) is F, nonzero; the printer writes it for every NaN but the
  // canonical quiet one (F = 0x8000000000000).
  if (word.size() > 6 && word.size() <= 6 + 13 && lower(word[0]) == 'n' && lower(word[1]) == 'a' &&
      lower(word[2]) == 'n' && word.substr(3, 3) == "_0x") {
    uint64_t frac = 0;
    for (char c : word.substr(6)) {
      if (!IsHexDigit(c)) return std::nullopt;
      const char l = lower(c);
      frac = frac << 4 | static_cast<uint64_t>(IsDigit(l) ? l - '0' : l - 'a' + 10);
    }
    if (frac == 0 || frac >> 52 != 0) return std::nullopt;
    const uint64_t bits = uint64_t{0x7ff} << 52 | frac;
    double v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  }
  return std::nullopt;
}

std::string ParseNumber(std::string_view text, bool ints_as_double, NumberLiteral* out) {
  *out = NumberLiteral();
  bool neg = false;
  std::string_view body = text;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  std::string err;
  if (std::optional<double> word = ParseNonFiniteWord(body)) {
    out->is_float = true;
    out->f = *word;
  } else if (body.size() >= 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    err = ParseHex(body.substr(2), text, ints_as_double, out);
  } else if (!body.empty() && (IsDigit(body[0]) || body[0] == '.')) {
    err = ParseDecimal(body, text, ints_as_double, out);
  } else {
    err = absl::StrCat("expected number (", kNumberSpellings, "), got ", Quote(text));
  }
  if (!err.empty()) return err;
  if (out->is_float || ints_as_double) {
    if (neg) out->f = std::copysign(out->f, -1.0);  // -nan: the sign bit, payload kept
    return "";
  }
  // out->i holds the magnitude's bits; int64 takes [-2^63, 2^63 - 1].
  uint64_t u = static_cast<uint64_t>(out->i);
  uint64_t limit = neg ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (u > limit) {
    return absl::StrCat("integer literal out of range: expected a value in int64 range, got ",
                        Quote(text));
  }
  out->i = neg ? static_cast<int64_t>(0 - u) : static_cast<int64_t>(u);
  return "";
}

}  // namespace divfuzz::graph
