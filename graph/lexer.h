// The .dfz tokenizer, internal to graph/ (the parser's front half). It never
// fails: bad input becomes a kOther token (one unexpected byte) or a kError
// token carrying its message, and the parser decides what to report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace divfuzz::graph {

struct Token {
  enum class Kind {
    kEnd,      // end of input
    kNewline,  // '\n' (statements end at line ends)
    kIdent,    // [A-Za-z_][A-Za-z0-9_]*: keywords, dtypes, op name parts, True, inf ...
    kName,     // %name; text includes the '%'
    kNumber,   // 12, -1.5e3, 0x1.8p-3, -inf: checked by ParseNumber, not here
    kString,   // "..."; str holds the decoded bytes
    kPunct,    // = , : :: . ( ) [ ]
    kOther,    // one byte that starts no token
    kError,    // a malformed string or name; str holds the message
  };
  Kind kind = Kind::kEnd;
  std::string_view text;  // the source bytes of the token
  std::string str;
  int line = 1;
  int col = 1;
};

// How an error message names a token: 'text' (escaped, truncated), or
// "end of line" / "end of file".
std::string DescribeToken(const Token& token);

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}
  Token Next();

 private:
  Token Make(Token::Kind kind, size_t start);
  Token Error(size_t at, std::string message);
  int Col(size_t at) const;
  Token LexString(size_t start);
  Token LexNumber(size_t start);

  std::string_view text_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
  bool failed_ = false;  // after a kError, only kError again
  Token error_;
};

struct NumberLiteral {
  bool is_float = false;
  int64_t i = 0;
  double f = 0;  // the value when is_float (or when parsed with ints_as_double)
};

// How errors name the number forms (docs/FORMAT.md, "Literals").
inline constexpr char kNumberSpellings[] =
    "like 12, -1.5e3, 0x1f, 0x1.8p-3, inf, -inf or nan; inf and nan in any case";

// "inf" or "nan" in any capitalisation (Inf, NaN, INF ...), without a sign:
// HUGE_VAL or the quiet NaN; "nan_0xF" (F: 1 to 13 hex digits, nonzero, below
// 2^52) is the NaN whose float64 fraction field is F; nullopt for any other word.
std::optional<double> ParseNonFiniteWord(std::string_view word);

// Parses a kNumber token's text (or inf/nan in any case, with optional sign). A number
// with '.', an exponent, 'p', inf or nan is a float, otherwise an integer
// (decimal or 0x hex). With ints_as_double integers are read as doubles
// (correctly rounded, no int64 range limit). Returns "" or an error message.
std::string ParseNumber(std::string_view text, bool ints_as_double, NumberLiteral* out);

}  // namespace divfuzz::graph
