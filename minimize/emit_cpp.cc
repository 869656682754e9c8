#include "minimize/emit_cpp.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "graph/materialize.h"
#include "graph/printer.h"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "oracles/nan_rule.h"

namespace divfuzz::minimize {
namespace {

using graph::DType;
using graph::Literal;

extern const char kCppHarness[];
extern const char kCMakeLists[];

// A C++ string literal; bytes outside printable ASCII become octal escapes
// (fixed length, so a following digit cannot extend them).
std::string CppStr(absl::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c < 0x20 || c >= 0x7f || ch == '?') {  // '?': no trigraphs
      out.push_back('\\');
      out.push_back(static_cast<char>('0' + ((c >> 6) & 7)));
      out.push_back(static_cast<char>('0' + ((c >> 3) & 7)));
      out.push_back(static_cast<char>('0' + (c & 7)));
    } else {
      out.push_back(ch);
    }
  }
  out += "\"";
  return out;
}

// One line of comment text: printable ASCII only, at most about `max` bytes.
std::string Comment(absl::string_view s, size_t max = 150) {
  std::string out;
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    out.push_back(c < 0x20 || c >= 0x7f ? '?' : ch);
  }
  // No "*/" or trailing backslash tricks matter in // comments except a
  // line-continuation backslash at the end.
  if (out.size() > max) out = absl::StrCat(out.substr(0, max), " ...");
  if (!out.empty() && out.back() == '\\') out.push_back(' ');
  return out;
}

std::string ScalarTypeExpr(DType d) {
  switch (d) {
    case DType::kF16:
      return "at::kHalf";
    case DType::kBF16:
      return "at::kBFloat16";
    case DType::kF32:
      return "at::kFloat";
    case DType::kF64:
      return "at::kDouble";
    case DType::kC64:
      return "at::kComplexFloat";
    case DType::kC128:
      return "at::kComplexDouble";
    case DType::kI8:
      return "at::kChar";
    case DType::kI16:
      return "at::kShort";
    case DType::kI32:
      return "at::kInt";
    case DType::kI64:
      return "at::kLong";
    case DType::kU8:
      return "at::kByte";
    case DType::kBool:
      return "at::kBool";
  }
  return "at::kFloat";
}

// An exact double expression: a hex-float literal, or kInf / kNaN.
std::string CppDouble(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-kNaN" : "kNaN";
  if (std::isinf(v)) return v > 0 ? "kInf" : "-kInf";
  return graph::FormatHexFloat(v);
}

std::string CppInt(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
  return absl::StrCat(v, "LL");
}

std::string CppLiteral(const Literal& l) {
  switch (l.kind) {
    case Literal::Kind::kNone:
      return "N()";
    case Literal::Kind::kBool:
      return l.b ? "B(true)" : "B(false)";
    case Literal::Kind::kInt:
      return absl::StrCat("I(", CppInt(l.i), ")");
    case Literal::Kind::kFloat:
      return absl::StrCat("D(", CppDouble(l.f), ")");
    case Literal::Kind::kString:
      return absl::StrCat("S(", CppStr(l.s), ")");
    case Literal::Kind::kDType:
      return absl::StrCat("T(", ScalarTypeExpr(l.dtype), ")");
    case Literal::Kind::kValue:
      return absl::StrCat("V(", CppStr(l.s), ")");
    case Literal::Kind::kList: {
      std::vector<std::string> items;
      for (const Literal& item : l.list) items.push_back(CppLiteral(item));
      return absl::StrCat("L({", absl::StrJoin(items, ", "), "})");
    }
  }
  return "N()";
}

std::string Shape(const std::vector<int64_t>& shape) {
  return absl::StrCat("{", absl::StrJoin(shape, ", "), "}");
}

std::string Wrap(const std::vector<std::string>& items, const std::string& indent) {
  std::string out, line;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (!line.empty() && indent.size() + line.size() + 1 + item.size() > 99) {
      absl::StrAppend(&out, indent, line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", item);
  }
  if (!line.empty()) absl::StrAppend(&out, indent, line, "\n");
  return out;
}

// `v["x"] = ...;`: built in float64 (complex128) and cast, like the executor.
std::string InputStatement(const graph::Input& input) {
  const std::vector<double> values = graph::MaterializePayload(input);
  const std::string lhs = absl::StrCat("  v[", CppStr(input.name), "] = ");
  const std::string tail =
      absl::StrCat(Shape(input.type.shape), ", ", ScalarTypeExpr(input.type.dtype), ");\n");
  const bool complex = graph::IsComplex(input.type.dtype);
  const size_t per = complex ? 2 : 1;
  bool uniform = values.size() >= per;
  for (size_t i = per; uniform && i < values.size(); ++i) {
    const double a = values[i], b = values[i % per];
    uniform = std::memcmp(&a, &b, sizeof a) == 0;
  }
  if (uniform) {
    return absl::StrCat(lhs, complex ? "ComplexFill(" : "Fill(", CppDouble(values[0]),
                        complex ? absl::StrCat(", ", CppDouble(values[1])) : "", ", ", tail);
  }
  std::vector<std::string> items;
  for (double v : values) items.push_back(CppDouble(v));
  return absl::StrCat(lhs, complex ? "ComplexValues" : "Values", "({\n", Wrap(items, "      "),
                      "    }, ", tail);
}

// `{"x", "transposed"}, ...`: the inputs whose layout is not contiguous.
std::string LayoutEntries(const graph::Program& program) {
  std::vector<std::string> entries;
  for (const graph::Input& in : program.inputs) {
    if (in.layout == graph::Layout::kContiguous) continue;
    entries.push_back(absl::StrCat("{", CppStr(in.name), ", ",
                                   CppStr(std::string(graph::LayoutName(in.layout))), "}"));
  }
  return absl::StrJoin(entries, ", ");
}

std::string NodeText(const graph::Node& node) {
  std::vector<std::string> results, args;
  for (const std::string& r : node.results) results.push_back("%" + r);
  for (const graph::Argument& a : node.args) {
    const std::string value = graph::PrintLiteral(a.value);
    args.push_back(a.name.empty() ? value : absl::StrCat(a.name, "=", value));
  }
  return absl::StrCat(absl::StrJoin(results, ", "), " = ", node.QualifiedName(), "(",
                      absl::StrJoin(args, ", "), ")");
}

std::string NodeStatement(const graph::Node& node) {
  std::vector<std::string> results, args;
  for (const std::string& r : node.results) results.push_back(CppStr(r));
  for (const graph::Argument& a : node.args) {
    args.push_back(absl::StrCat("{", CppStr(a.name), ", ", CppLiteral(a.value), "}"));
  }
  return absl::StrCat("      {{", absl::StrJoin(results, ", "), "}, ", CppStr(node.op), ", ",
                      CppStr(node.overload), ", {", absl::StrJoin(args, ", "), "}},\n");
}

// For a decomposition, the name of its invariants ("qr", "svd", "eigh", "lu",
// "eig"); else empty.
std::string Invariants(const graph::Node& node) {
  return std::string(ops::DecompositionName(node.QualifiedName()));
}

std::string ErrorProgram(const std::string& title, const std::string& message) {
  return absl::StrCat("// divfuzz repro: ", Comment(title),
                      "\n#include <iostream>\n\nint main() {\n  std::cout << ", CppStr(message),
                      " << \"\\n\";\n  return 2;\n}\n");
}

}  // namespace

CppRepro EmitCpp(const graph::Program& program, const ReproSpec& spec) {
  CppRepro out;
  out.cmake_lists = kCMakeLists;
  std::string spec_error;
  const int node_index = ResolveNode(program, spec, &spec_error);
  if (!spec_error.empty()) {
    out.main_cpp = ErrorProgram(spec.title, spec_error);
    return out;
  }
  const graph::Node& target = program.nodes[node_index];
  const std::string& value = target.results[spec.output_index];
  const std::string where = absl::StrCat("%", value, ", result ", spec.output_index, " of node ",
                                         node_index, " (", target.QualifiedName(), ")");
  std::string dtype = "std::nullopt";
  if (absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(program); types.ok()) {
    auto it = types->find(value);
    if (it != types->end()) dtype = ScalarTypeExpr(it->second.dtype);
  }

  std::string& s = out.main_cpp;
  absl::StrAppend(
      &s, "// divfuzz repro: ", Comment(spec.title.empty() ? where : spec.title),
      "\n//\n// Compares ", spec.target_a, " vs ", spec.target_b, " on ", where, ".\n",
      spec.rerun_target.empty()
          ? ""
          : absl::StrCat("// Nondeterminism: then reruns ", spec.rerun_target, " up to ",
                         kNondeterminismRuns, " times or ", kNondeterminismSeconds,
                         " s and exits 1 if two runs differ bit for bit.\n"),
      spec.rerun_target.empty() && spec.attempts > 1
          ? absl::StrCat("// The kernel's writes race: runs both targets up to ", spec.attempts,
                         " times until they diverge.\n")
          : "",
      spec.failure == "hang"
          ? absl::StrCat("// A hang: runs ", spec.failure_target,
                         " in a child process and exits 1 if it is still running "
                         "after ",
                         spec.hang_seconds, " s.\n")
      : spec.failure == "crash"
          ? absl::StrCat("// A crash: runs ", spec.failure_target,
                         " in a child process and exits 1 if it dies by a signal or "
                         "a CUDA fault.\n")
          : "",
      R"(//
// Build (libtorch only):
//   cmake -S . -B build -DCMAKE_PREFIX_PATH=<torch cmake folder> && cmake --build build
//   (pip's torch: python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
// Run: ./build/repro [TARGET_A TARGET_B]   targets: cpu, cuda, cpu-f64 (floating inputs upcast
//   to float64 on the CPU, results rounded back to the program's dtype), cpu-scalar (ATen's
//   scalar CPU kernels: the program reruns itself with ATEN_CPU_CAPABILITY=default).
// Exit status: 1 if the divergence reproduces, 0 if it does not, 2 if the program fails.
// ./build/repro --dump-inputs prints every input exactly.
// Every input is rebuilt bit-exactly from hex-float literals; every node is called through
// the c10 dispatcher by its schema name.
//
// The program (divfuzz .dfz; long lines shortened):
)");
  for (absl::string_view line : absl::StrSplit(graph::PrintProgram(program), '\n')) {
    if (!line.empty()) absl::StrAppend(&s, "//   ", Comment(std::string(line)), "\n");
  }
  absl::StrAppend(&s, R"(
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dirent.h>
#include <dlfcn.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <sys/wait.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const double kInf = INFINITY;
const double kNaN = NAN;

)");
  absl::StrAppend(
      &s, "const char* const kTitle = ", CppStr(spec.title.empty() ? where : spec.title), ";\n");
  absl::StrAppend(&s, "const char* const kSeen = ", CppStr(spec.seen), ";  // what divfuzz saw\n");
  absl::StrAppend(&s, "const char* const kTargetA = ", CppStr(spec.target_a), ";\n");
  absl::StrAppend(&s, "const char* const kTargetB = ", CppStr(spec.target_b), ";\n");
  absl::StrAppend(&s, "const int kNode = ", node_index, ";  // the diverging node\n");
  absl::StrAppend(&s, "const int kOutput = ", spec.output_index, ";  // which of its results\n");
  absl::StrAppend(&s, "const char* const kValue = ", CppStr(value), ";\n");
  absl::StrAppend(&s, "const char* const kOp = ", CppStr(target.QualifiedName()), ";\n");
  absl::StrAppend(&s, "// Nondeterminism: the target rerun against itself (empty: none).\n",
                  "const char* const kRerun = ", CppStr(spec.rerun_target), ";\n",
                  "const int kRuns = ", kNondeterminismRuns, ";  // how often kRerun runs\n",
                  "const int kRunSeconds = ", kNondeterminismSeconds,
                  ";  // and for how long at most\n");
  absl::StrAppend(&s, "// How often both targets run before \"no divergence\".\n",
                  "const int kAttempts = ", std::max(1, spec.attempts), ";\n");
  absl::StrAppend(&s, "// \"hang\" or \"crash\": kFailureTarget runs in a child process.\n",
                  "const char* const kFailure = ", CppStr(spec.failure), ";\n",
                  "const char* const kFailureTarget = ", CppStr(spec.failure_target), ";\n",
                  "const int kHangSeconds = ", spec.hang_seconds,
                  ";  // a hang: still running after this long\n");
  absl::StrAppend(&s, "// A decomposition is compared through its invariants, not raw factors.\n",
                  "const char* const kInvariants = ", CppStr(Invariants(target)), ";\n");
  absl::StrAppend(&s, "// An orthogonal polynomial: NaN at a NaN x when n >= 1.\n",
                  "const bool kNanRule = ",
                  oracles::IsOrthogonalPolynomial(target.op) ? "true" : "false", ";\n");
  absl::StrAppend(&s,
                  "// The program's dtype of the diverging value (cpu-f64 rounds back to it).\n",
                  "const std::optional<at::ScalarType> kValueDType = ", dtype, ";\n\n");
  absl::StrAppend(&s, kCppHarness);
  absl::StrAppend(&s,
                  "// ------------------------------------------------------------------------\n"
                  "// The program.\n\n"
                  "// Its inputs, built in float64 (complex128) and cast, as divfuzz builds them.\n"
                  "std::map<std::string, at::Tensor> MakeInputs() {\n"
                  "  std::map<std::string, at::Tensor> v;\n");
  for (const graph::Input& input : program.inputs) {
    absl::StrAppend(&s, "  // %", Comment(input.name, 60), ": ", graph::PrintType(input.type),
                    " = ", Comment(graph::PrintPayload(input.payload, input.type.dtype), 80), "\n",
                    InputStatement(input));
  }
  absl::StrAppend(&s,
                  "  return v;\n}\n\n"
                  "// The inputs' memory layouts (contiguous when not named), applied on the\n"
                  "// target's device and dtype: see ApplyLayout.\n"
                  "std::map<std::string, std::string> Layouts() {\n  return {",
                  LayoutEntries(program),
                  "};\n}\n\n"
                  "// Its nodes: results, op, overload, arguments (positional: empty name).\n"
                  "std::vector<Node> Program() {\n  return {\n");
  for (const graph::Node& node : program.nodes) {
    absl::StrAppend(&s, "      // ", Comment(NodeText(node)), "\n", NodeStatement(node));
  }
  absl::StrAppend(&s,
                  "  };\n}\n\n}  // namespace\n\n"
                  "int main(int argc, char** argv) {\n"
                  "  try {\n"
                  "    return Main(argc, argv);\n"
                  "  } catch (const std::exception& e) {\n"
                  "    std::cout << \"repro failed: \" << FirstLine(e.what()) << \"\\n\";\n"
                  "    return 2;\n"
                  "  }\n"
                  "}\n");
  return out;
}

namespace {

const char kCMakeLists[] = R"(# divfuzz repro: libtorch only.
#   cmake -S . -B build -DCMAKE_PREFIX_PATH=<torch cmake folder> && cmake --build build
cmake_minimum_required(VERSION 3.18)
project(divfuzz_repro CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
find_package(Torch REQUIRED)
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")
add_executable(repro main.cpp)
target_link_libraries(repro PRIVATE "${TORCH_LIBRARIES}" ${CMAKE_DL_LIBS})
)";

// The generic part of every C++ repro. The program-specific constants come
// before it; MakeInputs() and Program() after it (declared here).
const char kCppHarness[] =
    R"HARNESS(// ------------------------------------------------------------------------
// The harness below is the same in every divfuzz C++ repro; the program is at the end.

// A node argument as the program writes it.
struct Lit {
  enum Kind { kNone, kBool, kInt, kFloat, kString, kDType, kValue, kList } kind = kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  at::ScalarType dtype = at::kFloat;
  std::vector<Lit> list;
};
Lit N() { return Lit{}; }
Lit B(bool v) {
  Lit l;
  l.kind = Lit::kBool;
  l.b = v;
  return l;
}
Lit I(int64_t v) {
  Lit l;
  l.kind = Lit::kInt;
  l.i = v;
  return l;
}
Lit D(double v) {
  Lit l;
  l.kind = Lit::kFloat;
  l.f = v;
  return l;
}
Lit S(std::string v) {
  Lit l;
  l.kind = Lit::kString;
  l.s = std::move(v);
  return l;
}
Lit T(at::ScalarType v) {
  Lit l;
  l.kind = Lit::kDType;
  l.dtype = v;
  return l;
}
Lit V(std::string v) {
  Lit l;
  l.kind = Lit::kValue;
  l.s = std::move(v);
  return l;
}
Lit L(std::vector<Lit> v) {
  Lit l;
  l.kind = Lit::kList;
  l.list = std::move(v);
  return l;
}

struct Arg {
  std::string name;  // empty: positional
  Lit value;
};

struct Node {
  std::vector<std::string> results;
  std::string op;        // "aten::add"
  std::string overload;  // "Tensor", or empty
  std::vector<Arg> args;
};

std::map<std::string, at::Tensor> MakeInputs();
std::map<std::string, std::string> Layouts();
std::vector<Node> Program();

// The same values in the layout the program names, as divfuzz builds it.
at::Tensor ApplyLayout(const at::Tensor& t, const std::string& layout) {
  if (layout == "transposed" && t.dim() >= 2) {
    return t.transpose(-1, -2).contiguous().transpose(-1, -2);
  }
  if (layout == "strided" && t.dim() >= 1) {
    std::vector<int64_t> sizes = t.sizes().vec();
    sizes.back() *= 2;
    at::Tensor view = at::zeros(sizes, t.options()).slice(-1, 0, sizes.back(), 2);
    view.copy_(t);
    return view;
  }
  if (layout == "channels_last" && t.dim() == 4) {
    return t.contiguous(at::MemoryFormat::ChannelsLast);
  }
  return t;
}

at::Tensor Values(std::vector<double> v, std::vector<int64_t> shape, at::ScalarType t) {
  const int64_t n = static_cast<int64_t>(v.size());
  return at::from_blob(v.data(), {n}, at::kDouble).clone().to(t).reshape(shape).contiguous();
}
at::Tensor Fill(double x, std::vector<int64_t> shape, at::ScalarType t) {
  return at::full(shape, x, at::TensorOptions().dtype(at::kDouble)).to(t).contiguous();
}
at::Tensor ComplexValues(std::vector<double> v, std::vector<int64_t> shape, at::ScalarType t) {
  const int64_t n = static_cast<int64_t>(v.size()) / 2;
  at::Tensor parts = at::from_blob(v.data(), {n, 2}, at::kDouble).clone();
  return at::view_as_complex(parts).to(t).reshape(shape).contiguous();
}
at::Tensor ComplexFill(double re, double im, std::vector<int64_t> shape, at::ScalarType t) {
  std::vector<double> v;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  for (int64_t k = 0; k < n; ++k) {
    v.push_back(re);
    v.push_back(im);
  }
  return ComplexValues(v, shape, t);
}

struct Failure {
  std::string message;
  int node = -1;
};

// A target's diverging output (a decomposition: all its outputs) as CPU
// tensors, or the failure of its node (or of one it depends on).
struct Result {
  std::vector<at::Tensor> values;
  std::optional<Failure> failure;
};

std::string FirstLine(std::string s) {
  const size_t nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  return s;
}

at::Tensor Upcast(const at::Tensor& t) {
  if (at::isComplexType(t.scalar_type())) return t.to(at::kComplexDouble);
  if (at::isFloatingType(t.scalar_type())) return t.to(at::kDouble);
  return t;
}

using Lookup = std::function<at::Tensor(const std::string&)>;

[[noreturn]] void Mismatch(const c10::Argument& arg, const std::string& expected) {
  throw std::invalid_argument("argument '" + arg.name() + "' expects " + expected);
}

at::Tensor TensorOf(const c10::Argument& arg, const Lit& lit, const Lookup& lookup) {
  if (lit.kind != Lit::kValue) Mismatch(arg, "a tensor value");
  at::Tensor t = lookup(lit.s);
  if (!t.defined()) Mismatch(arg, "a defined value, %" + lit.s + " is not");
  return t;
}

// A literal as the schema's argument type wants it (as divfuzz's executor does).
c10::IValue Convert(const c10::Argument& arg, const c10::TypePtr& type, const Lit& lit,
                    const Lookup& lookup) {
  using K = c10::TypeKind;
  switch (type->kind()) {
    case K::OptionalType:
      if (lit.kind == Lit::kNone) return c10::IValue();
      return Convert(arg, type->castRaw<c10::OptionalType>()->getElementType(), lit, lookup);
    case K::TensorType:
      return c10::IValue(TensorOf(arg, lit, lookup));
    case K::IntType:
    case K::SymIntType:
      if (lit.kind == Lit::kInt) return c10::IValue(lit.i);
      if (lit.kind == Lit::kBool) return c10::IValue(static_cast<int64_t>(lit.b));
      Mismatch(arg, "an int");
    case K::FloatType:
    case K::SymFloatType:
      if (lit.kind == Lit::kFloat) return c10::IValue(lit.f);
      if (lit.kind == Lit::kInt) return c10::IValue(static_cast<double>(lit.i));
      Mismatch(arg, "a float");
    case K::BoolType:
    case K::SymBoolType:
      if (lit.kind == Lit::kBool) return c10::IValue(lit.b);
      Mismatch(arg, "a bool");
    case K::NumberType:
      if (lit.kind == Lit::kInt) return c10::IValue(c10::Scalar(lit.i));
      if (lit.kind == Lit::kFloat) return c10::IValue(c10::Scalar(lit.f));
      if (lit.kind == Lit::kBool) return c10::IValue(c10::Scalar(lit.b));
      Mismatch(arg, "a number");
    case K::ScalarTypeType:
      if (lit.kind == Lit::kDType) return c10::IValue(lit.dtype);
      Mismatch(arg, "a dtype");
    case K::StringType:
      if (lit.kind == Lit::kString) return c10::IValue(lit.s);
      Mismatch(arg, "a string");
    case K::ListType: {
      const c10::TypePtr elem = type->castRaw<c10::ListType>()->getElementType();
      const bool ints = elem->kind() == K::IntType || elem->kind() == K::SymIntType;
      if (lit.kind != Lit::kList && !ints) Mismatch(arg, "a list");
      const std::vector<Lit> items = lit.kind == Lit::kList ? lit.list : std::vector<Lit>{lit};
      if (ints) {
        std::vector<int64_t> v;
        for (const Lit& i : items) {
          if (i.kind != Lit::kInt) Mismatch(arg, "a list of ints");
          v.push_back(i.i);
        }
        return c10::IValue(v);
      }
      if (elem->kind() == K::FloatType) {
        std::vector<double> v;
        for (const Lit& i : items) {
          if (i.kind != Lit::kFloat && i.kind != Lit::kInt)
            Mismatch(arg,
                     "a list of "
                     "floats");
          v.push_back(i.kind == Lit::kInt ? static_cast<double>(i.i) : i.f);
        }
        return c10::IValue(v);
      }
      if (elem->kind() == K::BoolType) {
        c10::List<bool> v;
        for (const Lit& i : items) {
          if (i.kind != Lit::kBool) Mismatch(arg, "a list of bools");
          v.push_back(i.b);
        }
        return c10::IValue(v);
      }
      if (elem->kind() == K::TensorType) {
        c10::List<at::Tensor> v;
        for (const Lit& i : items) v.push_back(TensorOf(arg, i, lookup));
        return c10::IValue(v);
      }
      Mismatch(arg, "a " + type->str());
    }
    default:
      if (lit.kind == Lit::kNone) return c10::IValue();
      Mismatch(arg, "a " + type->str() + "; only None is supported");
  }
}

// Positional arguments in order, name=value by name, schema defaults for the rest.
torch::jit::Stack BuildStack(const c10::FunctionSchema& schema, const Node& node,
                             const Lookup& lookup) {
  const std::vector<c10::Argument>& params = schema.arguments();
  std::vector<const Lit*> bound(params.size(), nullptr);
  size_t next = 0;
  for (const Arg& a : node.args) {
    if (a.name.empty()) {
      if (next >= params.size() || params[next].kwarg_only()) {
        throw std::invalid_argument("too many positional arguments for " + schema.name());
      }
      bound[next++] = &a.value;
      continue;
    }
    size_t i = 0;
    while (i < params.size() && params[i].name() != a.name) ++i;
    if (i == params.size()) {
      throw std::invalid_argument(schema.name() + " has no argument named '" + a.name + "'");
    }
    bound[i] = &a.value;
  }
  torch::jit::Stack stack;
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i] == nullptr) {
      if (!params[i].default_value().has_value()) {
        throw std::invalid_argument("missing argument '" + params[i].name() + "'");
      }
      stack.push_back(*params[i].default_value());
    } else {
      stack.push_back(Convert(params[i], params[i].real_type(), *bound[i], lookup));
    }
  }
  return stack;
}

std::vector<std::string> Uses(const Node& node) {
  std::vector<std::string> uses;
  std::function<void(const Lit&)> visit = [&](const Lit& l) {
    if (l.kind == Lit::kValue) uses.push_back(l.s);
    for (const Lit& item : l.list) visit(item);
  };
  for (const Arg& a : node.args) visit(a.value);
  return uses;
}

at::Tensor Snapshot(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    return t.defined() ? t.detach().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous()
                       : t;
  }
  if (v.isScalar()) return at::scalar_tensor(v.toScalar(), at::TensorOptions().dtype(at::kDouble));
  return at::Tensor();
}

// What a run keeps of the diverging node: its output, or all of a
// decomposition's.
std::vector<at::Tensor> Capture(const torch::jit::Stack& stack) {
  if (*kInvariants == '\0') return {Snapshot(stack[kOutput])};
  std::vector<at::Tensor> all;
  for (const c10::IValue& v : stack) all.push_back(Snapshot(v));
  return all;
}

// What is compared: the output, or a decomposition's invariants (computed in
// float64, rounded back), as divfuzz's oracle does.
std::vector<at::Tensor> Comparable(const std::vector<at::Tensor>& outs) {
  const std::string inv = kInvariants;
  if (inv.empty() || outs.empty()) return outs;
  for (const at::Tensor& t : outs) {
    if (!t.defined()) return outs;
  }
  const at::ScalarType dtype = outs[0].scalar_type();
  std::vector<at::Tensor> f;
  for (const at::Tensor& t : outs) {
    f.push_back(t.to(at::isComplexType(t.scalar_type()) ? at::kComplexDouble : at::kDouble));
  }
  std::vector<at::Tensor> r;
  if (inv == "qr" && f.size() >= 2) {  // Q R = A, and |diag(R)| is unique
    r = {f[1].diagonal(0, -2, -1).abs(), f[0].matmul(f[1])};
  } else if (inv == "svd" && f.size() >= 3) {  // U diag(S) Vh = A, and S is unique
    r = {f[1], f[0].mul(f[1].unsqueeze(-2)).matmul(f[2])};
  } else if (inv == "eigh" && f.size() >= 2) {  // V diag(w) V^T = sym(A), and w is unique
    r = {f[0], f[1].mul(f[0].unsqueeze(-2)).matmul(f[1].mT())};
  } else if (inv == "lu" && f.size() >= 3) {  // P L U = A
    r = {f[0].matmul(f[1]).matmul(f[2])};
  } else if (inv == "eig") {  // the spectrum as a multiset
    const at::Tensor w = outs[0].to(at::kComplexDouble);
    const at::ScalarType part = dtype == at::kComplexFloat ? at::kFloat : at::kDouble;
    return {std::get<0>(at::real(w).sort(-1)).to(part).contiguous(),
            std::get<0>(at::imag(w).sort(-1)).to(part).contiguous()};
  } else {
    return outs;
  }
  for (at::Tensor& t : r) t = t.to(dtype).contiguous();
  return r;
}

// Rounds each output to the dtype of the same output of `like`.
std::vector<at::Tensor> RoundLike(std::vector<at::Tensor> values,
                                  const std::vector<at::Tensor>& like) {
  for (size_t k = 0; k < values.size() && k < like.size(); ++k) {
    if (values[k].defined() && like[k].defined()) values[k] = values[k].to(like[k].scalar_type());
  }
  return values;
}

// Calls one node through the c10 dispatcher; throws on any failure.
torch::jit::Stack Call(const Node& node, const Lookup& lookup) {
  auto handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  if (!handle.has_value()) {
    throw std::invalid_argument("no ATen operator named " + node.op + "." + node.overload);
  }
  torch::jit::Stack stack = BuildStack(handle->schema(), node, lookup);
  handle->callBoxed(&stack);
  if (stack.size() != node.results.size()) {
    throw std::runtime_error(node.op + " returned " + std::to_string(stack.size()) +
                             " values; the program names " + std::to_string(node.results.size()));
  }
  return stack;
}

// An orthogonal polynomial's value at a NaN x is NaN when n >= 1, but
// PyTorch's kernel returns a variable it never set there, the float64 one
// too: the reference says NaN (divfuzz's oracles/nan_rule.h).
void CorrectReference(const Node& node, const Lookup& lookup, std::vector<at::Tensor>* values) {
  if (!kNanRule || values->empty() || !(*values)[0].defined() ||
      !(*values)[0].is_floating_point()) {
    return;
  }
  auto handle = c10::Dispatcher::singleton().findSchema({node.op, node.overload});
  if (!handle.has_value()) return;
  const torch::jit::Stack args = BuildStack(handle->schema(), node, lookup);
  if (args.size() < 2) return;
  const auto as_double = [](const c10::IValue& v) {
    return v.isTensor() ? v.toTensor().detach().to(at::kCPU).to(at::kDouble)
                        : at::scalar_tensor(v.toScalar().toDouble(), at::kDouble);
  };
  const at::Tensor nan = at::isnan(as_double(args[0])).logical_and(at::ge(as_double(args[1]), 1));
  at::Tensor& out = (*values)[0];
  if (nan.sizes() == out.sizes()) out = at::where(nan, at::full_like(out, NAN), out);
}

// Runs the program on a target and returns the diverging output. On cpu and
// cuda, `reference` receives the diverging node rerun on the CPU in float64
// from this side's own inputs: the oracle's per-node reference.
Result Run(const std::string& target, std::optional<Result>* reference) {
  const bool cuda = target == "cuda";
  const bool f64 = target == "cpu-f64";
  std::map<std::string, at::Tensor> env;
  std::map<std::string, Failure> failed;
  const std::map<std::string, std::string> layouts = Layouts();
  for (auto& [name, t] : MakeInputs()) {
    at::Tensor x = f64 ? Upcast(t) : t;
    const auto layout = layouts.find(name);
    env[name] = ApplyLayout(cuda ? x.to(at::kCUDA) : x,
                            layout == layouts.end() ? "" : layout->second);
  }
  const Lookup lookup = [&env](const std::string& n) {
    auto it = env.find(n);
    return it == env.end() ? at::Tensor() : it->second;
  };
  const std::vector<Node> nodes = Program();
  Result result;
  result.failure = Failure{"the node did not run", kNode};
  at::NoGradGuard no_grad;
  for (int i = 0; i < static_cast<int>(nodes.size()) && i <= kNode; ++i) {
    const Node& node = nodes[i];
    std::optional<Failure> failure;
    for (const std::string& u : Uses(node)) {
      auto it = failed.find(u);
      if (it != failed.end()) failure = it->second;
    }
    if (!failure && i == kNode && reference != nullptr && (target == "cpu" || cuda)) {
      std::map<std::string, at::Tensor> up;
      for (const std::string& u : Uses(node)) {
        if (env.count(u)) up[u] = Upcast(env[u].detach().to(at::kCPU)).clone();
      }
      const Lookup up_lookup = [&up](const std::string& n) {
        auto it = up.find(n);
        return it == up.end() ? at::Tensor() : it->second;
      };
      Result ref;
      try {
        ref.values = Capture(Call(node, up_lookup));
        CorrectReference(node, up_lookup, &ref.values);
      } catch (const std::exception& e) {
        ref.failure = Failure{FirstLine(e.what()), i};
      }
      *reference = ref;
    }
    if (!failure) {
      try {
        torch::jit::Stack stack = Call(node, lookup);
        if (cuda) at::detail::getCUDAHooks().deviceSynchronize(0);
        for (size_t k = 0; k < stack.size(); ++k) {
          if (stack[k].isTensor()) env[node.results[k]] = stack[k].toTensor();
        }
        if (i == kNode) {
          result.values = Capture(stack);
          result.failure.reset();
        }
      } catch (const std::exception& e) {
        failure = Failure{FirstLine(e.what()), i};
      }
    }
    if (failure) {
      for (const std::string& r : node.results) failed[r] = *failure;
      if (i == kNode) result.failure = failure;
    }
  }
  return result;
}

// ---- the oracle's rules for one output --------------------------------

struct Tol {
  double rtol, atol;
};

Tol Tolerance(at::ScalarType t) {  // torch.testing.assert_close's defaults
  switch (t) {
    case at::kHalf:
      return {1e-3, 1e-5};
    case at::kBFloat16:
      return {1.6e-2, 1e-5};
    case at::kDouble:
    case at::kComplexDouble:
      return {1e-7, 1e-7};
    default:
      return {1.3e-6, 1e-5};
  }
}

// Real view in float64: complex tensors as (re, im) pairs.
std::vector<double> Parts(const at::Tensor& t) {
  at::Tensor d = at::isComplexType(t.scalar_type())
                     ? at::view_as_real(t.resolve_conj().to(at::kComplexDouble))
                     : t.to(at::kDouble);
  d = d.contiguous().reshape({-1});
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

int ClassOf(double x) { return std::isnan(x) ? 3 : std::isinf(x) ? (x > 0 ? 1 : 2) : 0; }

std::string Hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

std::string Num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g (%a)", x, x);
  return buf;
}

struct Verdict {
  std::string cls;  // empty: no divergence
  std::string detail;
  int64_t flat = -1;  // into the real view
  size_t part = 0;    // which compared tensor (a decomposition's invariant)
};

Verdict CompareOne(const at::Tensor& x, const at::Tensor& y, const std::string& na,
                   const std::string& nb) {
  if (x.defined() != y.defined() ||
      (x.defined() && (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()))) {
    std::ostringstream m;
    m << na << ": " << (x.defined() ? std::string(c10::toString(x.scalar_type())) : "undefined")
      << " " << (x.defined() ? x.sizes() : at::IntArrayRef{}) << ", " << nb << ": "
      << (y.defined() ? std::string(c10::toString(y.scalar_type())) : "undefined") << " "
      << (y.defined() ? y.sizes() : at::IntArrayRef{});
    return {"meta_split", m.str(), -1};
  }
  if (!x.defined() || x.numel() == 0) return {"", "both empty", -1};
  const bool complex = at::isComplexType(x.scalar_type());
  const size_t per = complex ? 2 : 1;
  if (at::isFloatingType(x.scalar_type()) || complex) {
    const std::vector<double> pa = Parts(x), pb = Parts(y);
    for (size_t i = 0; i < pa.size(); ++i) {
      if (ClassOf(pa[i]) != ClassOf(pb[i])) {
        return {"class_split",
                "element " + std::to_string(i / per) + ": " + na + " " + Num(pa[i]) + ", " + nb +
                    " " + Num(pb[i]),
                static_cast<int64_t>(i)};
      }
    }
    const Tol tol = Tolerance(x.scalar_type());
    double worst = 0;
    for (size_t i = 0; i < pa.size(); ++i) {
      if (ClassOf(pa[i]) != 0) continue;
      const double err = std::fabs(pa[i] - pb[i]);
      const double allowed = tol.atol + tol.rtol * std::fabs(pb[i]);
      worst = std::max(worst, err);
      if (err > allowed) {
        std::ostringstream m;
        m << "element " << i / per << ": " << na << " " << Num(pa[i]) << ", " << nb << " "
          << Num(pb[i]) << ", |a-b| = " << err << " > " << allowed << " = atol " << tol.atol
          << " + rtol " << tol.rtol << " * |b|";
        return {"tolerance", m.str(), static_cast<int64_t>(i)};
      }
    }
    std::ostringstream m;
    m << "equal within rtol " << tol.rtol << ", atol " << tol.atol << " (max |a-b| = " << worst
      << ")";
    return {"", m.str(), -1};
  }
  const at::Tensor ia = x.to(at::kLong).contiguous().reshape({-1});
  const at::Tensor ib = y.to(at::kLong).contiguous().reshape({-1});
  for (int64_t i = 0; i < ia.numel(); ++i) {
    const int64_t u = ia.data_ptr<int64_t>()[i], w = ib.data_ptr<int64_t>()[i];
    if (u != w) {
      return {"exact_mismatch",
              "element " + std::to_string(i) + ": " + na + " " + std::to_string(u) + ", " + nb +
                  " " + std::to_string(w),
              i};
    }
  }
  return {"", "exactly equal", -1};
}

// The oracle's rules over what is compared (Comparable).
Verdict Compare(const Result& a, const Result& b, const std::string& na, const std::string& nb) {
  if (a.failure && b.failure) return {"", "both targets raised", -1};
  if (a.failure || b.failure) {
    const std::string& side = a.failure ? na : nb;
    const std::string& msg = a.failure ? a.failure->message : b.failure->message;
    const bool gap = msg.find("not implemented for") != std::string::npos;
    return {gap ? "dtype_gap" : "error_split", "only " + side + " raised: " + msg, -1};
  }
  if (a.values.size() != b.values.size()) return {"meta_split", "different numbers of outputs", -1};
  Verdict last{"", "no output", -1};
  for (size_t k = 0; k < a.values.size(); ++k) {
    Verdict v = CompareOne(a.values[k], b.values[k], na, nb);
    v.part = k;
    if (!v.cls.empty()) {
      if (*kInvariants != '\0') {
        v.detail = "invariant " + std::to_string(k) + " of the decomposition: " + v.detail;
      }
      return v;
    }
    last = v;
  }
  return last;
}

int MantissaBits(at::ScalarType t) {
  switch (t) {
    case at::kHalf:
      return 10;
    case at::kBFloat16:
      return 7;
    case at::kDouble:
    case at::kComplexDouble:
      return 52;
    default:
      return 23;
  }
}

double SmallestSubnormal(at::ScalarType t) {
  switch (t) {
    case at::kHalf:
      return std::ldexp(1.0, -24);
    case at::kBFloat16:
      return std::ldexp(1.0, -133);
    case at::kDouble:
    case at::kComplexDouble:
      return std::ldexp(1.0, -1074);
    default:
      return std::ldexp(1.0, -149);
  }
}

// |value - reference| in units in the last place of the dtype at the reference.
double Ulps(double value, double reference, at::ScalarType t) {
  if (!std::isfinite(value) || !std::isfinite(reference)) return NAN;
  const double tiny = SmallestSubnormal(t);
  const double spacing =
      reference == 0 ? tiny
                     : std::max(std::ldexp(1.0, std::ilogb(reference) - MantissaBits(t)), tiny);
  return std::fabs(value - reference) / spacing;
}

std::string Exact(const at::Tensor& t, int64_t limit = 64);

std::string ExactAll(const std::vector<at::Tensor>& values) {
  std::string out;
  for (size_t k = 0; k < values.size(); ++k) {
    out += (k ? " | " : "") + (values[k].defined() ? Exact(values[k]) : std::string("undefined"));
  }
  return out;
}

std::string Exact(const at::Tensor& t, int64_t limit) {
  std::string out;
  if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type())) {
    const std::vector<double> p = Parts(t);
    const size_t per = at::isComplexType(t.scalar_type()) ? 2 : 1;
    for (size_t i = 0; i < p.size() && i < static_cast<size_t>(limit) * per; ++i) {
      out += (i ? " " : "") + Hex(p[i]);
    }
  } else {
    const at::Tensor l = t.to(at::kLong).contiguous().reshape({-1});
    for (int64_t i = 0; i < l.numel() && i < limit; ++i) {
      out += (i ? " " : "") + std::to_string(l.data_ptr<int64_t>()[i]);
    }
  }
  if (t.numel() > limit) out += " ...";
  return out;
}

void Show(const std::string& name, const Result& r) {
  if (r.failure) {
    std::cout << name << ": raised at node " << r.failure->node << ": " << r.failure->message
              << "\n";
    return;
  }
  for (size_t k = 0; k < r.values.size(); ++k) {
    const at::Tensor& t = r.values[k];
    std::cout << name << (r.values.size() > 1 ? " invariant " + std::to_string(k) : "");
    if (!t.defined()) {
      std::cout << ": undefined\n";
      continue;
    }
    std::cout << ": dtype " << c10::toString(t.scalar_type()) << ", shape " << t.sizes() << "\n"
              << t << "\n  exact: " << Exact(t) << "\n";
  }
}

// ---- the environment ---------------------------------------------------------

std::string FileValue(const std::string& path, const std::string& key, char sep) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t at = line.find(sep);
    if (at == std::string::npos) continue;
    std::string v = line.substr(at + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.front() == '"')) v.erase(0, 1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '"')) v.pop_back();
    return v;
  }
  return "?";
}

std::string Loaded(const std::string& prefix) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.rfind('/');
    if (slash != std::string::npos && line.compare(slash + 1, prefix.size(), prefix) == 0) {
      return line.substr(line.find('/'));
    }
  }
  return "";
}

std::string Sibling(const std::string& loaded, const std::string& prefix) {
  const size_t slash = loaded.rfind('/');
  if (slash == std::string::npos) return "";
  DIR* d = opendir(loaded.substr(0, slash).c_str());
  if (d == nullptr) return "";
  std::string found;
  while (dirent* e = readdir(d)) {
    if (std::string(e->d_name).rfind(prefix, 0) == 0) {
      found = loaded.substr(0, slash + 1) + e->d_name;
      break;
    }
  }
  closedir(d);
  return found;
}

std::string LibraryVersion(const std::string& path, const char* symbol) {
  if (path.empty()) return "?";
  void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) return "?";
  auto fn = reinterpret_cast<int (*)(int, int*)>(dlsym(h, symbol));
  int v[3] = {0, 0, 0};
  std::string out = "?";
  if (fn != nullptr && fn(0, &v[0]) == 0 && fn(1, &v[1]) == 0 && fn(2, &v[2]) == 0) {
    out = std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
  }
  dlclose(h);
  return out;
}

std::string GpuName() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) return "?";
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(h, "cuInit"));
  auto get = reinterpret_cast<int (*)(int*, int)>(dlsym(h, "cuDeviceGet"));
  auto name = reinterpret_cast<int (*)(char*, int, int)>(dlsym(h, "cuDeviceGetName"));
  auto attr = reinterpret_cast<int (*)(int*, int, int)>(dlsym(h, "cuDeviceGetAttribute"));
  int dev = 0, major = 0, minor = 0;
  char buf[256] = {0};
  if (init == nullptr || get == nullptr || name == nullptr || init(0) != 0 || get(&dev, 0) != 0 ||
      name(buf, sizeof buf - 1, dev) != 0) {
    return "?";
  }
  std::string out = buf;
  if (attr != nullptr && attr(&major, 75, dev) == 0 && attr(&minor, 76, dev) == 0) {
    out += " (sm_" + std::to_string(major) + std::to_string(minor) + ")";
  }
  return out;
}

void PrintEnvironment() {
  const char* forced = std::getenv("ATEN_CPU_CAPABILITY");
  std::cout << "torch " << TORCH_VERSION << " (libtorch), ATen CPU capability "
            << at::get_cpu_capability()
            << (forced != nullptr ? std::string(" (ATEN_CPU_CAPABILITY=") + forced + ")" : "")
            << ", " << at::get_num_threads() << " threads\n";
  std::cout << "CPU: " << FileValue("/proc/cpuinfo", "model name", ':') << " ("
            << sysconf(_SC_NPROCESSORS_ONLN)
            << " cores), OS: " << FileValue("/etc/os-release", "PRETTY_NAME", '=') << "\n";
  if (at::hasCUDA()) {
    const long rt = at::detail::getCUDAHooks().versionCUDART();
    const std::string cublas = Loaded("libcublas.so");
    std::string cusolver = Loaded("libcusolver.so");
    if (cusolver.empty()) cusolver = Sibling(cublas, "libcusolver.so");
    std::cout << "CUDA runtime " << rt / 1000 << "." << (rt % 1000) / 10 << ", GPU: " << GpuName()
              << ", driver " << FileValue("/sys/module/nvidia/version", "", '\n') << ", cuBLAS "
              << LibraryVersion(cublas, "cublasGetProperty") << ", cuSOLVER "
              << LibraryVersion(cusolver, "cusolverGetProperty") << "\n";
  } else {
    std::cout << "CUDA: not available\n";
  }
}

// ---- nondeterminism: one target against itself ---------------------------

// "" when two runs agree bit for bit (a NaN matches any NaN in the same place;
// -0.0 and 0.0 differ), else the first element that differs, exactly.
std::string BitDifference(const at::Tensor& x, const at::Tensor& y) {
  if (x.defined() != y.defined()) return "one run has no tensor";
  if (!x.defined()) return "";
  if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()) {
    std::ostringstream m;
    m << "dtype/shape: " << c10::toString(x.scalar_type()) << " " << x.sizes() << " vs "
      << c10::toString(y.scalar_type()) << " " << y.sizes();
    return m.str();
  }
  const bool complex = at::isComplexType(x.scalar_type());
  auto flat = [complex](const at::Tensor& t) {
    at::Tensor c = t.contiguous();
    if (complex) c = at::view_as_real(c.resolve_conj());
    return c.contiguous().reshape({-1});
  };
  const at::Tensor a = flat(x), b = flat(y);
  at::Tensor differ;
  const bool floating = at::isFloatingType(a.scalar_type());
  const at::ScalarType bits = a.element_size() == 2   ? at::kShort
                              : a.element_size() == 4 ? at::kInt
                                                      : at::kLong;
  if (floating) {
    differ = a.view(bits).ne(b.view(bits)).logical_and(a.isnan().logical_and(b.isnan()).logical_not());
  } else {
    differ = a.ne(b);
  }
  const at::Tensor where = differ.nonzero();
  if (where.size(0) == 0) return "";
  const int64_t i = where[0][0].item<int64_t>();
  auto value = [&](const at::Tensor& t) {
    if (!floating) return std::to_string(t[i].to(at::kLong).item<int64_t>());
    char raw[32];
    const uint64_t mask = a.element_size() == 8 ? ~0ull : (1ull << (8 * a.element_size())) - 1;
    std::snprintf(raw, sizeof raw, "%0*" PRIx64, static_cast<int>(2 * a.element_size()),
                  static_cast<uint64_t>(t.slice(0, i, i + 1).view(bits).to(at::kLong).item<int64_t>()) &
                      mask);
    return Num(t[i].item<double>()) + " bits 0x" + raw;
  };
  const std::string part = !complex ? "" : i % 2 ? " (imag)" : " (real)";
  return "element " + std::to_string(complex ? i / 2 : i) + part + ": " + value(a) + " vs " +
         value(b);
}

std::string RunDifference(const Result& x, const Result& y) {
  if (x.failure && y.failure) return "";
  if (x.failure || y.failure) {
    return "one run raises: " + (x.failure ? x.failure->message : y.failure->message);
  }
  if (x.values.size() != y.values.size()) return "different numbers of results";
  for (size_t k = 0; k < x.values.size(); ++k) {
    const std::string d = BitDifference(x.values[k], y.values[k]);
    if (!d.empty()) return x.values.size() > 1 ? "result " + std::to_string(k) + ": " + d : d;
  }
  return "";
}

std::string Shown(const Result& r) {
  return r.failure ? "raised at node " + std::to_string(r.failure->node) + ": " + r.failure->message
                   : ExactAll(r.values);
}

// glibc's M_PERTURB: fresh malloc blocks hold ~byte (0: off). Runs alternate
// 0xff (zeroed) and 0x5a (0xa5 bytes), so a kernel that reads memory it never
// wrote (CPU linalg_lstsq's gelsy pivots, pytorch#187411) differs between runs
// in a fresh process as it did in the fuzzer's; a correct kernel cannot tell.
void MallocPerturb(int byte) {
#if defined(__GLIBC__) && defined(M_PERTURB)
  mallopt(M_PERTURB, byte);
#else
  (void)byte;
#endif
}

// Runs one target on the same inputs up to kRuns times (kRunSeconds at most):
// 1 when a run differs from the first bit for bit (the finding reproduces),
// else 0.
int CheckNondeterminism(const std::string& target, bool cuda) {
  if (target == "cuda" && !cuda) {
    std::cout << "CUDA not available: skipping the nondeterminism check of cuda\n";
    return 0;
  }
  const std::string run_as = target == "cpu-scalar" ? "cpu" : target;
  std::cout << "runs alternate malloc's perturb byte (fresh memory zeroed, then 0xa5"
            << (std::getenv("DIVFUZZ_MALLOC_CACHE_OFF") ? "; glibc's thread cache off" : "")
            << "): a kernel that reads memory it never wrote differs too\n";
  auto run = [&](int k) {
    MallocPerturb(k % 2 ? 0xff : 0x5a);
    Result r = Run(run_as, nullptr);
    MallocPerturb(0);
    return r;
  };
  const Result first = run(1);
  const auto start = std::chrono::steady_clock::now();
  int k = 1;
  while (k < kRuns && std::chrono::steady_clock::now() - start < std::chrono::seconds(kRunSeconds)) {
    ++k;
    const Result again = run(k);
    const std::string d = RunDifference(first, again);
    if (d.empty()) continue;
    std::cout << target << " run 1: " << Shown(first) << "\n"
              << target << " run " << k << ": " << Shown(again) << "\n"
              << "VERDICT: nondeterminism reproduces (" << target << " run 1 vs run " << k
              << "): " << d << "\n";
    return 1;
  }
  std::cout << "VERDICT: no nondeterminism in " << k << " runs of " << target << "\n";
  return 0;
}

// Every target's result (CUDA skipped when absent), comparable with the
// others, and each side's float64 reference of the node.
void Collect(const std::vector<std::string>& runs, bool cuda,
             std::map<std::string, Result>* results_out,
             std::map<std::string, std::optional<Result>>* refs_out) {
  std::map<std::string, Result>& results = *results_out;
  std::map<std::string, std::optional<Result>>& refs = *refs_out;
  results.clear();
  refs.clear();
  for (const std::string& t : runs) {
    if (t == "cuda" && !cuda) continue;
    results[t] = Run(t == "cpu-scalar" ? "cpu" : t, &refs[t]);
  }
  // cpu-f64 rounds back to the program's dtype.
  Result& f64 = results["cpu-f64"];
  const Result& plain = results[runs[0]];
  if (!f64.failure && !plain.failure) {
    f64.values = RoundLike(f64.values, plain.values);
  } else if (!f64.failure && kValueDType && f64.values.size() == 1 && f64.values[0].defined()) {
    f64.values[0] = f64.values[0].to(*kValueDType);
  }
  for (auto& [t, r] : results) {
    if (r.failure) continue;
    if (refs[t] && !refs[t]->failure) {
      refs[t]->values = Comparable(RoundLike(refs[t]->values, r.values));
    }
    r.values = Comparable(r.values);
  }
}

void ShowAll(const std::vector<std::string>& runs, std::map<std::string, Result>& results,
             std::map<std::string, std::optional<Result>>& refs) {
  std::cout << "\nOutput %" << kValue << ": result " << kOutput << " of node " << kNode << ", "
            << kOp << "\n";
  for (const std::string& t : runs) {
    if (!results.count(t)) {
      std::cout << t << ": skipped (CUDA not available)\n";
      continue;
    }
    Show(t, results[t]);
    if (refs[t]) {
      std::cout << "  float64 reference from " << t << "'s own inputs: "
                << (refs[t]->failure ? "raised: " + refs[t]->failure->message
                                     : ExactAll(refs[t]->values))
                << "\n";
    }
  }
  std::cout << "\n";
}

// What a CUDA fault says (it poisons the process's CUDA context: a crash).
bool CudaFault(const std::string& message) {
  for (const char* f : {"illegal memory access", "device-side assert", "unspecified launch failure",
                        "misaligned address", "illegal instruction"}) {
    if (message.find(f) != std::string::npos) return true;
  }
  return false;
}

// The child's side of CheckFailure: runs the target; exit 3 on a CUDA fault.
int FailureChild(const std::string& target) {
  // Tells the parent its clock can start: libtorch is loaded, the program runs.
  if (const char* marker = std::getenv("DIVFUZZ_REPRO_STARTED")) std::ofstream touch(marker);
  const Result r = Run(target, nullptr);
  std::cout << target << ": " << Shown(r) << "\n" << std::flush;
  return r.failure && CudaFault(r.failure->message) ? 3 : 0;
}

// Runs one target in a child process (this program again): 1 when it hangs
// (still running after kHangSeconds) or crashes (dies by a signal, or a CUDA
// fault), as `kind` says, else 0.
int CheckFailure(const std::string& kind, const std::string& target, bool cuda, char** argv) {
  if (target == "cuda" && !cuda) {
    std::cout << "CUDA not available: skipping the " << kind << " check of cuda\n";
    return 0;
  }
  // A fresh process (this program again): CUDA cannot be used after a fork,
  // and a fault or a hang must not take this one with it. Its environment is
  // built before the fork: only execve runs between fork and exec.
  char marker[] = "/tmp/divfuzz-repro-XXXXXX";
  const int marker_fd = mkstemp(marker);
  if (marker_fd < 0) throw std::runtime_error("cannot make a temporary file");
  close(marker_fd);
  std::remove(marker);
  std::vector<std::string> env = {
      std::string("DIVFUZZ_REPRO_FAILURE_CHILD=") + (target == "cpu-scalar" ? "cpu" : target),
      "CUDA_LAUNCH_BLOCKING=1", std::string("DIVFUZZ_REPRO_STARTED=") + marker};
  if (target == "cpu-scalar") env.push_back("ATEN_CPU_CAPABILITY=default");
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key != "DIVFUZZ_REPRO_FAILURE_CHILD" && key != "CUDA_LAUNCH_BLOCKING" &&
        key != "ATEN_CPU_CAPABILITY" && key != "DIVFUZZ_REPRO_STARTED") {
      env.push_back(kv);
    }
  }
  std::vector<char*> envp;
  for (std::string& kv : env) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::cout << std::flush;
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot fork");
  if (pid == 0) {
    execve("/proc/self/exe", argv, envp.data());
    _exit(127);
  }
  // The clock starts when the child has loaded libtorch and runs the program
  // (it makes the marker file), not at exec.
  auto start = std::chrono::steady_clock::now();
  auto limit = std::chrono::seconds(kHangSeconds + 300);
  bool began = false;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (!began && access(marker, F_OK) == 0) {
      began = true;
      start = std::chrono::steady_clock::now();
      limit = std::chrono::seconds(kHangSeconds);
    }
    if (std::chrono::steady_clock::now() - start > limit) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      std::remove(marker);
      std::cout << target << ": still running after " << kHangSeconds << " s (killed)\n";
      if (kind == "hang") {
        std::cout << "VERDICT: hang reproduces (" << target << ", node " << kNode << ", " << kOp
                  << ")\n";
        return 1;
      }
      std::cout << "VERDICT: no crash (" << target << " hangs instead)\n";
      return 0;
    }
    usleep(50000);
  }
  std::remove(marker);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFSIGNALED(status)) {
    std::cout << target << ": died by signal " << WTERMSIG(status) << " after " << took << " s\n";
    if (kind == "crash") {
      std::cout << "VERDICT: crash reproduces (" << target << ", node " << kNode << ", " << kOp
                << ")\n";
      return 1;
    }
    std::cout << "VERDICT: no hang (" << target << " crashes instead)\n";
    return 0;
  }
  if (kind == "crash" && WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    std::cout << "VERDICT: crash reproduces (" << target << ", node " << kNode << ", " << kOp
              << "): a CUDA fault\n";
    return 1;
  }
  std::cout << target << ": finished in " << took << " s (exit status "
            << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ")\nVERDICT: no " << kind
            << "\n";
  return 0;
}

bool KnownTarget(const std::string& t) {
  return t == "cpu" || t == "cuda" || t == "cpu-f64" || t == "cpu-scalar";
}

int Main(int argc, char** argv) {
  if (const char* child = std::getenv("DIVFUZZ_REPRO_FAILURE_CHILD")) return FailureChild(child);
  std::string ta = kTargetA, tb = kTargetB;
  if (argc == 2 && std::string(argv[1]) == "--dump-inputs") {
    // Every input exactly: hex floats (complex: re, im), integers.
    // A layout shows as its name and the strides it gives on the CPU.
    const std::map<std::string, std::string> layouts = Layouts();
    for (const auto& [name, t] : MakeInputs()) {
      std::cout << name << " " << c10::toString(t.scalar_type()) << " " << t.sizes();
      if (const auto l = layouts.find(name); l != layouts.end()) {
        std::cout << " " << l->second << " strides " << ApplyLayout(t, l->second).strides();
      }
      std::cout << ": " << Exact(t, t.numel()) << "\n";
    }
    return 0;
  }
  if (argc == 3) {
    ta = argv[1];
    tb = argv[2];
  } else if (argc != 1) {
    std::cout << "usage: " << argv[0]
              << " [TARGET_A TARGET_B | --dump-inputs]  (cpu, cuda, cpu-f64, cpu-scalar)\n";
    return 2;
  }
  if (!KnownTarget(ta) || !KnownTarget(tb)) {
    std::cout << "unknown target (known: cpu, cuda, cpu-f64, cpu-scalar)\n";
    return 2;
  }
#if defined(__GLIBC__)
  // malloc's perturb byte (CheckNondeterminism) never reaches the blocks
  // glibc's thread cache hands back, and glibc 2.38+ serves PyTorch's aligned
  // CPU allocations from it too: rerun this program once with the cache off.
  if (*kRerun != '\0' && std::string(kRerun) != "cuda" &&
      std::getenv("DIVFUZZ_MALLOC_CACHE_OFF") == nullptr) {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    const std::string off = std::string(tunables != nullptr && *tunables != '\0'
                                             ? std::string(tunables) + ":"
                                             : "") +
                            "glibc.malloc.tcache_count=0";
    setenv("DIVFUZZ_MALLOC_CACHE_OFF", "1", 1);
    setenv("GLIBC_TUNABLES", off.c_str(), 1);
    std::cout.flush();
    execv("/proc/self/exe", argv);
    std::cout << "cannot rerun with glibc.malloc.tcache_count=0: perturbing less memory\n";
  }
#endif
  if (ta == "cpu-scalar" || tb == "cpu-scalar") {
    // ATen picks its kernels at start-up: rerun this program with the scalar ones.
    const char* cap = std::getenv("ATEN_CPU_CAPABILITY");
    if (cap == nullptr || std::string(cap) != "default") {
      setenv("ATEN_CPU_CAPABILITY", "default", 1);
      execv("/proc/self/exe", argv);
      std::cout << "cannot rerun with ATEN_CPU_CAPABILITY=default\n";
      return 2;
    }
    if (ta == "cpu" || tb == "cpu") {
      std::cout << "cpu-scalar replaces cpu's kernels in this process: compare it with cpu-f64 "
                   "or cuda\n";
      return 2;
    }
  }
  std::cout << "divfuzz repro: " << kTitle << "\n";
  if (*kSeen != '\0') std::cout << "divfuzz saw: " << kSeen << "\n";
  PrintEnvironment();
  const bool cuda = at::hasCUDA();
  // Running the program here would hang or kill this process.
  if (*kFailure != '\0') return CheckFailure(kFailure, kFailureTarget, cuda, argv);
  const bool scalar = ta == "cpu-scalar" || tb == "cpu-scalar";
  // CPU, CUDA and the float64 reference always (CUDA skipped when absent),
  // and whatever else the two targets name; cpu-scalar stands in for cpu.
  std::vector<std::string> runs;
  for (const std::string& t : {std::string(scalar ? "cpu-scalar" : "cpu"), std::string("cuda"),
                               std::string("cpu-f64"), ta, tb}) {
    bool seen = false;
    for (const std::string& r : runs) seen = seen || r == t;
    if (!seen) runs.push_back(t);
  }
  std::map<std::string, Result> results;
  std::map<std::string, std::optional<Result>> refs;
  Collect(runs, cuda, &results, &refs);
  ShowAll(runs, results, refs);
  if (*kRerun != '\0') return CheckNondeterminism(kRerun, cuda);
  if ((ta == "cuda" || tb == "cuda") && !cuda) {
    std::cout << "CUDA not available: skipping the verdict (compare other targets: " << argv[0]
              << " cpu cpu-f64)\n";
    return 0;
  }
  Verdict v = Compare(results[ta], results[tb], ta, tb);
  int attempt = 1;
  while (v.cls.empty() && attempt < kAttempts) {
    ++attempt;
    Collect(runs, cuda, &results, &refs);
    v = Compare(results[ta], results[tb], ta, tb);
  }
  if (v.cls.empty()) {
    std::cout << "VERDICT: no divergence (" << ta << " vs " << tb
              << (attempt == 1 ? std::string() : ", " + std::to_string(attempt) + " attempts")
              << "): " << v.detail << "\n";
    return 0;
  }
  if (attempt > 1) {
    std::cout << "The results vary from run to run: " << ta << " and " << tb
              << " diverge on attempt " << attempt << " of " << kAttempts << ":\n";
    ShowAll(runs, results, refs);
  }
  std::cout << "VERDICT: divergence reproduces (" << ta << " vs " << tb << "): " << v.cls << ": "
            << v.detail << "\n";
  // Who is wrong: each side against the float64 reference of the node
  // computed from its own inputs (cpu-f64 is the reference itself).
  std::vector<std::string> blamed;
  for (const std::string& t : {ta, tb}) {
    if (t == "cpu-f64") {
      std::cout << "  " << t << ": the reference itself\n";
      continue;
    }
    const Result& r = results[t];
    const std::optional<Result>& ref = refs[t];
    if (!ref) continue;
    bool miss = false;
    std::string why;
    if (ref->failure) {
      miss = !r.failure;
      why = miss ? "the float64 reference raises (" + ref->failure->message + ") but " + t +
                       " returns values"
                 : t + " raises, and so does the float64 reference";
    } else if (r.failure) {
      miss = true;
      why = t + " raises (" + r.failure->message + ") where the float64 reference computes a value";
    } else {
      const Verdict own = Compare(r, *ref, t, "reference");
      miss = !own.cls.empty();
      why = miss ? t + " misses the float64 reference computed from its own inputs: " + own.cls +
                       ": " + own.detail
                 : t + " matches the float64 reference computed from its own inputs";
      const at::Tensor rv = v.part < r.values.size() ? r.values[v.part] : at::Tensor();
      const at::Tensor fv = v.part < ref->values.size() ? ref->values[v.part] : at::Tensor();
      if (v.flat >= 0 && rv.defined() && fv.defined() &&
          (at::isFloatingType(rv.scalar_type()) || at::isComplexType(rv.scalar_type()))) {
        const std::vector<double> pv = Parts(rv), pr = Parts(fv);
        if (static_cast<size_t>(v.flat) < pv.size() && static_cast<size_t>(v.flat) < pr.size()) {
          const double u = Ulps(pv[v.flat], pr[v.flat], rv.scalar_type());
          std::ostringstream m;
          m << "\n    at that element: " << t << " " << Num(pv[v.flat]) << ", float64 reference "
            << Num(pr[v.flat]);
          if (!std::isnan(u)) m << ", error " << u << " ULPs";
          why += m.str();
        }
      }
    }
    std::cout << "  " << why << "\n";
    if (miss) blamed.push_back(t);
  }
  const std::string side = blamed.size() == 2   ? (v.cls == "tolerance" ? "undecided" : "both")
                           : blamed.size() == 1 ? blamed[0]
                                                : "undecided";
  std::cout << "WRONG SIDE: " << side << "\n";
  return 1;
}
)HARNESS";

}  // namespace

}  // namespace divfuzz::minimize
