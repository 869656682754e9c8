#include "minimize/emit_cpp.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "graph/gradient.h"
#include "graph/materialize.h"
#include "graph/printer.h"
#include "minimize/emit_common.h"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "oracles/nan_rule.h"

extern const char kDivfuzzReproHarnessCpp[];
extern const char kDivfuzzReproCMake[];

namespace divfuzz::minimize {
namespace {

using graph::DType;
using graph::Literal;

// minimize/harness/repro_harness_main.cc (the generic part of every C++
// repro) and repro_cmake.txt (its CMakeLists.txt), embedded at build time.
const char* Harness() { return kDivfuzzReproHarnessCpp; }

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

std::string ScalarTypeExpr(DType d) { return std::string(AtenDTypeName(d)); }

// An exact double expression: a hex-float literal, kInf, kNaN, or NaNBits(...)
// for a NaN other than +-kNaN (its sign and payload kept).
std::string CppDouble(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  if (std::isnan(v) && (bits & ~(uint64_t{1} << 63)) != 0x7ff8000000000000u) {
    return absl::StrCat("NaNBits(0x", absl::Hex(bits), "u)");
  }
  if (std::isnan(v)) return std::signbit(v) ? "-kNaN" : "kNaN";
  if (std::isinf(v)) return v > 0 ? "kInf" : "-kInf";
  return graph::FormatHexFloat(v);
}

std::string CppInt(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
  return absl::StrCat(v, "LL");
}

std::string CppLiteral(const Literal& l) {
  static const LiteralSyntax kCpp = {
      "N()",
      "B(true)",
      "B(false)",
      [](int64_t i) { return absl::StrCat("I(", CppInt(i), ")"); },
      [](double f) { return absl::StrCat("D(", CppDouble(f), ")"); },
      [](absl::string_view s) { return absl::StrCat("S(", CppStr(s), ")"); },
      [](DType d) { return absl::StrCat("T(", ScalarTypeExpr(d), ")"); },
      [](absl::string_view s) { return absl::StrCat("V(", CppStr(s), ")"); },
      "L({",
      "})"};
  return FormatLiteral(l, kCpp);
}

std::string Shape(const std::vector<int64_t>& shape) {
  return absl::StrCat("{", absl::StrJoin(shape, ", "), "}");
}

// `v["x"] = ...;`: built in float64 (complex128) and cast, like the executor.
std::string InputStatement(const graph::Input& input) {
  const std::vector<double> values = graph::MaterializePayload(input);
  const std::string lhs = absl::StrCat("  v[", CppStr(input.name), "] = ");
  const std::string tail =
      absl::StrCat(Shape(input.type.shape), ", ", ScalarTypeExpr(input.type.dtype), ");\n");
  const bool complex = graph::IsComplex(input.type.dtype);
  if (UniformPayload(values, complex ? 2 : 1)) {
    return absl::StrCat(lhs, complex ? "ComplexFill(" : "Fill(", CppDouble(values[0]),
                        complex ? absl::StrCat(", ", CppDouble(values[1])) : "", ", ", tail);
  }
  std::vector<std::string> items;
  for (double v : values) items.push_back(CppDouble(v));
  return absl::StrCat(lhs, complex ? "ComplexValues" : "Values", "({\n", WrapItems(items, "      "),
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

std::string NodeStatement(const graph::Node& node) {
  std::vector<std::string> results, args;
  for (const std::string& r : node.results) results.push_back(CppStr(r));
  for (const graph::Argument& a : node.args) {
    args.push_back(absl::StrCat("{", CppStr(a.name), ", ", CppLiteral(a.value), "}"));
  }
  return absl::StrCat("      {{", absl::StrJoin(results, ", "), "}, ", CppStr(node.op), ", ",
                      CppStr(node.overload), ", {", absl::StrJoin(args, ", "), "}},\n");
}

std::string ErrorProgram(const std::string& title, const std::string& message) {
  return absl::StrCat("// divfuzz repro: ", Comment(title),
                      "\n#include <iostream>\n\nint main() {\n  std::cout << ", CppStr(message),
                      " << \"\\n\";\n  return 2;\n}\n");
}

std::string Header(const graph::Program& program, const ReproSpec& spec, const std::string& where) {
  std::string s = absl::StrCat("// divfuzz repro: ", Comment(spec.title.empty() ? where : spec.title),
                               "\n//\n// Compares ", spec.target_a, " vs ", spec.target_b, " on ",
                               where, ".\n", CheckLines(spec, "// ", /*flags=*/false));
  absl::StrAppend(&s, R"(//
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
  return s;
}

// {{"cpu", 0x1.8p-3}, ...}
std::string CppExact(const std::map<std::string, double>& exact) {
  std::vector<std::string> items;
  for (const auto& [target, v] : exact) {
    items.push_back(absl::StrCat("{", CppStr(target), ", ", CppDouble(v), "}"));
  }
  return absl::StrCat("{", absl::StrJoin(items, ", "), "}");
}

// {"x", "w"}
std::string CppNames(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (const std::string& n : names) quoted.push_back(CppStr(n));
  return absl::StrCat("{", absl::StrJoin(quoted, ", "), "}");
}

// The program's constants: what it compares and how.
std::string ProgramConstants(const graph::Program& program, const ReproSpec& spec, int node_index,
                             const std::string& where) {
  const graph::Node& target = program.nodes[node_index];
  const std::string& value = target.results[spec.output_index];
  std::string dtype = "std::nullopt";
  if (absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(program); types.ok()) {
    auto it = types->find(value);
    if (it != types->end()) dtype = ScalarTypeExpr(it->second.dtype);
  }
  // {comment above, declaration (type and name), value, comment after}
  const std::vector<std::array<std::string, 4>> constants = {
      {"", "const char* const kTitle", CppStr(spec.title.empty() ? where : spec.title), ""},
      {"", "const char* const kSeen", CppStr(spec.seen), "what divfuzz saw"},
      {"", "const char* const kTargetA", CppStr(spec.target_a), ""},
      {"", "const char* const kTargetB", CppStr(spec.target_b), ""},
      {"", "const int kNode", absl::StrCat(node_index), "the diverging node"},
      {"", "const int kOutput", absl::StrCat(spec.output_index), "which of its results"},
      {"", "const char* const kValue", CppStr(value), ""},
      {"", "const char* const kOp", CppStr(target.QualifiedName()), ""},
      {"Nondeterminism: the target rerun against itself (empty: none).",
       "const char* const kRerun", CppStr(spec.rerun_target), ""},
      {"", "const int kRuns", absl::StrCat(kNondeterminismRuns), "how often kRerun runs"},
      {"", "const int kRunSeconds", absl::StrCat(kNondeterminismSeconds),
       "and for how long at most"},
      {"How often both targets run before \"no divergence\".", "const int kAttempts",
       absl::StrCat(std::max(1, spec.attempts)), ""},
      {"\"hang\" or \"crash\": kFailureTarget runs in a child process.",
       "const char* const kFailure", CppStr(spec.failure), ""},
      {"", "const char* const kFailureTarget", CppStr(spec.failure_target), ""},
      {"", "const int kHangSeconds", absl::StrCat(spec.hang_seconds),
       "a hang: still running after this long"},
      {"A decomposition is compared through its invariants, not raw factors.",
       "const char* const kInvariants", CppStr(ops::DecompositionName(target.QualifiedName())),
       ""},
      {"An orthogonal polynomial: NaN at a NaN x when n >= 1.", "const bool kNanRule",
       oracles::IsOrthogonalPolynomial(target.op) ? "true" : "false", ""},
      {"The program's dtype of the diverging value (cpu-f64 rounds back to it).",
       "const std::optional<at::ScalarType> kValueDType", dtype, ""},
      {"divfuzz's exact value (MPFR) at that element, from each side's own inputs: it decides.",
       "const long long kExactElement", absl::StrCat(spec.exact_element), ""},
      {"", "const std::map<std::string, double> kExact", CppExact(spec.exact), ""},
      {"Nodes whose op must leave its inputs as they were (linear algebra).",
       "const std::set<int> kGuarded", absl::StrCat("{", absl::StrJoin(GuardedNodes(program), ", "), "}"),
       ""},
      {"Inputs a gradient statement differentiates against: they require grad.",
       "const std::set<std::string> kWrt", CppNames(graph::DifferentiatedInputs(program)), ""},
      {"The node is a gradient statement (torch::autograd::grad).", "const bool kGradient",
       graph::IsGradNode(target) ? "true" : "false", ""},
      {"The backward kernel where divfuzz saw the sides part.", "const char* const kBackward",
       CppStr(spec.backward), ""},
      {"CUDA switches the CUDA runs make (--backend=).", "const char* const kBackend",
       CppStr(spec.backend), ""},
  };
  std::string s;
  for (const auto& [above, declaration, value_text, after] : constants) {
    absl::StrAppend(&s, above.empty() ? "" : "// ", above, above.empty() ? "" : "\n", declaration,
                    " = ", value_text, ";", after.empty() ? "" : "  // ", after, "\n");
  }
  absl::StrAppend(&s, "\n");
  return s;
}

// The harness's constants block: the policy's tolerances at the diverging op
// and the other constants declared in C++ (emit_common.h).
std::string CppConstants(const HarnessConstants& c) {
  std::vector<std::string> tolerances, bits, targets, faults;
  for (const auto& [dtype, tol] : c.tolerances) {
    tolerances.push_back(absl::StrCat("{", ScalarTypeExpr(dtype), ", ", ShortestDouble(tol.rtol),
                                      ", ", ShortestDouble(tol.atol), "}"));
  }
  for (const auto& b : c.float_bits) {
    bits.push_back(absl::StrCat("{", ScalarTypeExpr(b.dtype), ", ", b.mantissa, ", ",
                                b.tiny_exponent, "}"));
  }
  for (const std::string& t : c.targets) targets.push_back(CppStr(t));
  for (const std::string& f : c.cuda_faults) faults.push_back(CppStr(f));
  std::vector<std::string> gaps;
  for (const std::string& g : c.dtype_gaps) gaps.push_back(CppStr(g));
  std::vector<std::string> switches;
  for (const auto& sw : c.switches) {
    switches.push_back(absl::StrCat("{", CppStr(sw.name), ", ", CppStr(sw.library),
                                    ", [](at::Context& ctx) { ", sw.cpp, "; }}"));
  }
  return absl::StrCat(
      "const std::vector<CudaSwitch> kSwitches = {\n", WrapItems(switches, "    "), "};\n",
      "// The policy's (rtol, atol) at the diverging op.\n",
      "const std::vector<DTypeTolerance> kTolerances = {\n", WrapItems(tolerances, "    "),
      "};\nconst std::vector<FloatBits> kFloatBits = {\n", WrapItems(bits, "    "),
      "};\nconst std::vector<std::string> kTargets = {", absl::StrJoin(targets, ", "),
      "};\n// What a CUDA fault says (it poisons the process's CUDA context).\n",
      "const std::vector<std::string> kCudaFaults = {\n", WrapItems(faults, "    "), "};\n",
      absl::StrFormat("const int kPerturbBytes[2] = {0x%02x, 0x%02x};  // odd runs, even runs\n",
                      c.perturb_odd, c.perturb_even),
      "// What an error says when a kernel lacks the dtype.\n",
      "const std::vector<std::string> kDtypeGaps = {\n", WrapItems(gaps, "    "), "};\n",
      "// Set when restarted with kNoMallocCache.\n",
      "const char* const kMallocCacheOff = ", CppStr(c.malloc_cache_off), ";\n",
      "const char* const kNoMallocCache = ", CppStr(c.no_malloc_cache), ";\n",
      "// A child's time to start the program before a hang's clock starts.\n",
      "const int kStartSeconds = ", c.start_seconds, ";\n",
      "const double kPollSeconds = ", ShortestDouble(c.poll_seconds),
      ";  // how often a hang check looks at its child\n",
      "const int kExactLimit = ", c.exact_limit, ";  // how many elements show exactly\n",
      "// What a node's failure says when its op wrote into an input (kGuarded).\n",
      "const char* const kInputWritten = ", CppStr(c.input_written), ";\n");
}

// MakeInputs(), Layouts() and Program().
std::string ProgramPart(const graph::Program& program) {
  std::string s =
      "// ------------------------------------------------------------------------\n"
      "// The program.\n\n"
      "// Its inputs, built in float64 (complex128) and cast, as divfuzz builds them.\n"
      "std::map<std::string, at::Tensor> MakeInputs() {\n"
      "  std::map<std::string, at::Tensor> v;\n";
  for (const graph::Input& input : program.inputs) {
    absl::StrAppend(&s, "  // ", InputText(input, 60, 80, Comment), "\n", InputStatement(input));
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
  absl::StrAppend(&s, "  };\n}\n");
  return s;
}

}  // namespace

CppRepro EmitCpp(const graph::Program& program, const ReproSpec& spec,
                 const oracles::Policy& policy) {
  CppRepro out;
  out.cmake_lists = kDivfuzzReproCMake;
  std::string spec_error;
  const int node_index = ResolveNode(program, spec, &spec_error);
  if (!spec_error.empty()) {
    out.main_cpp = ErrorProgram(spec.title, spec_error);
    return out;
  }
  const std::string where = Where(program, spec, node_index);
  const std::string op = program.nodes[node_index].QualifiedName();
  out.main_cpp = FillHarness(
      Harness(), "//",
      {{"header", Header(program, spec, where)},
       {"program-constants", ProgramConstants(program, spec, node_index, where)},
       {"constants", CppConstants(ConstantsFor(policy, op))},
       {"program", ProgramPart(program)}});
  return out;
}

}  // namespace divfuzz::minimize
