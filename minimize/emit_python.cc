#include "minimize/emit_python.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "absl/strings/match.h"
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
#include "oracles/expected_rules.h"
#include "oracles/nan_rule.h"

extern const char kDivfuzzReproHarnessPy[];

namespace divfuzz::minimize {
namespace {

using graph::DType;
using graph::Literal;

// minimize/harness/repro_harness.py, the generic part of every script:
// targets, error capture, the oracle's rules, the environment and main().
// The program-specific part (constants, make_inputs, program) is emitted in
// its program block.
const char* Harness() { return kDivfuzzReproHarnessPy; }

bool ValidUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t extra = 0;  // continuation bytes after the lead byte
    if (c >= 0x80) {
      if ((c >> 5) == 0x6) {
        extra = 1;
      } else if ((c >> 4) == 0xe) {
        extra = 2;
      } else if ((c >> 3) == 0x1e) {
        extra = 3;
      } else {
        return false;
      }
    }
    if (i + extra >= s.size() && extra > 0) return false;
    for (size_t k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += extra + 1;
  }
  return true;
}

// A single-quoted Python string literal. Non-ASCII text passes through when it
// is valid UTF-8 (the script's encoding); other bytes become \xHH.
std::string PyStr(absl::string_view s) {
  bool utf8 = ValidUtf8(s);
  std::string out = "'";
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8)) {
          absl::StrAppend(&out, "\\x", absl::Hex(c, absl::kZeroPad2));
        } else {
          out.push_back(ch);
        }
    }
  }
  out += "'";
  return out;
}

// One line of comment text: valid UTF-8 (Python requires it even in
// comments), no control characters, at most about `max` bytes.
std::string CommentText(absl::string_view s, size_t max = 120) {
  bool utf8 = ValidUtf8(s);
  std::string out;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      out.push_back(' ');
    } else if (c >= 0x80 && !utf8) {
      out.push_back('?');
    } else {
      out.push_back(ch);
    }
  }
  if (out.size() > max) {
    size_t cut = max;  // not inside a UTF-8 sequence
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) >> 6) == 0x2) --cut;
    out = absl::StrCat(out.substr(0, cut), " ...");
  }
  return out;
}

bool IsPyKeyword(absl::string_view s) {
  static const auto* keywords = new std::set<absl::string_view>{
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  return keywords->count(s) > 0;
}

bool IsPyIdentifier(absl::string_view s) {
  if (s.empty() || IsPyKeyword(s)) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string Attr(const std::string& expr, absl::string_view name) {
  if (IsPyIdentifier(name)) return absl::StrCat(expr, ".", name);
  return absl::StrCat("getattr(", expr, ", ", PyStr(name), ")");
}

std::string TorchDType(DType dtype) { return std::string(TorchDTypeName(dtype)); }

// The exact hex form the script's F reads back ("0x1.8p-3", "inf", "-inf",
// "nan", "-nan", and "-nan_0xfe00000000000" for a NaN with a payload).
std::string Hex(double v) { return graph::FormatHexFloat(v); }

std::string PyFloat(double v) {
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "float('-inf')";
  return absl::StrCat("F('", Hex(v), "')");
}

// (2, 5,): the nodes ops::GuardsItsInputs names.
std::string PyGuarded(const graph::Program& program) {
  std::string s = "(";
  for (int i : GuardedNodes(program)) absl::StrAppend(&s, i, ", ");
  return s + ")";
}

// {'cpu': F('0x1.8p-3'), ...}
std::string PyExact(const std::map<std::string, double>& exact) {
  std::vector<std::string> items;
  for (const auto& [target, v] : exact) {
    items.push_back(absl::StrCat(PyStr(target), ": ", PyFloat(v)));
  }
  return absl::StrCat("{", absl::StrJoin(items, ", "), "}");
}

std::string PyValue(absl::string_view name) { return absl::StrCat("v[", PyStr(name), "]"); }

std::string PyInt(int64_t i) { return absl::StrCat(i); }
std::string PyText(absl::string_view s) { return PyStr(s); }

std::string PyLiteral(const Literal& l) {
  static const LiteralSyntax kPython = {"None", "True",  "False",  PyInt, PyFloat, PyText,
                                        TorchDType, PyValue, "[", "]"};
  return FormatLiteral(l, kPython);
}

// NAN_RULE of the script: for an orthogonal polynomial, a function of the
// values that gives its (x, n) arguments (oracles/nan_rule.h); else None.
std::string NanRule(const graph::Node& node) {
  if (!oracles::IsOrthogonalPolynomial(node.op) || node.args.size() < 2) return "None";
  return absl::StrCat("lambda v: (", PyLiteral(node.args[0].value), ", ",
                      PyLiteral(node.args[1].value), ")");
}

void CollectUses(const Literal& l, std::vector<std::string>* uses) {
  if (l.kind == Literal::Kind::kValue) {
    for (const std::string& u : *uses) {
      if (u == l.s) return;
    }
    uses->push_back(l.s);
  } else if (l.kind == Literal::Kind::kList) {
    for (const Literal& item : l.list) CollectUses(item, uses);
  }
}

std::string PyStrList(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (const std::string& n : names) quoted.push_back(PyStr(n));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

// "aten.add.Tensor", "torch.ops.prims.foo.default", getattr(...) where a part
// is no Python identifier (overload "from", say).
std::string OpExpr(const graph::Node& node) {
  absl::string_view op = node.op;
  absl::string_view ns = "aten";
  size_t sep = op.find("::");
  if (sep != absl::string_view::npos) {
    ns = op.substr(0, sep);
    op = op.substr(sep + 2);
  }
  std::string expr = ns == "aten" ? "aten" : Attr("torch.ops", ns);
  expr = Attr(expr, op);
  return Attr(expr, node.overload.empty() ? "default" : node.overload);
}

std::string CallExpr(const graph::Node& node);

std::string ValueList(const std::vector<std::string>& names) {
  std::vector<std::string> items;
  for (const std::string& n : names) items.push_back(PyValue(n));
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

// Whether a gradient statement after node `index` differentiates again: the
// earlier ones then build their graphs differentiable (create_graph), as the
// executor does.
bool LaterGradient(const graph::Program& program, size_t index) {
  for (size_t j = index + 1; j < program.nodes.size(); ++j) {
    if (graph::IsGradNode(program.nodes[j])) return true;
  }
  return false;
}

// A gradient statement: the harness's _grad (one gradient per input, a list).
std::string GradExpr(const graph::Program& program, size_t index) {
  const graph::Node& node = program.nodes[index];
  graph::GradCallOrError g = graph::ParseGradCall(node);
  if (!g.call) return CallExpr(node);  // raises when called, as the executor's node fails
  return absl::StrCat("_grad(", ValueList(g.call->outputs), ", ", ValueList(g.call->wrt), ", ",
                      ValueList(g.call->cotangents),
                      ", create_graph=", LaterGradient(program, index) ? "True" : "False", ")");
}

// The inputs gradient statements differentiate against, as a Python tuple.
std::string PyWrt(const graph::Program& program) {
  std::vector<std::string> names;
  for (const std::string& x : graph::DifferentiatedInputs(program)) names.push_back(PyStr(x));
  return absl::StrCat("(", absl::StrJoin(names, ", "), names.size() == 1 ? ",)" : ")");
}

std::string CallExpr(const graph::Node& node) {
  std::vector<std::string> args;
  std::vector<std::string> unsafe;  // keyword names Python cannot spell (from=)
  for (const graph::Argument& arg : node.args) {
    std::string value = PyLiteral(arg.value);
    if (arg.name.empty()) {
      args.push_back(value);
    } else if (IsPyIdentifier(arg.name)) {
      args.push_back(absl::StrCat(arg.name, "=", value));
    } else {
      unsafe.push_back(absl::StrCat(PyStr(arg.name), ": ", value));
    }
  }
  if (!unsafe.empty()) args.push_back(absl::StrCat("**{", absl::StrJoin(unsafe, ", "), "}"));
  return absl::StrCat(OpExpr(node), "(", absl::StrJoin(args, ", "), ")");
}

std::string PyShape(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// Float to int64 as the int64 path of the script needs it: truncation toward
// zero; NaN and out-of-range values give INT64_MIN (what x86 conversions do).
int64_t ToInt64(double v) {
  if (std::isnan(v) || v >= 0x1p63 || v < -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// `{'x': 'transposed', ...}`: the inputs whose layout is not contiguous.
std::string PyLayouts(const graph::Program& program) {
  std::vector<std::string> entries;
  for (const graph::Input& in : program.inputs) {
    if (in.layout == graph::Layout::kContiguous) continue;
    entries.push_back(
        absl::StrCat(PyStr(in.name), ": ", PyStr(std::string(graph::LayoutName(in.layout)))));
  }
  return absl::StrCat("{", absl::StrJoin(entries, ", "), "}");
}

// One input: `v['x'] = ...`, built in float64 (int64 for integers and bool,
// complex128 for complex) and cast to its dtype, exactly like the executor.
std::string InputStatement(const graph::Input& input) {
  const DType dtype = input.type.dtype;
  const std::string dt = TorchDType(dtype);
  const std::string shape = PyShape(input.type.shape);
  const std::vector<double> values = graph::MaterializePayload(input);
  const bool uniform = UniformPayload(values, graph::IsComplex(dtype) ? 2 : 1);
  std::string lhs = absl::StrCat("    ", PyValue(input.name), " = ");
  if (graph::IsComplex(dtype)) {
    if (uniform) {
      return absl::StrCat(lhs, "_cast(torch.full(", shape, ", complex(F('", Hex(values[0]),
                          "'), F('", Hex(values[1]), "')), dtype=torch.complex128), ", dt, ")\n");
    }
  } else if (graph::IsFloating(dtype)) {
    if (uniform) {
      return absl::StrCat(lhs, "_cast(torch.full(", shape, ", F('", Hex(values[0]),
                          "'), dtype=torch.float64), ", dt, ")\n");
    }
  } else {
    std::vector<std::string> ints;
    for (double v : values) {
      int64_t n = dtype == DType::kBool ? (v != 0 || std::isnan(v) ? 1 : 0) : ToInt64(v);
      ints.push_back(absl::StrCat(n));
    }
    if (uniform) {
      return absl::StrCat(lhs, "torch.full(", shape, ", ", ints[0], ", dtype=torch.int64).to(", dt,
                          ")\n");
    }
    return absl::StrCat(lhs, "_ints([\n", WrapItems(ints, "        "), "    ], ", shape, ", ", dt,
                        ")\n");
  }
  std::vector<std::string> hexes;
  for (double v : values) hexes.push_back(absl::StrCat("'", Hex(v), "'"));
  return absl::StrCat(lhs, graph::IsComplex(dtype) ? "_complex" : "_floats", "([\n",
                      WrapItems(hexes, "        "), "    ], ", shape, ", ", dt, ")\n");
}

std::string ScriptHeader(const graph::Program& program, const ReproSpec& spec,
                         const std::string& where) {
  std::string out = "#!/usr/bin/env python3\n";
  absl::StrAppend(&out, "# divfuzz repro: ", CommentText(spec.title.empty() ? where : spec.title),
                  "\n#\n");
  absl::StrAppend(&out, "# Compares ", spec.target_a, " vs ", spec.target_b, " on ", where, ".\n",
                  CheckLines(spec, "# ", /*flags=*/true));
  absl::StrAppend(&out,
                  "# Exit status: 1 if the divergence reproduces, 0 if it does not, 2 if the "
                  "script fails.\n"
                  "# Needs only torch. Every input is rebuilt bit-exactly from hex floats.\n"
                  "# Targets (--target-a/--target-b): cpu, cuda, cpu-f64 (floating inputs "
                  "upcast to float64\n"
                  "# on the CPU, results rounded back to the program's dtype), cpu-scalar "
                  "(ATen's scalar\n"
                  "# CPU kernels, ATEN_CPU_CAPABILITY=default, in a child process).\n"
                  "# --dump-inputs prints every input exactly.\n#\n"
                  "# The program (divfuzz .dfz; long lines shortened):\n");
  for (absl::string_view line : absl::StrSplit(graph::PrintProgram(program), '\n')) {
    if (line.empty()) continue;
    absl::StrAppend(&out, "#   ", CommentText(std::string(line), 150), "\n");
  }
  return out;
}

// For a decomposition, the name of its invariants in the harness ('qr', 'svd',
// 'eigh', 'lu', 'eig'), as a Python literal; else None.
std::string Invariants(const graph::Node& node) {
  const absl::string_view name = ops::DecompositionName(node.QualifiedName());
  return name.empty() ? "None" : absl::StrCat("'", name, "'");
}

// The harness's constants block: the policy's tolerances at the diverging op
// and the other constants declared in C++ (emit_common.h).
std::string PyNumber(double v) {
  std::string s = ShortestDouble(v);
  return s.find_first_of(".en") == std::string::npos ? s + ".0" : s;  // a float, as Python reads it
}

std::string PyConstants(const HarnessConstants& c) {
  std::string out = "TOLERANCES = {  # (rtol, atol): the policy's at the diverging op\n";
  for (const auto& [dtype, tol] : c.tolerances) {
    absl::StrAppend(&out, "    ", TorchDType(dtype), ": (", PyNumber(tol.rtol), ", ",
                    PyNumber(tol.atol), "),\n");
  }
  std::vector<std::string> targets, faults, bits;
  for (const std::string& t : c.targets) targets.push_back(PyStr(t));
  for (const std::string& f : c.cuda_faults) faults.push_back(PyStr(f));
  std::vector<std::string> gaps;
  for (const std::string& g : c.dtype_gaps) gaps.push_back(PyStr(g));
  for (const auto& b : c.float_bits) {
    bits.push_back(absl::StrCat(TorchDType(b.dtype), ": (", b.mantissa, ", ", b.tiny_exponent, ")"));
  }
  std::vector<std::string> switches;
  for (const auto& sw : c.switches) {
    switches.push_back(absl::StrCat(PyStr(sw.name), ": (", PyStr(sw.library), ", ",
                                    PyStr(sw.python), ")"));
  }
  absl::StrAppend(&out, "}\nTARGETS = (", absl::StrJoin(targets, ", "), ")\n",
                  "FLOAT_BITS = {  # (mantissa bits, exponent of the smallest subnormal)\n",
                  WrapItems(bits, "    "), "}\n",
                  "# What a CUDA fault says (it poisons the process's CUDA context).\n",
                  "CUDA_FAULTS = (\n", WrapItems(faults, "    "), ")\n",
                  "PERTURB_BYTES = (", absl::StrFormat("0x%02x, 0x%02x", c.perturb_odd, c.perturb_even),
                  ")  # malloc's perturb byte on odd, even runs\n",
                  "# What an error says when a kernel lacks the dtype.\n",
                  "DTYPE_GAPS = (\n", WrapItems(gaps, "    "), ")\n",
                  "MALLOC_CACHE_OFF = ", PyStr(c.malloc_cache_off),
                  "  # set when restarted with NO_MALLOC_CACHE\n",
                  "NO_MALLOC_CACHE = ", PyStr(c.no_malloc_cache), "\n",
                  "START_SECONDS = ", c.start_seconds,
                  "  # a child's time to start the program before a hang's clock starts\n",
                  "POLL_SECONDS = ", PyNumber(c.poll_seconds),
                  "  # how often a hang check looks at its child\n",
                  "EXACT_LIMIT = ", c.exact_limit, "  # how many elements show exactly\n",
                  "# What a node's failure says when its op wrote into an input of GUARDED.\n",
                  "INPUT_WRITTEN = ", PyStr(c.input_written), "\n",
                  "SWITCHES = {  # CUDA switch: (library, Python statements)\n",
                  WrapItems(switches, "    "), "}\n");
  return out;
}

}  // namespace

std::string EmitPython(const graph::Program& program, const ReproSpec& spec,
                       const oracles::Policy& policy) {
  std::string spec_error;
  const int node_index = ResolveNode(program, spec, &spec_error);
  if (!spec_error.empty()) {
    return absl::StrCat("#!/usr/bin/env python3\n# divfuzz repro: ", CommentText(spec.title),
                        "\nimport sys\n\nprint(", PyStr(spec_error), ")\nsys.exit(2)\n");
  }
  const graph::Node& target = program.nodes[node_index];
  const std::string& value = target.results[spec.output_index];
  const std::string where = Where(program, spec, node_index);

  // NAME = value  # comment
  const std::vector<std::array<std::string, 3>> constants = {
      {"TITLE", PyStr(spec.title.empty() ? where : spec.title), ""},
      {"TARGET_A", PyStr(spec.target_a), ""},
      {"TARGET_B", PyStr(spec.target_b), ""},
      {"NODE", absl::StrCat(node_index), "the diverging node"},
      {"OUTPUT", absl::StrCat(spec.output_index), "which of its results"},
      {"VALUE", PyStr(value), ""},
      {"OP", PyStr(target.QualifiedName()), ""},
      {"SEEN", PyStr(spec.seen), "what divfuzz saw"},
      {"RERUN", spec.rerun_target.empty() ? "None" : PyStr(spec.rerun_target),
       "nondeterminism: the target rerun against itself"},
      {"RUNS", absl::StrCat(kNondeterminismRuns), "how often RERUN runs"},
      {"RERUN_SECONDS", absl::StrCat(kNondeterminismSeconds), "and for how long at most"},
      {"ATTEMPTS", absl::StrCat(std::max(1, spec.attempts)),
       "how often both targets run before 'no divergence'"},
      {"FAILURE", spec.failure.empty() ? "None" : PyStr(spec.failure),
       "'hang' or 'crash': FAILURE_TARGET runs in a child process"},
      {"FAILURE_TARGET", PyStr(spec.failure_target), ""},
      {"HANG_SECONDS", absl::StrCat(spec.hang_seconds), "a hang: still running after this long"},
      {"INVARIANTS", Invariants(target),
       "a decomposition: compared through invariants, not raw factors"},
      {"NAN_RULE", NanRule(target),
       "an orthogonal polynomial's (x, n): NaN at a NaN x when n >= 1"},
      {"EXACT_ELEMENT", absl::StrCat(spec.exact_element), ""},
      {"EXACT", PyExact(spec.exact),
       "divfuzz's exact value there (MPFR), from each side's own inputs: it decides"},
      {"GUARDED", PyGuarded(program),
       "nodes whose op must leave its inputs as they were (linear algebra)"},
      {"WRT", PyWrt(program),
       "inputs a gradient statement differentiates against: they require grad"},
      {"GRADIENT", graph::IsGradNode(target) ? "True" : "False",
       "the node is a gradient statement (torch.autograd.grad)"},
      {"BACKWARD", PyStr(spec.backward), "the backward kernel where divfuzz saw the sides part"},
      {"BACKEND", PyStr(spec.backend), "CUDA switches the CUDA runs make (--backend)"},
  };
  std::string out;
  for (const auto& [name, value_text, comment] : constants) {
    absl::StrAppend(&out, name, " = ", value_text, comment.empty() ? "" : "  # ", comment, "\n");
  }
  absl::StrAppend(&out, "\n\n");

  absl::StrAppend(&out, "LAYOUTS = ", PyLayouts(program),
                  "  # inputs not contiguous; applied on the target's device and dtype\n\n\n");
  absl::StrAppend(&out,
                  "def make_inputs():\n"
                  "    \"\"\"The program's inputs, built in float64 (int64 for integers and "
                  "bool), then cast.\"\"\"\n"
                  "    v = {}\n");
  for (const graph::Input& input : program.inputs) {
    absl::StrAppend(&out, "    # ", InputText(input, 60, 80, CommentText), "\n",
                    InputStatement(input));
  }
  absl::StrAppend(&out, "    return v\n\n\n");

  absl::StrAppend(&out,
                  "def program(v, node):\n"
                  "    \"\"\"The program's nodes: node(index, results, uses, call); a node "
                  "that raises, or\n"
                  "    uses a value whose node raised, stores the error as its results.\"\"\"\n");
  for (size_t i = 0; i < program.nodes.size(); ++i) {
    const graph::Node& node = program.nodes[i];
    std::vector<std::string> uses;
    for (const graph::Argument& arg : node.args) CollectUses(arg.value, &uses);
    absl::StrAppend(&out, "    # ", CommentText(NodeText(node), 150), "\n");
    // A gradient statement's _grad gives a list: one result is its first.
    const std::string call =
        graph::IsGradNode(node)
            ? absl::StrCat(GradExpr(program, i), node.results.size() == 1 ? "[0]" : "")
            : CallExpr(node);
    absl::StrAppend(&out, "    node(", i, ", ", PyStrList(node.results), ", ", PyStrList(uses),
                    ", lambda: ", call, ")\n");
  }
  if (program.nodes.empty()) absl::StrAppend(&out, "    pass\n");
  absl::StrAppend(&out, "\n\n");
  return FillHarness(Harness(), "#",
                     {{"header", ScriptHeader(program, spec, where)},
                      {"program", out},
                      {"constants", PyConstants(ConstantsFor(policy, target.QualifiedName()))}});
}

std::string EmitPythonSnippet(const graph::Program& program, const ReproSpec& spec) {
  std::string spec_error;
  const int node_index = ResolveNode(program, spec, &spec_error);
  if (!spec_error.empty()) return absl::StrCat("# ", CommentText(spec_error), "\n");
  const graph::Node& target = program.nodes[node_index];
  const std::string& value = target.results[spec.output_index];
  std::string out = absl::StrCat(
      "import torch\n\n"
      "aten = torch.ops.aten\n\n\n"
      "# F reads every number below exactly; _cast keeps a NaN's sign and payload\n",
      HarnessBlock(Harness(), "#", "exact"));
  // The builders the input statements use, as in the full script.
  std::string builders;
  for (const graph::Input& input : program.inputs)
    absl::StrAppend(&builders, InputStatement(input));
  for (const char* builder : {"floats", "ints", "complex"}) {
    if (absl::StrContains(builders, absl::StrCat("_", builder, "("))) {
      absl::StrAppend(&out, HarnessBlock(Harness(), "#", builder));
    }
  }
  bool gradients = false;
  for (int i = 0; i <= node_index; ++i) gradients = gradients || graph::IsGradNode(program.nodes[i]);
  if (gradients) absl::StrAppend(&out, HarnessBlock(Harness(), "#", "grad"));
  absl::StrAppend(&out,
                  "def make_inputs():\n"
                  "    v = {}\n");
  absl::StrAppend(&out, builders);
  absl::StrAppend(&out,
                  "    return v\n\n\n"
                  "LAYOUTS = ",
                  PyLayouts(program), "\n\n\n", HarnessBlock(Harness(), "#", "layout"),
                  "def run(device, float64=False):\n"
                  "    v = {}\n"
                  "    for name, t in make_inputs().items():\n"
                  "        if float64 and (t.is_floating_point() or t.is_complex()):\n"
                  "            t = t.to(torch.complex128 if t.is_complex() else torch.float64)\n"
                  "        v[name] = _layout(t.to(device), LAYOUTS.get(name))\n");
  if (gradients) {
    // The inputs differentiated against require grad from the start.
    absl::StrAppend(&out, "    for name in ", PyWrt(program), ":\n",
                    "        v[name] = v[name].detach().requires_grad_()\n",
                    "    with torch.enable_grad():\n");
  } else {
    absl::StrAppend(&out, "    with torch.no_grad():\n");
  }
  for (int i = 0; i <= node_index; ++i) {
    const graph::Node& node = program.nodes[i];
    std::vector<std::string> lhs;
    for (const std::string& r : node.results) lhs.push_back(PyValue(r));
    const bool grad = graph::IsGradNode(node);
    absl::StrAppend(&out, "        ", absl::StrJoin(lhs, ", "), grad && lhs.size() == 1 ? "," : "",
                    " = ", grad ? GradExpr(program, i) : CallExpr(node), "\n");
  }
  absl::StrAppend(&out, "    return ", PyValue(value), gradients ? ".detach()" : "", ".cpu()\n\n\n",
                  "torch.set_printoptions(precision=10)\n"
                  "print('torch', torch.__version__)\n"
                  "print('cpu:     ', run('cpu'))\n"
                  "if torch.cuda.is_available():\n"
                  "    print('cuda:    ', run('cuda'))\n"
                  "print('float64: ', run('cpu', float64=True))  # the reference\n");
  if (spec.rerun_target == "cpu" || spec.rerun_target == "cuda") {
    const std::string device = PyStr(spec.rerun_target);
    absl::StrAppend(&out, "\n# The same program again on ", spec.rerun_target,
                    ": the results differ from run to run.\n", "first = run(", device, ")\n",
                    "for k in range(2, ", kNondeterminismRuns + 1, "):\n", "    again = run(",
                    device, ")\n",
                    "    same = (first == again) | (first.isnan() & again.isnan())\n"
                    "    if not bool(same.all()):\n"
                    "        i = int((~same).reshape(-1).nonzero()[0])\n"
                    "        print('run 1 and run %d differ at element %d: %r vs %r' % (\n"
                    "            k, i, first.reshape(-1)[i].item(), again.reshape(-1)[i].item()))"
                    "\n        break\n");
  }
  return out;
}

}  // namespace divfuzz::minimize
