#include "graph/parser.h"

#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/absl_compat.h"
#include "graph/lexer.h"
#include "graph/validate.h"

namespace divfuzz::graph {
namespace {

#define DFZ_RETURN_IF_ERROR(expr)      \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (0)

using Kind = Token::Kind;

constexpr char kDTypeList[] = "dtype (f16, bf16, f32, f64, c64, c128, i8, i16, i32, i64, u8, bool)";

class Parser {
 public:
  Parser(std::string_view text, std::string_view filename) : lexer_(text), filename_(filename) {}

  absl::StatusOr<Program> Parse();

 private:
  const Token& Peek(size_t k = 0) {
    while (ahead_.size() <= k) ahead_.push_back(lexer_.Next());
    return ahead_[k];
  }
  Token Take() {
    Peek();
    Token t = std::move(ahead_.front());
    ahead_.pop_front();
    return t;
  }
  bool AtPunct(std::string_view p, size_t k = 0) {
    const Token& t = Peek(k);
    return t.kind == Kind::kPunct && t.text == p;
  }
  bool AtIdent(std::string_view w) {
    const Token& t = Peek();
    return t.kind == Kind::kIdent && t.text == w;
  }

  absl::Status ErrorAt(const Token& at, std::string_view message) {
    return absl::InvalidArgumentError(
        absl::StrCat(LocPrefix(filename_, {at.line, at.col}), Sv(message)));
  }
  // "expected WHAT, got TOKEN"; a lexer error token reports its own message.
  absl::Status Expected(const Token& got, std::string_view what) {
    if (got.kind == Kind::kError) return ErrorAt(got, got.str);
    return ErrorAt(got, absl::StrCat("expected ", Sv(what), ", got ", DescribeToken(got)));
  }
  absl::Status ExpectPunct(std::string_view p, std::string_view what) {
    if (!AtPunct(p)) return Expected(Peek(), what);
    Take();
    return absl::OkStatus();
  }
  absl::Status ExpectEndOfLine() {
    const Token& t = Peek();
    if (t.kind == Kind::kNewline) {
      Take();
    } else if (t.kind != Kind::kEnd) {
      return Expected(t, "end of line");
    }
    return absl::OkStatus();
  }
  void SkipNewlines() {
    while (Peek().kind == Kind::kNewline) Take();
  }

  absl::Status ParseHeader();
  absl::Status ParseInput(Program* program);
  absl::Status ParseShape(std::vector<int64_t>* shape);
  absl::Status ParsePayload(Payload* payload);
  absl::Status ParseGeneratorParams(const Token& kind_token, Payload* payload);
  absl::Status ParsePayloadNumber(double* value);
  absl::Status ParseSeed(uint64_t* seed);
  absl::Status ParseNode(Program* program);
  absl::Status ParseOpName(Node* node);
  absl::Status ParseArgs(std::vector<Argument>* args);
  absl::Status ParseLiteral(int depth, Literal* literal);
  absl::Status ParseOutput(Program* program);

  Lexer lexer_;
  std::deque<Token> ahead_;
  std::string_view filename_;
};

absl::StatusOr<Program> Parser::Parse() {
  Program program;
  DFZ_RETURN_IF_ERROR(ParseHeader());
  bool have_output = false;
  while (true) {
    SkipNewlines();
    const Token& t = Peek();
    if (t.kind == Kind::kEnd) break;
    if (have_output) return Expected(t, "end of file after the output statement");
    if (AtIdent("input")) {
      DFZ_RETURN_IF_ERROR(ParseInput(&program));
    } else if (AtIdent("output")) {
      DFZ_RETURN_IF_ERROR(ParseOutput(&program));
      have_output = true;
    } else if (t.kind == Kind::kName) {
      DFZ_RETURN_IF_ERROR(ParseNode(&program));
    } else {
      return Expected(t, "statement ('input', 'output' or '%name = op(...)')");
    }
  }
  if (!have_output) return Expected(Peek(), "'output' statement");
  DFZ_RETURN_IF_ERROR(ValidateProgram(program, filename_));
  return program;
}

absl::Status Parser::ParseHeader() {
  SkipNewlines();
  if (!AtIdent("divfuzz")) return Expected(Peek(), "'divfuzz v1' header");
  Take();
  if (!AtIdent("v1")) return Expected(Peek(), "format version 'v1' after 'divfuzz'");
  Take();
  return ExpectEndOfLine();
}

absl::Status Parser::ParseInput(Program* program) {
  Token keyword = Take();
  Input input;
  input.loc = {keyword.line, keyword.col};
  if (Peek().kind != Kind::kName) return Expected(Peek(), "input name '%name' after 'input'");
  input.name = std::string(Take().text.substr(1));
  DFZ_RETURN_IF_ERROR(ExpectPunct(":", "':' after the input name"));
  const Token& t = Peek();
  std::optional<DType> dtype;
  if (t.kind == Kind::kIdent) dtype = ParseDType(t.text);
  if (!dtype) return Expected(t, kDTypeList);
  Take();
  input.type.dtype = *dtype;
  DFZ_RETURN_IF_ERROR(ExpectPunct("[", "'[' to start the shape"));
  DFZ_RETURN_IF_ERROR(ParseShape(&input.type.shape));
  if (AtIdent("layout")) {
    Take();
    DFZ_RETURN_IF_ERROR(ExpectPunct("=", "'=' after 'layout'"));
    constexpr char kLayouts[] = "layout (contiguous, transposed, strided or channels_last)";
    const Token& l = Peek();
    std::optional<Layout> layout;
    if (l.kind == Kind::kIdent) layout = ParseLayout(l.text);
    if (!layout) return Expected(l, kLayouts);
    Take();
    input.layout = *layout;
  }
  DFZ_RETURN_IF_ERROR(ExpectPunct("=", "'layout=' or '=' after the input type"));
  DFZ_RETURN_IF_ERROR(ParsePayload(&input.payload));
  DFZ_RETURN_IF_ERROR(ExpectEndOfLine());
  program->inputs.push_back(std::move(input));
  return absl::OkStatus();
}

absl::Status Parser::ParseShape(std::vector<int64_t>* shape) {
  if (AtPunct("]")) {
    Take();
    return absl::OkStatus();
  }
  while (true) {
    const Token& t = Peek();
    if (t.kind != Kind::kNumber) return Expected(t, "integer dimension");
    NumberLiteral n;
    std::string err = ParseNumber(t.text, /*ints_as_double=*/false, &n);
    if (!err.empty()) return ErrorAt(t, err);
    if (n.is_float) return Expected(t, "integer dimension");
    shape->push_back(n.i);
    Take();
    if (AtPunct("]")) {
      Take();
      return absl::OkStatus();
    }
    DFZ_RETURN_IF_ERROR(ExpectPunct(",", "']' after shape dimensions"));
  }
}

absl::Status Parser::ParsePayload(Payload* payload) {
  constexpr char kWhat[] =
      "payload (fill, values, uniform, normal, special, limits, edges, ties, dynamic, planted, "
      "singular, near_singular, rank_deficient, ill_conditioned, spd or scaled)";
  Token kind = Peek();
  if (kind.kind != Kind::kIdent) return Expected(kind, kWhat);
  std::optional<Payload::Kind> parsed = ParsePayloadKind(kind.text);
  if (!parsed) return Expected(kind, kWhat);
  payload->kind = *parsed;
  payload->a = PayloadParamDefault(*parsed);
  Take();
  DFZ_RETURN_IF_ERROR(ExpectPunct("(", absl::StrCat("'(' after '", Sv(kind.text), "'")));
  switch (payload->kind) {
    case Payload::Kind::kFill: {
      double v = 0;
      DFZ_RETURN_IF_ERROR(ParsePayloadNumber(&v));
      payload->values = {v};
      return ExpectPunct(")", "')' after the fill value");
    }
    case Payload::Kind::kValues:
      if (AtPunct(")")) {
        Take();
        return absl::OkStatus();
      }
      while (true) {
        double v = 0;
        DFZ_RETURN_IF_ERROR(ParsePayloadNumber(&v));
        payload->values.push_back(v);
        if (AtPunct(")")) {
          Take();
          return absl::OkStatus();
        }
        DFZ_RETURN_IF_ERROR(ExpectPunct(",", "',' or ')' after a value"));
      }
    default:
      return ParseGeneratorParams(kind, payload);
  }
}

// name=value parameters of the generators, any order, each at most once:
// seed, plus low/high (uniform), mean/std (normal) or the kind's one parameter.
absl::Status Parser::ParseGeneratorParams(const Token& kind_token, Payload* payload) {
  const bool uniform = payload->kind == Payload::Kind::kUniform;
  const bool normal = payload->kind == Payload::Kind::kNormal;
  const std::string_view param = PayloadParamName(payload->kind);
  std::string_view a_name = uniform ? "low" : normal ? "mean" : param;
  std::string_view b_name = uniform ? "high" : "std";
  std::string what = uniform          ? "parameter 'seed', 'low' or 'high'"
                     : normal         ? "parameter 'seed', 'mean' or 'std'"
                     : !param.empty() ? absl::StrCat("parameter 'seed' or '", Sv(param), "'")
                                      : "parameter 'seed'";
  bool seen[3] = {false, false, false};
  if (AtPunct(")")) {
    Take();
    return absl::OkStatus();
  }
  while (true) {
    const Token& key = Peek();
    int which = -1;
    if (key.kind == Kind::kIdent) {
      if (key.text == "seed") which = 0;
      if (!a_name.empty() && key.text == a_name) which = 1;
      if ((uniform || normal) && key.text == b_name) which = 2;
    }
    if (which < 0) return Expected(key, what);
    if (seen[which]) {
      return Expected(key,
                      absl::StrCat("each parameter of '", Sv(kind_token.text), "' at most once"));
    }
    seen[which] = true;
    std::string name(key.text);
    Take();
    DFZ_RETURN_IF_ERROR(ExpectPunct("=", absl::StrCat("'=' after '", name, "'")));
    if (which == 0) {
      DFZ_RETURN_IF_ERROR(ParseSeed(&payload->seed));
    } else {
      DFZ_RETURN_IF_ERROR(ParsePayloadNumber(which == 1 ? &payload->a : &payload->b));
    }
    if (AtPunct(")")) {
      Take();
      return absl::OkStatus();
    }
    DFZ_RETURN_IF_ERROR(ExpectPunct(",", "',' or ')' after a parameter"));
  }
}

absl::Status Parser::ParsePayloadNumber(double* value) {
  const Token& t = Peek();
  if (t.kind == Kind::kNumber) {
    NumberLiteral n;
    std::string err = ParseNumber(t.text, /*ints_as_double=*/true, &n);
    if (!err.empty()) return ErrorAt(t, err);
    *value = n.f;
  } else if (t.kind == Kind::kIdent && ParseNonFiniteWord(t.text)) {
    *value = *ParseNonFiniteWord(t.text);
  } else if (t.kind == Kind::kIdent && (t.text == "True" || t.text == "true")) {
    *value = 1;
  } else if (t.kind == Kind::kIdent && (t.text == "False" || t.text == "false")) {
    *value = 0;
  } else {
    return Expected(t, absl::StrCat("number (", kNumberSpellings, ")"));
  }
  Take();
  return absl::OkStatus();
}

absl::Status Parser::ParseSeed(uint64_t* seed) {
  constexpr char kWhat[] = "seed (an integer in [0, 18446744073709551615])";
  const Token& t = Peek();
  if (t.kind != Kind::kNumber) return Expected(t, kWhat);
  const char* end = t.text.data() + t.text.size();
  auto r = std::from_chars(t.text.data(), end, *seed, 10);
  if (r.ec != std::errc() || r.ptr != end) return Expected(t, kWhat);
  Take();
  return absl::OkStatus();
}

absl::Status Parser::ParseNode(Program* program) {
  Node node;
  node.loc = {Peek().line, Peek().col};
  while (true) {
    if (Peek().kind != Kind::kName) return Expected(Peek(), "result name '%name'");
    node.results.emplace_back(Take().text.substr(1));
    if (!AtPunct(",")) break;
    Take();
  }
  DFZ_RETURN_IF_ERROR(ExpectPunct("=", "',' or '=' after a result name"));
  DFZ_RETURN_IF_ERROR(ParseOpName(&node));
  DFZ_RETURN_IF_ERROR(ExpectPunct("(", "'(' after the op name"));
  DFZ_RETURN_IF_ERROR(ParseArgs(&node.args));
  DFZ_RETURN_IF_ERROR(ExpectEndOfLine());
  program->nodes.push_back(std::move(node));
  return absl::OkStatus();
}

absl::Status Parser::ParseOpName(Node* node) {
  if (Peek().kind != Kind::kIdent) return Expected(Peek(), "op name like 'aten::add'");
  std::string ns(Take().text);
  DFZ_RETURN_IF_ERROR(ExpectPunct("::", "'::' in the op name (like 'aten::add')"));
  if (Peek().kind != Kind::kIdent) return Expected(Peek(), "op name after '::'");
  node->op = absl::StrCat(ns, "::", Sv(Take().text));
  if (AtPunct(".")) {
    Take();
    if (Peek().kind != Kind::kIdent) return Expected(Peek(), "overload name after '.'");
    node->overload = std::string(Take().text);
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseArgs(std::vector<Argument>* args) {
  if (AtPunct(")")) {
    Take();
    return absl::OkStatus();
  }
  bool named = false;
  while (true) {
    Argument arg;
    if (Peek().kind == Kind::kIdent && AtPunct("=", 1)) {
      arg.name = std::string(Take().text);
      Take();
      named = true;
    } else if (named) {
      return Expected(Peek(), "named argument 'name=value' (positional arguments come first)");
    }
    DFZ_RETURN_IF_ERROR(ParseLiteral(0, &arg.value));
    args->push_back(std::move(arg));
    if (AtPunct(")")) {
      Take();
      return absl::OkStatus();
    }
    DFZ_RETURN_IF_ERROR(ExpectPunct(",", "',' or ')' after an argument"));
  }
}

absl::Status Parser::ParseLiteral(int depth, Literal* literal) {
  const Token& t = Peek();
  switch (t.kind) {
    case Kind::kNumber: {
      NumberLiteral n;
      std::string err = ParseNumber(t.text, /*ints_as_double=*/false, &n);
      if (!err.empty()) return ErrorAt(t, err);
      *literal = n.is_float ? Literal::Float(n.f) : Literal::Int(n.i);
      break;
    }
    case Kind::kName:
      *literal = Literal::Value(std::string(t.text.substr(1)));
      break;
    case Kind::kString:
      *literal = Literal::String(t.str);
      break;
    case Kind::kIdent:
      if (t.text == "True" || t.text == "true") {
        *literal = Literal::Bool(true);
      } else if (t.text == "False" || t.text == "false") {
        *literal = Literal::Bool(false);
      } else if (t.text == "None") {
        *literal = Literal::None();
      } else if (std::optional<double> word = ParseNonFiniteWord(t.text)) {
        *literal = Literal::Float(*word);
      } else if (auto dtype = ParseDType(t.text)) {
        *literal = Literal::OfDType(*dtype);
      } else {
        return Expected(t, absl::StrCat("argument value (number ", kNumberSpellings,
                                        "; True, False, None, string, dtype, %name or list)"));
      }
      break;
    case Kind::kPunct:
      if (t.text == "[") {
        if (depth >= kMaxListDepth) {
          return Expected(t, absl::StrCat("list nesting depth at most ", kMaxListDepth));
        }
        Take();
        *literal = Literal::List({});
        if (AtPunct("]")) {
          Take();
          return absl::OkStatus();
        }
        while (true) {
          Literal item;
          DFZ_RETURN_IF_ERROR(ParseLiteral(depth + 1, &item));
          literal->list.push_back(std::move(item));
          if (AtPunct("]")) {
            Take();
            return absl::OkStatus();
          }
          DFZ_RETURN_IF_ERROR(ExpectPunct(",", "',' or ']' after a list element"));
        }
      }
      [[fallthrough]];
    default:
      return Expected(t,
                      "argument value (number, True, False, None, string, dtype, %name or list)");
  }
  Take();
  return absl::OkStatus();
}

absl::Status Parser::ParseOutput(Program* program) {
  Token keyword = Take();
  program->output_loc = {keyword.line, keyword.col};
  while (true) {
    if (Peek().kind != Kind::kName) return Expected(Peek(), "output name '%name'");
    program->outputs.emplace_back(Take().text.substr(1));
    if (!AtPunct(",")) break;
    Take();
  }
  return ExpectEndOfLine();
}

#undef DFZ_RETURN_IF_ERROR

}  // namespace

absl::StatusOr<Program> ParseProgram(std::string_view text, std::string_view filename) {
  return Parser(text, filename).Parse();
}

}  // namespace divfuzz::graph
