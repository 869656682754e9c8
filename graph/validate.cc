#include "graph/validate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "graph/absl_compat.h"
#include "graph/gradient.h"
#include "graph/printer.h"

namespace divfuzz::graph {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }

bool IsIdent(std::string_view s) {
  if (s.empty() || !IsIdentStart(s[0])) return false;
  for (char c : s) {
    if (!IsIdentChar(c)) return false;
  }
  return true;
}

// What follows '%' in the text: [A-Za-z0-9_.]+.
bool IsValueName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsIdentChar(c) && c != '.') return false;
  }
  return true;
}

// "namespace::name", both identifiers.
bool IsOpName(std::string_view s) {
  size_t sep = s.find("::");
  return sep != std::string_view::npos && IsIdent(s.substr(0, sep)) && IsIdent(s.substr(sep + 2));
}

std::string RangeText(DType dtype) {
  switch (dtype) {
    case DType::kI64:
      return "[-9223372036854775808, 9223372036854775807]";
    case DType::kBool:
      return "{0, 1}";
    default:
      return absl::StrCat("[", static_cast<int64_t>(MinValue(dtype)), ", ",
                          static_cast<int64_t>(MaxFinite(dtype)), "]");
  }
}

class Validator {
 public:
  Validator(const Program& program, std::string_view filename)
      : program_(program), filename_(filename) {}

  absl::Status Run();

 private:
  absl::Status Error(SourceLoc loc, std::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(LocPrefix(filename_, loc), Sv(message)));
  }
  absl::Status Define(const std::string& name, SourceLoc loc);
  absl::Status CheckInput(const Input& input);
  absl::Status CheckPayload(const Input& input);
  absl::Status CheckParamPayload(const Input& input);
  absl::Status CheckLayout(const Input& input);
  absl::Status CheckNode(const Node& node);
  absl::Status CheckGradNode(const Node& node);
  absl::Status CheckLiteral(const Literal& literal, int lists_above, const Node& node,
                            size_t arg_index);

  const Program& program_;
  std::string_view filename_;
  std::unordered_map<std::string, SourceLoc> defined_;
};

#define DFZ_RETURN_IF_ERROR(expr)      \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (0)

absl::Status Validator::Run() {
  if (program_.version != 1) {
    return Error({}, absl::StrCat("expected format version 1, got ", program_.version));
  }
  for (const Input& input : program_.inputs) DFZ_RETURN_IF_ERROR(CheckInput(input));
  for (const Node& node : program_.nodes) DFZ_RETURN_IF_ERROR(CheckNode(node));
  if (program_.outputs.empty()) {
    return Error(program_.output_loc, "expected at least one output, got none");
  }
  for (const std::string& name : program_.outputs) {
    if (!IsValueName(name) || !defined_.count(name)) {
      return Error(program_.output_loc, absl::StrCat("expected a defined value in the output "
                                                     "statement, got %",
                                                     IsValueName(name) ? name : QuoteString(name)));
    }
  }
  return absl::OkStatus();
}

absl::Status Validator::Define(const std::string& name, SourceLoc loc) {
  if (!IsValueName(name)) {
    return Error(loc,
                 absl::StrCat("expected value name ([A-Za-z0-9_.]+), got ", QuoteString(name)));
  }
  auto [it, inserted] = defined_.emplace(name, loc);
  if (!inserted) {
    std::string where = it->second.line > 0 ? absl::StrCat(" at line ", it->second.line) : "";
    return Error(loc, absl::StrCat("expected a new value name, got %", name, " (already defined",
                                   where, ")"));
  }
  return absl::OkStatus();
}

absl::Status Validator::CheckInput(const Input& input) {
  DFZ_RETURN_IF_ERROR(Define(input.name, input.loc));
  const std::vector<int64_t>& shape = input.type.shape;
  if (shape.size() > static_cast<size_t>(kMaxRank)) {
    return Error(input.loc, absl::StrCat("expected rank at most ", kMaxRank, ", got rank ",
                                         shape.size(), " for %", input.name));
  }
  for (int64_t d : shape) {
    if (d < 0) {
      return Error(input.loc, absl::StrCat("expected non-negative dimensions, got ",
                                           PrintType(input.type), " for %", input.name));
    }
  }
  int64_t numel = input.type.Numel();
  if (numel > kMaxInputElements) {
    std::string count = numel == std::numeric_limits<int64_t>::max()
                            ? "more than 9223372036854775807"
                            : absl::StrCat(numel);
    return Error(input.loc, absl::StrCat("absurd shape ", PrintType(input.type), " for %",
                                         input.name, " (", count, " elements) exceeds the ",
                                         kMaxInputElements, "-element limit"));
  }
  DFZ_RETURN_IF_ERROR(CheckLayout(input));
  return CheckPayload(input);
}

absl::Status Validator::CheckLayout(const Input& input) {
  const size_t rank = input.type.shape.size();
  size_t min_rank = 0, max_rank = kMaxRank;
  switch (input.layout) {
    case Layout::kContiguous:
      return absl::OkStatus();
    case Layout::kTransposed:
      min_rank = 2;
      break;
    case Layout::kStrided:
      min_rank = 1;
      break;
    case Layout::kChannelsLast:
      min_rank = max_rank = 4;
      break;
  }
  if (rank >= min_rank && rank <= max_rank) return absl::OkStatus();
  const std::string want =
      min_rank == max_rank ? absl::StrCat("rank ", min_rank) : absl::StrCat("rank >= ", min_rank);
  return Error(input.loc,
               absl::StrCat("expected ", want, " for layout=", Sv(LayoutName(input.layout)),
                            ", got ", PrintType(input.type), " for %", input.name));
}

// The later generators: ties/dynamic take a parameter; the matrix kinds need a
// floating (or complex) dtype, rank >= 2 and bounded work.
absl::Status Validator::CheckParamPayload(const Input& input) {
  const Payload& p = input.payload;
  const std::string kind(PayloadKindName(p.kind));
  const std::string param(PayloadParamName(p.kind));
  const auto bad_param = [&](std::string_view want) {
    return Error(input.loc, absl::StrCat("expected ", param, " ", Sv(want), " in ", kind,
                                         "(), got ", FormatFloat(p.a)));
  };
  const auto integral = [](double v) { return std::isfinite(v) && v == std::trunc(v); };
  if (p.kind == Payload::Kind::kTies && !(integral(p.a) && p.a >= 1 && p.a <= 65536)) {
    return bad_param("an integer in [1, 65536]");
  }
  if ((p.kind == Payload::Kind::kDynamic || p.kind == Payload::Kind::kScaled) &&
      !(p.a >= 0 && p.a <= 1000)) {
    return bad_param("in [0, 1000]");
  }
  if (p.kind == Payload::Kind::kIllConditioned && !(p.a >= 1 && std::isfinite(p.a))) {
    return bad_param(">= 1 and finite");
  }
  if (!IsMatrixPayload(p.kind)) return absl::OkStatus();
  const TensorType& type = input.type;
  const size_t rank = type.shape.size();
  if (!IsFloating(type.dtype) && !IsComplex(type.dtype)) {
    return Error(input.loc, absl::StrCat("expected a floating or complex dtype for ", kind,
                                         "(), got ", PrintType(type), " for %", input.name));
  }
  if (rank < 2) {
    return Error(input.loc, absl::StrCat("expected rank >= 2 for the matrix payload ", kind,
                                         "(), got ", PrintType(type), " for %", input.name));
  }
  const int64_t m = type.shape[rank - 2], n = type.shape[rank - 1];
  if (p.kind == Payload::Kind::kSpd && m != n) {
    return Error(input.loc, absl::StrCat("expected square matrices for spd(), got ",
                                         PrintType(type), " for %", input.name));
  }
  if (p.kind == Payload::Kind::kRankDeficient &&
      !(integral(p.a) && p.a >= 0 && p.a <= static_cast<double>(std::min(m, n)))) {
    return bad_param(absl::StrCat("an integer in [0, ", std::min(m, n), "] for ", PrintType(type)));
  }
  // The generators are O(numel * min(m, n)) in double; keep them well under a second.
  const int64_t k = std::min(m, n);
  if (k > 0 && type.Numel() > kMaxMatrixWork / k) {
    return Error(input.loc, absl::StrCat("expected at most ", kMaxMatrixWork,
                                         " for numel * min(m, n) of the matrix payload ", kind,
                                         "(), got ", PrintType(type), " for %", input.name));
  }
  return absl::OkStatus();
}

absl::Status Validator::CheckPayload(const Input& input) {
  const Payload& p = input.payload;
  const DType dtype = input.type.dtype;
  switch (p.kind) {
    case Payload::Kind::kFill:
      if (p.values.size() != 1) {
        return Error(input.loc,
                     absl::StrCat("expected exactly one fill value, got ", p.values.size()));
      }
      break;
    case Payload::Kind::kValues: {
      const bool complex = IsComplex(dtype);
      const size_t want = static_cast<size_t>(input.type.Numel()) * (complex ? 2 : 1);
      if (p.values.size() != want) {
        return Error(input.loc, absl::StrCat("expected ", want, want == 1 ? " value" : " values",
                                             complex ? " (re, im pairs)" : "", " for ",
                                             PrintType(input.type), ", got ", p.values.size()));
      }
      break;
    }
    case Payload::Kind::kUniform:
      if (!(std::isfinite(p.a) && std::isfinite(p.b) && p.a <= p.b)) {
        return Error(input.loc, absl::StrCat("expected finite uniform bounds with low <= high, "
                                             "got low=",
                                             FormatFloat(p.a), ", high=", FormatFloat(p.b)));
      }
      return absl::OkStatus();
    case Payload::Kind::kNormal:
      if (!(std::isfinite(p.a) && std::isfinite(p.b) && p.b >= 0)) {
        return Error(input.loc, absl::StrCat("expected finite mean and std >= 0, got mean=",
                                             FormatFloat(p.a), ", std=", FormatFloat(p.b)));
      }
      return absl::OkStatus();
    case Payload::Kind::kSpecial:
    case Payload::Kind::kLimits:
    case Payload::Kind::kEdges:
    case Payload::Kind::kPlanted:
      return absl::OkStatus();
    default:
      return CheckParamPayload(input);
  }
  if (!IsIntegral(dtype) && dtype != DType::kBool) return absl::OkStatus();
  for (size_t i = 0; i < p.values.size(); ++i) {
    if (!FitsIntegralDType(dtype, p.values[i])) {
      return Error(input.loc, absl::StrCat("expected integral values in ", RangeText(dtype),
                                           " for ", Sv(DTypeName(dtype)), ", got ",
                                           FormatFloat(p.values[i]), " at element ", i));
    }
  }
  return absl::OkStatus();
}

absl::Status Validator::CheckNode(const Node& node) {
  const std::string op = node.QualifiedName();
  if (!IsOpName(node.op)) {
    return Error(node.loc,
                 absl::StrCat("expected op name 'namespace::name', got ", QuoteString(node.op)));
  }
  if (!node.overload.empty() && !IsIdent(node.overload)) {
    return Error(node.loc,
                 absl::StrCat("expected overload identifier, got ", QuoteString(node.overload)));
  }
  if (node.results.empty()) {
    return Error(node.loc, absl::StrCat("expected at least one result of ", op, ", got none"));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < node.args.size(); ++i) {
    const Argument& arg = node.args[i];
    if (arg.name.empty() && !names.empty()) {
      return Error(node.loc, absl::StrCat("expected positional arguments first, got positional "
                                          "argument ",
                                          i + 1, " of ", op, " after a named one"));
    }
    if (!arg.name.empty() && !IsIdent(arg.name)) {
      return Error(node.loc,
                   absl::StrCat("expected argument name identifier, got ", QuoteString(arg.name)));
    }
    if (!arg.name.empty() && !names.insert(arg.name).second) {
      return Error(node.loc, absl::StrCat("expected distinct argument names, got '", arg.name,
                                          "' twice in ", op));
    }
    DFZ_RETURN_IF_ERROR(CheckLiteral(arg.value, 0, node, i));
  }
  if (IsGradNode(node)) DFZ_RETURN_IF_ERROR(CheckGradNode(node));
  // Results are defined after the arguments: %x = f(%x) needs an earlier %x.
  for (const std::string& name : node.results) DFZ_RETURN_IF_ERROR(Define(name, node.loc));
  return absl::OkStatus();
}

// A gradient statement differentiates against program inputs of a floating
// or complex dtype (torch.autograd.grad's `inputs` must require grad).
absl::Status Validator::CheckGradNode(const Node& node) {
  GradCallOrError g = ParseGradCall(node);
  if (!g.call) return Error(node.loc, g.error);
  for (const std::string& x : g.call->wrt) {
    const Input* found = nullptr;
    for (const Input& in : program_.inputs) {
      if (in.name == x) found = &in;
    }
    if (found == nullptr) {
      return Error(node.loc, absl::StrCat("expected program inputs to differentiate against, "
                                          "got %", x, ", which is not an input"));
    }
    if (!IsFloating(found->type.dtype) && !IsComplex(found->type.dtype)) {
      return Error(node.loc, absl::StrCat("expected a floating or complex input to differentiate "
                                          "against, got %", x, " of ",
                                          Sv(DTypeName(found->type.dtype))));
    }
  }
  return absl::OkStatus();
}

absl::Status Validator::CheckLiteral(const Literal& literal, int lists_above, const Node& node,
                                     size_t arg_index) {
  if (literal.kind == Literal::Kind::kList) {
    if (lists_above + 1 > kMaxListDepth) {
      return Error(node.loc, absl::StrCat("expected list nesting depth at most ", kMaxListDepth,
                                          ", got deeper in argument ", arg_index + 1, " of ",
                                          node.QualifiedName()));
    }
    for (const Literal& item : literal.list) {
      DFZ_RETURN_IF_ERROR(CheckLiteral(item, lists_above + 1, node, arg_index));
    }
  }
  if (literal.kind != Literal::Kind::kValue) return absl::OkStatus();
  if (!IsValueName(literal.s)) {
    return Error(node.loc, absl::StrCat("expected value name ([A-Za-z0-9_.]+), got ",
                                        QuoteString(literal.s)));
  }
  if (!defined_.count(literal.s)) {
    return Error(node.loc,
                 absl::StrCat("expected a value defined before use, got %", literal.s,
                              " in argument ", arg_index + 1, " of ", node.QualifiedName()));
  }
  return absl::OkStatus();
}

#undef DFZ_RETURN_IF_ERROR

}  // namespace

std::string LocPrefix(std::string_view filename, SourceLoc loc) {
  if (loc.line <= 0) return absl::StrCat(Sv(filename), ": ");
  return absl::StrCat(Sv(filename), ":", loc.line, ":", loc.col, ": ");
}

absl::Status ValidateProgram(const Program& program, std::string_view filename) {
  return Validator(program, filename).Run();
}

}  // namespace divfuzz::graph
