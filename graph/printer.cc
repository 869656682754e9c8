#include "graph/printer.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/absl_compat.h"

namespace divfuzz::graph {
namespace {

// A NaN keeps its sign and payload: "nan"/"-nan" for the canonical quiet NaN,
// else "nan_0xF" with F its float64 fraction field (graph/lexer.h).
std::string NonFinite(double v) {
  if (!std::isnan(v)) return v < 0 ? "-inf" : "inf";
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  const uint64_t frac = bits & ((uint64_t{1} << 52) - 1);
  std::string out = (bits >> 63) ? "-nan" : "nan";
  if (frac != uint64_t{1} << 51) absl::StrAppend(&out, "_0x", absl::Hex(frac));
  return out;
}

// Integer dtypes print their (integral, in-range) values as integers; -0.0
// stays a float so that it survives the round trip.
void AppendPayloadValue(double v, DType dtype, bool hex, std::string* out) {
  if ((IsIntegral(dtype) || dtype == DType::kBool) && FitsIntegralDType(dtype, v) &&
      !(v == 0 && std::signbit(v))) {
    absl::StrAppend(out, static_cast<int64_t>(v));
  } else {
    out->append(hex ? FormatHexFloat(v) : FormatFloat(v));
  }
}

void AppendNames(const std::vector<std::string>& names, std::string* out) {
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StrAppend(out, i ? ", %" : "%", names[i]);
  }
}

}  // namespace

std::string FormatFloat(double v) {
  if (!std::isfinite(v)) return NonFinite(v);
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round trip
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string FormatHexFloat(double v) {
  if (!std::isfinite(v)) return NonFinite(v);
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  constexpr uint64_t kFracMask = (uint64_t{1} << 52) - 1;
  std::string out = (bits >> 63) ? "-" : "";
  int biased = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t frac = bits & kFracMask;
  if (biased == 0 && frac == 0) return out + "0x0p+0";
  int exp = biased - 1023;
  if (biased == 0) {  // subnormal: normalize so the leading digit is 1
    exp = -1022;
    while (!(frac & (uint64_t{1} << 52))) {
      frac <<= 1;
      --exp;
    }
    frac &= kFracMask;
  }
  out += "0x1";
  if (frac != 0) {
    std::string digits = absl::StrFormat("%013x", frac);
    digits.erase(digits.find_last_not_of('0') + 1);
    absl::StrAppend(&out, ".", digits);
  }
  absl::StrAppend(&out, "p", exp < 0 ? "-" : "+", exp < 0 ? -exp : exp);
  return out;
}

std::string QuoteString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += absl::StrFormat("\\x%02X", u);
        } else {
          out += c;  // UTF-8 and other high bytes stay as they are
        }
    }
  }
  return out + "\"";
}

std::string PrintLiteral(const Literal& literal) {
  switch (literal.kind) {
    case Literal::Kind::kNone:
      return "None";
    case Literal::Kind::kBool:
      return literal.b ? "True" : "False";
    case Literal::Kind::kInt:
      return absl::StrCat(literal.i);
    case Literal::Kind::kFloat:
      return FormatFloat(literal.f);
    case Literal::Kind::kString:
      return QuoteString(literal.s);
    case Literal::Kind::kDType:
      return std::string(DTypeName(literal.dtype));
    case Literal::Kind::kValue:
      return "%" + literal.s;
    case Literal::Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < literal.list.size(); ++i) {
        absl::StrAppend(&out, i ? ", " : "", PrintLiteral(literal.list[i]));
      }
      return out + "]";
    }
  }
  return "None";
}

std::string PrintType(const TensorType& type) {
  std::string out = absl::StrCat(Sv(DTypeName(type.dtype)), "[");
  for (size_t i = 0; i < type.shape.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", type.shape[i]);
  }
  return out + "]";
}

std::string PrintPayload(const Payload& payload, DType dtype) {
  std::string out;
  switch (payload.kind) {
    case Payload::Kind::kFill:
      out = "fill(";
      // A fill without exactly one value is invalid; print what is there.
      for (size_t i = 0; i < payload.values.size(); ++i) {
        if (i) out += ", ";
        AppendPayloadValue(payload.values[i], dtype, /*hex=*/false, &out);
      }
      return out + ")";
    case Payload::Kind::kValues:
      out = "values(";
      for (size_t i = 0; i < payload.values.size(); ++i) {
        if (i) out += ", ";
        AppendPayloadValue(payload.values[i], dtype, /*hex=*/true, &out);
      }
      return out + ")";
    case Payload::Kind::kUniform:
      return absl::StrCat("uniform(seed=", payload.seed, ", low=", FormatFloat(payload.a),
                          ", high=", FormatFloat(payload.b), ")");
    case Payload::Kind::kNormal:
      return absl::StrCat("normal(seed=", payload.seed, ", mean=", FormatFloat(payload.a),
                          ", std=", FormatFloat(payload.b), ")");
    default: {
      out = absl::StrCat(Sv(PayloadKindName(payload.kind)), "(seed=", payload.seed);
      const std::string_view param = PayloadParamName(payload.kind);
      if (!param.empty()) {
        // Integral parameters (rank, distinct) read better as integers; -0.0
        // stays a float so that it survives the round trip.
        const double a = payload.a;
        const bool integral = std::isfinite(a) && a == std::trunc(a) && std::fabs(a) < 0x1p53 &&
                              !(a == 0 && std::signbit(a));
        absl::StrAppend(&out, ", ", Sv(param), "=",
                        integral && param != "cond" && param != "decades"
                            ? absl::StrCat(static_cast<int64_t>(a))
                            : FormatFloat(a));
      }
      return out + ")";
    }
  }
  return out;
}

std::string PrintProgram(const Program& program) {
  std::string out = absl::StrCat("divfuzz v", program.version, "\n");
  for (const Input& in : program.inputs) {
    absl::StrAppend(&out, "input %", in.name, ": ", PrintType(in.type));
    if (in.layout != Layout::kContiguous) {
      absl::StrAppend(&out, " layout=", Sv(LayoutName(in.layout)));
    }
    absl::StrAppend(&out, " = ", PrintPayload(in.payload, in.type.dtype), "\n");
  }
  for (const Node& node : program.nodes) {
    AppendNames(node.results, &out);
    absl::StrAppend(&out, " = ", node.QualifiedName(), "(");
    for (size_t i = 0; i < node.args.size(); ++i) {
      const Argument& arg = node.args[i];
      absl::StrAppend(&out, i ? ", " : "", arg.name, arg.name.empty() ? "" : "=",
                      PrintLiteral(arg.value));
    }
    out += ")\n";
  }
  out += "output ";
  AppendNames(program.outputs, &out);
  out += "\n";
  return out;
}

}  // namespace divfuzz::graph
