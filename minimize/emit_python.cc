#include "minimize/emit_python.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "graph/materialize.h"
#include "graph/printer.h"
#include "ops/catalogue.h"
#include "oracles/expected_rules.h"
#include "oracles/nan_rule.h"

namespace divfuzz::minimize {
namespace {

using graph::DType;
using graph::Literal;

// The generic part of every script: targets, error capture, the oracle's
// rules, the environment and main(). The program-specific part (constants,
// make_inputs, program) is emitted above it.
extern const char kHarness[];

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

std::string TorchDType(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return "torch.float16";
    case DType::kBF16:
      return "torch.bfloat16";
    case DType::kF32:
      return "torch.float32";
    case DType::kF64:
      return "torch.float64";
    case DType::kC64:
      return "torch.complex64";
    case DType::kC128:
      return "torch.complex128";
    case DType::kI8:
      return "torch.int8";
    case DType::kI16:
      return "torch.int16";
    case DType::kI32:
      return "torch.int32";
    case DType::kI64:
      return "torch.int64";
    case DType::kU8:
      return "torch.uint8";
    case DType::kBool:
      return "torch.bool";
  }
  return "torch.float32";
}

// The exact hex form Python's float.fromhex reads back ("0x1.8p-3", "inf",
// "-inf", "nan", "-nan").
std::string Hex(double v) { return graph::FormatHexFloat(v); }

std::string PyFloat(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "float('-nan')" : "float('nan')";
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "float('-inf')";
  return absl::StrCat("F('", Hex(v), "')");
}

std::string PyValue(absl::string_view name) { return absl::StrCat("v[", PyStr(name), "]"); }

std::string PyLiteral(const Literal& l) {
  switch (l.kind) {
    case Literal::Kind::kNone:
      return "None";
    case Literal::Kind::kBool:
      return l.b ? "True" : "False";
    case Literal::Kind::kInt:
      return absl::StrCat(l.i);
    case Literal::Kind::kFloat:
      return PyFloat(l.f);
    case Literal::Kind::kString:
      return PyStr(l.s);
    case Literal::Kind::kDType:
      return TorchDType(l.dtype);
    case Literal::Kind::kValue:
      return PyValue(l.s);
    case Literal::Kind::kList: {
      std::vector<std::string> items;
      for (const Literal& item : l.list) items.push_back(PyLiteral(item));
      return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
    }
  }
  return "None";
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

// "%c = aten::add.Tensor(%a, %b)", as in the .dfz text.
std::string NodeText(const graph::Node& node) {
  std::vector<std::string> results, args;
  for (const std::string& r : node.results) results.push_back("%" + r);
  for (const graph::Argument& a : node.args) {
    std::string value = graph::PrintLiteral(a.value);
    args.push_back(a.name.empty() ? value : absl::StrCat(a.name, "=", value));
  }
  std::string lhs = results.empty() ? "" : absl::StrCat(absl::StrJoin(results, ", "), " = ");
  return absl::StrCat(lhs, node.QualifiedName(), "(", absl::StrJoin(args, ", "), ")");
}

std::string PyShape(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// Items joined by ", " and wrapped into lines of at most ~100 columns.
std::string WrapList(const std::vector<std::string>& items, const std::string& indent) {
  std::string out;
  std::string line;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (!line.empty() && indent.size() + line.size() + 1 + item.size() > 99) {
      absl::StrAppend(&out, indent, line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", item);
  }
  if (!line.empty()) absl::StrAppend(&out, indent, line, "\n");
  return out;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

// Float to int64 as the int64 path of the script needs it: truncation toward
// zero; NaN and out-of-range values give INT64_MIN (what x86 conversions do).
int64_t ToInt64(double v) {
  if (std::isnan(v) || v >= 0x1p63 || v < -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// The same values in the layout the program names, as divfuzz builds it.
#define DIVFUZZ_LAYOUT_PY                                                                \
  "def _layout(t, layout):\n"                                                            \
  "    \"\"\"An input in the memory layout the program names: same values.\"\"\"\n"      \
  "    if layout == 'transposed' and t.dim() >= 2:\n"                                    \
  "        return t.transpose(-1, -2).contiguous().transpose(-1, -2)\n"                  \
  "    if layout == 'strided' and t.dim() >= 1:\n"                                       \
  "        big = torch.zeros(tuple(t.shape[:-1]) + (2 * t.shape[-1],), dtype=t.dtype,\n" \
  "                          device=t.device)\n"                                         \
  "        view = big[..., ::2]\n"                                                       \
  "        view.copy_(t)\n"                                                              \
  "        return view\n"                                                                \
  "    if layout == 'channels_last' and t.dim() == 4:\n"                                 \
  "        return t.contiguous(memory_format=torch.channels_last)\n"                     \
  "    return t\n"
const char kLayoutPy[] = DIVFUZZ_LAYOUT_PY;

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
  const size_t per = graph::IsComplex(dtype) ? 2 : 1;
  const size_t numel = values.size() / per;
  bool uniform = numel >= 1;
  for (size_t i = per; uniform && i < values.size(); ++i) {
    uniform = SameBits(values[i], values[i % per]);
  }
  std::string lhs = absl::StrCat("    ", PyValue(input.name), " = ");
  if (graph::IsComplex(dtype)) {
    if (uniform) {
      return absl::StrCat(lhs, "torch.full(", shape, ", complex(F('", Hex(values[0]), "'), F('",
                          Hex(values[1]), "')), dtype=torch.complex128).to(", dt, ")\n");
    }
  } else if (graph::IsFloating(dtype)) {
    if (uniform) {
      return absl::StrCat(lhs, "torch.full(", shape, ", F('", Hex(values[0]),
                          "'), dtype=torch.float64).to(", dt, ")\n");
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
    return absl::StrCat(lhs, "_ints([\n", WrapList(ints, "        "), "    ], ", shape, ", ", dt,
                        ")\n");
  }
  std::vector<std::string> hexes;
  for (double v : values) hexes.push_back(absl::StrCat("'", Hex(v), "'"));
  return absl::StrCat(lhs, graph::IsComplex(dtype) ? "_complex" : "_floats", "([\n",
                      WrapList(hexes, "        "), "    ], ", shape, ", ", dt, ")\n");
}

std::string ScriptHeader(const graph::Program& program, const ReproSpec& spec,
                         const std::string& where) {
  std::string out = "#!/usr/bin/env python3\n";
  absl::StrAppend(&out, "# divfuzz repro: ", CommentText(spec.title.empty() ? where : spec.title),
                  "\n#\n");
  absl::StrAppend(&out, "# Compares ", spec.target_a, " vs ", spec.target_b, " on ", where, ".\n");
  if (!spec.rerun_target.empty()) {
    absl::StrAppend(&out, "# Nondeterminism: then reruns ", spec.rerun_target, " up to ",
                    kNondeterminismRuns, " times (--runs) or ", kNondeterminismSeconds,
                    " s and exits 1 if two runs differ bit for bit.\n");
  }
  if (spec.rerun_target.empty() && spec.attempts > 1) {
    absl::StrAppend(&out, "# The kernel's writes race: runs both targets up to ", spec.attempts,
                    " times (--attempts) until they diverge.\n");
  }
  if (spec.failure == "hang") {
    absl::StrAppend(&out, "# A hang: runs ", spec.failure_target,
                    " in a child process and exits 1 if it is still running after ",
                    spec.hang_seconds, " s (--hang-seconds).\n");
  } else if (spec.failure == "crash") {
    absl::StrAppend(&out, "# A crash: runs ", spec.failure_target,
                    " in a child process and exits 1 if it dies by a signal or a CUDA fault.\n");
  }
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
  absl::StrAppend(&out,
                  "import argparse\n"
                  "import math\n"
                  "import os\n"
                  "import platform\n"
                  "import sys\n"
                  "import traceback\n"
                  "\n"
                  "import torch\n"
                  "\n"
                  "F = float.fromhex\n"
                  "aten = torch.ops.aten\n\n");
  return out;
}

// For a decomposition, the name of its invariants in the harness ('qr', 'svd',
// 'eigh', 'lu', 'eig'), as a Python literal; else None.
std::string Invariants(const graph::Node& node) {
  const absl::string_view name = ops::DecompositionName(node.QualifiedName());
  return name.empty() ? "None" : absl::StrCat("'", name, "'");
}

}  // namespace

bool RacesAt(const graph::Program& program, const std::string& signature) {
  const std::string op = signature.substr(0, signature.find('|'));
  for (const graph::Node& node : program.nodes) {
    if (node.QualifiedName() == op && oracles::MayVaryBetweenRuns(node)) return true;
  }
  return false;
}

int ReproAttempts(const graph::Program& program, int node_index) {
  return node_index >= 0 && static_cast<size_t>(node_index) < program.nodes.size() &&
                 oracles::MayVaryBetweenRuns(program.nodes[node_index])
             ? kRacingAttempts
             : 1;
}

int ResolveNode(const graph::Program& program, const ReproSpec& spec, std::string* error) {
  int node_index = spec.node_index;
  if (node_index < 0) {
    node_index = static_cast<int>(program.nodes.size()) - 1;
    if (!program.outputs.empty()) {
      for (size_t i = 0; i < program.nodes.size(); ++i) {
        for (const std::string& r : program.nodes[i].results) {
          if (r == program.outputs[0]) node_index = static_cast<int>(i);
        }
      }
    }
  }
  if (node_index < 0 || node_index >= static_cast<int>(program.nodes.size())) {
    *error = absl::StrCat("the repro names node ", spec.node_index, " of a program of ",
                          program.nodes.size(), " nodes");
  } else if (spec.output_index < 0 ||
             spec.output_index >= static_cast<int>(program.nodes[node_index].results.size())) {
    *error = absl::StrCat("the repro names result ", spec.output_index, " of node ", node_index,
                          ", which has ", program.nodes[node_index].results.size());
  }
  return node_index;
}

std::string EmitPython(const graph::Program& program, const ReproSpec& spec) {
  std::string spec_error;
  const int node_index = ResolveNode(program, spec, &spec_error);
  if (!spec_error.empty()) {
    return absl::StrCat("#!/usr/bin/env python3\n# divfuzz repro: ", CommentText(spec.title),
                        "\nimport sys\n\nprint(", PyStr(spec_error), ")\nsys.exit(2)\n");
  }
  const graph::Node& target = program.nodes[node_index];
  const std::string& value = target.results[spec.output_index];
  std::string where = absl::StrCat("%", value, ", result ", spec.output_index, " of node ",
                                   node_index, " (", target.QualifiedName(), ")");

  std::string out = ScriptHeader(program, spec, where);
  absl::StrAppend(&out, "TITLE = ", PyStr(spec.title.empty() ? where : spec.title), "\n");
  absl::StrAppend(&out, "TARGET_A = ", PyStr(spec.target_a), "\n");
  absl::StrAppend(&out, "TARGET_B = ", PyStr(spec.target_b), "\n");
  absl::StrAppend(&out, "NODE = ", node_index, "  # the diverging node\n");
  absl::StrAppend(&out, "OUTPUT = ", spec.output_index, "  # which of its results\n");
  absl::StrAppend(&out, "VALUE = ", PyStr(value), "\n");
  absl::StrAppend(&out, "OP = ", PyStr(target.QualifiedName()), "\n");
  absl::StrAppend(&out, "SEEN = ", PyStr(spec.seen), "  # what divfuzz saw\n");
  absl::StrAppend(&out, "RERUN = ", spec.rerun_target.empty() ? "None" : PyStr(spec.rerun_target),
                  "  # nondeterminism: the target rerun against itself\n");
  absl::StrAppend(&out, "RUNS = ", kNondeterminismRuns, "  # how often RERUN runs\n",
                  "RERUN_SECONDS = ", kNondeterminismSeconds, "  # and for how long at most\n");
  absl::StrAppend(&out, "ATTEMPTS = ", std::max(1, spec.attempts),
                  "  # how often both targets run before 'no divergence'\n");
  absl::StrAppend(&out, "FAILURE = ", spec.failure.empty() ? "None" : PyStr(spec.failure),
                  "  # 'hang' or 'crash': FAILURE_TARGET runs in a child process\n");
  absl::StrAppend(&out, "FAILURE_TARGET = ", PyStr(spec.failure_target), "\n");
  absl::StrAppend(&out, "HANG_SECONDS = ", spec.hang_seconds,
                  "  # a hang: still running after this long\n");
  absl::StrAppend(&out, "INVARIANTS = ", Invariants(target),
                  "  # a decomposition: compared through invariants, not raw factors\n");
  absl::StrAppend(&out, "NAN_RULE = ", NanRule(target),
                  "  # an orthogonal polynomial's (x, n): NaN at a NaN x when n >= 1\n\n\n");

  absl::StrAppend(&out, "LAYOUTS = ", PyLayouts(program),
                  "  # inputs not contiguous; applied on the target's device and dtype\n\n\n");
  absl::StrAppend(&out,
                  "def make_inputs():\n"
                  "    \"\"\"The program's inputs, built in float64 (int64 for integers and "
                  "bool), then cast.\"\"\"\n"
                  "    v = {}\n");
  for (const graph::Input& input : program.inputs) {
    absl::StrAppend(&out, "    # %", CommentText(input.name, 60), ": ",
                    graph::PrintType(input.type), " = ",
                    CommentText(graph::PrintPayload(input.payload, input.type.dtype), 80), "\n");
    absl::StrAppend(&out, InputStatement(input));
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
    absl::StrAppend(&out, "    node(", i, ", ", PyStrList(node.results), ", ", PyStrList(uses),
                    ", lambda: ", CallExpr(node), ")\n");
  }
  if (program.nodes.empty()) absl::StrAppend(&out, "    pass\n");
  absl::StrAppend(&out, "\n\n", kHarness);
  return out;
}

std::string EmitPythonSnippet(const graph::Program& program, const ReproSpec& spec) {
  std::string spec_error;
  const int node_index = ResolveNode(program, spec, &spec_error);
  if (!spec_error.empty()) return absl::StrCat("# ", CommentText(spec_error), "\n");
  const graph::Node& target = program.nodes[node_index];
  const std::string& value = target.results[spec.output_index];
  std::string out =
      "import torch\n\n"
      "F = float.fromhex  # every number below is exact\n"
      "aten = torch.ops.aten\n\n\n";
  // The builders the input statements use, as in the full script.
  std::string builders;
  for (const graph::Input& input : program.inputs)
    absl::StrAppend(&builders, InputStatement(input));
  if (absl::StrContains(builders, "_floats(")) {
    absl::StrAppend(&out,
                    "def _floats(hexes, shape, dtype):\n"
                    "    return torch.tensor([F(h) for h in hexes], "
                    "dtype=torch.float64).to(dtype).reshape(shape)\n\n\n");
  }
  if (absl::StrContains(builders, "_ints(")) {
    absl::StrAppend(&out,
                    "def _ints(values, shape, dtype):\n"
                    "    return torch.tensor(values, dtype=torch.int64).to(dtype).reshape(shape)"
                    "\n\n\n");
  }
  if (absl::StrContains(builders, "_complex(")) {
    absl::StrAppend(&out,
                    "def _complex(hexes, shape, dtype):\n"
                    "    parts = torch.tensor([F(h) for h in hexes], "
                    "dtype=torch.float64).reshape(-1, 2)\n"
                    "    return torch.view_as_complex(parts).to(dtype).reshape(shape)\n\n\n");
  }
  absl::StrAppend(&out,
                  "def make_inputs():\n"
                  "    v = {}\n");
  absl::StrAppend(&out, builders);
  absl::StrAppend(&out,
                  "    return v\n\n\n"
                  "LAYOUTS = ",
                  PyLayouts(program), "\n\n\n", kLayoutPy,
                  "\n\n"
                  "def run(device, float64=False):\n"
                  "    v = {}\n"
                  "    for name, t in make_inputs().items():\n"
                  "        if float64 and (t.is_floating_point() or t.is_complex()):\n"
                  "            t = t.to(torch.complex128 if t.is_complex() else torch.float64)\n"
                  "        v[name] = _layout(t.to(device), LAYOUTS.get(name))\n"
                  "    with torch.no_grad():\n");
  for (int i = 0; i <= node_index; ++i) {
    const graph::Node& node = program.nodes[i];
    std::vector<std::string> lhs;
    for (const std::string& r : node.results) lhs.push_back(PyValue(r));
    absl::StrAppend(&out, "        ", absl::StrJoin(lhs, ", "), " = ", CallExpr(node), "\n");
  }
  absl::StrAppend(&out, "    return ", PyValue(value), ".cpu()\n\n\n",
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

namespace {

const char kHarness[] =
    R"PY(# ---------------------------------------------------------------------------
# The harness below is the same in every divfuzz repro; the program is above.

TOLERANCES = {  # (rtol, atol): torch.testing.assert_close's defaults
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}
TARGETS = ('cpu', 'cuda', 'cpu-f64', 'cpu-scalar')


def _floats(hexes, shape, dtype):
    return torch.tensor([F(h) for h in hexes], dtype=torch.float64).to(dtype).reshape(shape)


def _ints(values, shape, dtype):
    return torch.tensor(values, dtype=torch.int64).to(dtype).reshape(shape)


def _complex(hexes, shape, dtype):
    parts = torch.tensor([F(h) for h in hexes], dtype=torch.float64).reshape(-1, 2)
    return torch.view_as_complex(parts).to(dtype).reshape(shape)


)PY" DIVFUZZ_LAYOUT_PY R"PY(

class Failure:
    """Stands in for the results of a node that raised (or whose inputs did)."""

    def __init__(self, message, node):
        self.message = message
        self.node = node

    def __str__(self):
        return 'raised at node %d: %s' % (self.node, self.message)


def _snapshot(x):
    if isinstance(x, Failure):
        return x
    if isinstance(x, list):
        snaps = [_snapshot(e) for e in x]
        failed = [e for e in snaps if isinstance(e, Failure)]
        return failed[0] if failed else snaps
    if isinstance(x, torch.Tensor):
        return x.detach().clone().cpu()
    if isinstance(x, (bool, int, float, complex)):
        return torch.tensor(x)
    return Failure('output of type %s is not a tensor' % type(x).__name__, NODE)


def _upcast(t):
    if t.is_complex():
        return t.to(torch.complex128)
    if t.is_floating_point():
        return t.to(torch.float64)
    return t


REFERENCES = {}  # target -> the diverging node in float64 from that target's own inputs


def _pick(out, results):
    """The diverging result of a node's return value (a decomposition: all of them)."""
    if isinstance(out, Failure):
        return out
    values = [out] if len(results) == 1 else list(out)
    if len(values) != len(results):
        return Failure('returned %d results, the program names %d' % (len(values), len(results)),
                       NODE)
    return values if INVARIANTS else values[OUTPUT]


def _reference(v, results, uses, fn):
    """The oracle's reference for the diverging node: the node rerun on the CPU
    in float64 from this side's own inputs (so a side is not blamed for
    rounding it inherited from earlier nodes)."""
    saved = {u: v[u] for u in uses}
    try:
        for u in uses:
            if isinstance(v[u], torch.Tensor):
                v[u] = _upcast(v[u].detach().cpu()).clone()
        ref = _snapshot(_pick(fn(), results))
        if NAN_RULE is not None and isinstance(ref, torch.Tensor) and ref.is_floating_point():
            # PyTorch's kernel returns an unset variable there (divfuzz's
            # oracles/nan_rule.h): the reference says NaN, as it should.
            x, n = (torch.as_tensor(a).detach().cpu().to(torch.float64) for a in NAN_RULE(v))
            nan = torch.isnan(x) & (n >= 1)
            if nan.shape == ref.shape:
                ref = torch.where(nan, torch.full_like(ref, float('nan')), ref)
        return ref
    except Exception as e:  # noqa: BLE001 -- the reference may raise too
        return Failure('%s: %s' % (type(e).__name__, str(e).strip()), NODE)
    finally:
        v.update(saved)


def run(target):
    """Runs the program on one target; returns the diverging output as a CPU
    tensor, or a Failure when that node (or one it depends on) raised. For cpu
    and cuda it also records the node's float64 reference in REFERENCES."""
    if target == 'cpu-scalar':
        return _run_in_child('cpu', {'ATEN_CPU_CAPABILITY': 'default'})
    device = 'cuda' if target == 'cuda' else 'cpu'
    v = make_inputs()
    for name in list(v):
        t = _upcast(v[name]) if target == 'cpu-f64' else v[name]
        v[name] = _layout(t.to(device), LAYOUTS.get(name))
    captured = {}

    def node(index, results, uses, fn):
        failed = [v[u] for u in uses if isinstance(v.get(u), Failure)]
        if failed:
            out = failed[0]
        else:
            if index == NODE and target in ('cpu', 'cuda'):
                REFERENCES[target] = _reference(v, results, uses, fn)
            try:
                out = fn()
                if device == 'cuda':
                    torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 -- every error is a result here
                out = Failure('%s: %s' % (type(e).__name__, str(e).strip()), index)
        if isinstance(out, Failure):
            values = [out] * len(results)
        elif len(results) == 1:
            values = [out]
        else:
            values = list(out)
            if len(values) != len(results):
                msg = 'returned %d results, the program names %d' % (len(values), len(results))
                values = [Failure(msg, index)] * len(results)
        for name, value in zip(results, values):
            v[name] = value
        if index == NODE:
            captured['value'] = _snapshot(values if INVARIANTS else values[OUTPUT])

    with torch.no_grad():
        program(v, node)
    return captured.get('value', Failure('the node did not run', NODE))


def _run_in_child(target, env):
    """Runs a target in a fresh process (e.g. with ATen's scalar CPU kernels)."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'result.pt')
        child_env = dict(os.environ, **env)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), '--child', target, path],
                              env=child_env)
        if proc.returncode != 0 or not os.path.exists(path):
            return Failure('child process exited with status %d' % proc.returncode, NODE)
        saved = torch.load(path)
    if 'error' in saved:
        return Failure(saved['error'], saved['node'])
    return saved['value']


def _child(target, path):
    open(path + '.started', 'w').close()
    r = run(target)
    if isinstance(r, Failure):
        torch.save({'error': r.message, 'node': r.node}, path)
    else:
        torch.save({'value': r}, path)
    return 0


def _dtype_of(r):
    if isinstance(r, torch.Tensor):
        return r.dtype
    if isinstance(r, list):
        return [x.dtype for x in r]
    return None


def _to(r, want):
    if isinstance(r, torch.Tensor) and want is not None:
        return r.to(want)
    if isinstance(r, list) and isinstance(want, list) and len(want) == len(r):
        return [x.to(w) for x, w in zip(r, want)]
    return r


def _cast_back(results, targets):
    """cpu-f64 results are rounded back to the program's dtype: the dtype the
    plain run of the node produced."""
    want = None
    for t in targets:
        if t != 'cpu-f64' and _dtype_of(results[t]) is not None:
            want = _dtype_of(results[t])
            break
    if want is None:
        want = _dtype_of(run('cpu'))
    for t in targets:
        if t == 'cpu-f64':
            results[t] = _to(results[t], want)


def comparable(outs):
    """What is compared of the node's outputs: the outputs themselves, or for a
    decomposition its invariants (computed in float64, rounded back), since
    factors are free up to sign or phase. As divfuzz's oracle does."""
    if not INVARIANTS or not isinstance(outs, list):
        return outs
    dtype = outs[0].dtype
    f = [t.to(torch.float64) if not t.is_complex() else t.to(torch.complex128) for t in outs]
    if INVARIANTS == 'qr':  # Q R = A, and |diag(R)| is unique
        inv = [f[1].diagonal(0, -2, -1).abs(), f[0].matmul(f[1])]
    elif INVARIANTS == 'svd':  # U diag(S) Vh = A, and S is unique
        inv = [f[1], f[0].mul(f[1].unsqueeze(-2)).matmul(f[2])]
    elif INVARIANTS == 'eigh':  # V diag(w) V^T = sym(A), and w is unique
        inv = [f[0], f[1].mul(f[0].unsqueeze(-2)).matmul(f[1].mT)]
    elif INVARIANTS == 'lu':  # P L U = A
        inv = [f[0].matmul(f[1]).matmul(f[2])]
    elif INVARIANTS == 'eig':  # the spectrum as a multiset
        w = outs[0].to(torch.complex128)
        part = torch.float32 if dtype == torch.complex64 else torch.float64
        return [w.real.sort(-1)[0].to(part).contiguous(), w.imag.sort(-1)[0].to(part).contiguous()]
    else:
        return outs
    return [t.to(dtype).contiguous() for t in inv]


def _classes(t):
    """Per real element: 0 finite, 1 +inf, 2 -inf, 3 nan."""
    c = torch.zeros(t.shape, dtype=torch.int8)
    c[t == math.inf] = 1
    c[t == -math.inf] = 2
    c[torch.isnan(t)] = 3
    return c


def _parts(t):
    """Real view: complex tensors as their real and imaginary parts, in float64."""
    if t.is_complex():
        return torch.view_as_real(t.resolve_conj().to(torch.complex128)).reshape(-1)
    return t.to(torch.float64).reshape(-1)


def _at(t, flat, part_index):
    """Element `flat` of t, printed with its exact hex value."""
    e = t.reshape(-1)[flat].item()
    if isinstance(e, complex):
        return '%r (%s, %s)' % (e, e.real.hex(), e.imag.hex())
    if isinstance(e, float):
        return '%r (%s)' % (e, e.hex())
    return repr(e)


def compare(a, b, name_a, name_b):
    """The oracle's rules for one output, in order. Returns (class, detail,
    flat index into the real view or None); class None means no divergence."""
    if isinstance(a, list) and isinstance(b, list):
        for k, (x, y) in enumerate(zip(a, b)):
            cls, detail, where = compare(x, y, name_a, name_b)
            if cls is not None:
                return cls, 'invariant %d of the decomposition: %s' % (k, detail), (k, where)
        return None, 'every invariant of the decomposition agrees', None
    fa, fb = isinstance(a, Failure), isinstance(b, Failure)
    if fa and fb:
        return None, 'both targets raised', None
    if fa or fb:
        side, f = (name_a, a) if fa else (name_b, b)
        cls = 'dtype_gap' if 'not implemented for' in f.message else 'error_split'
        return cls, 'only %s raised: %s' % (side, f.message), None
    if a.shape != b.shape or a.dtype != b.dtype:
        return 'meta_split', '%s: %s %s, %s: %s %s' % (name_a, a.dtype, list(a.shape), name_b,
                                                       b.dtype, list(b.shape)), None
    if a.is_floating_point() or a.is_complex():
        per = 2 if a.is_complex() else 1
        pa, pb = _parts(a), _parts(b)
        ca, cb = _classes(pa), _classes(pb)
        differ = (ca != cb).nonzero()
        if len(differ):
            i = int(differ[0])
            return 'class_split', 'element %d: %s %s, %s %s' % (
                i // per, name_a, _at(a, i // per, i % per), name_b, _at(b, i // per, i % per)), i
        rtol, atol = TOLERANCES[a.dtype]
        finite = ca == 0  # the classes agree: both sides finite there
        err = torch.where(finite, (pa - pb).abs(), torch.zeros_like(pa))
        allowed = atol + rtol * pb.abs()
        bad = (finite & (err > allowed)).nonzero()
        if len(bad):
            i = int(bad[0])
            return 'tolerance', ('element %d: %s %s, %s %s, |a-b| = %r > %r = atol %r + rtol %r * |b|'
                                 % (i // per, name_a, _at(a, i // per, i % per), name_b,
                                    _at(b, i // per, i % per), err[i].item(), allowed[i].item(),
                                    atol, rtol)), i
        return None, 'equal within rtol %r, atol %r (max |a-b| = %r)' % (
            rtol, atol, err.max().item() if err.numel() else 0.0), None
    if not torch.equal(a, b):
        i = int((a.reshape(-1) != b.reshape(-1)).nonzero()[0])
        return 'exact_mismatch', 'element %d: %s %s, %s %s' % (i, name_a, _at(a, i, 0), name_b,
                                                               _at(b, i, 0)), i
    return None, 'exactly equal', None


def _cpu_name():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cuda_library_versions():
    """cuBLAS and cuSOLVER as loaded (asked through their GetProperty calls),
    and the driver: (cublas, cusolver, driver), each None when unknown."""
    import ctypes
    found = {}
    try:
        with open('/proc/self/maps') as f:
            for line in f:
                path = line.split()[-1]
                base = os.path.basename(path)
                for lib in ('libcublas.so', 'libcusolver.so'):
                    if base.startswith(lib):
                        found.setdefault(lib, path)
    except OSError:
        pass
    if 'libcusolver.so' not in found and 'libcublas.so' in found:
        d = os.path.dirname(found['libcublas.so'])
        for name in sorted(os.listdir(d)):
            if name.startswith('libcusolver.so'):
                found['libcusolver.so'] = os.path.join(d, name)
                break

    def version(lib, symbol):
        try:
            fn = getattr(ctypes.CDLL(found[lib]), symbol)
            parts = []
            for kind in range(3):
                x = ctypes.c_int()
                if fn(kind, ctypes.byref(x)) != 0:
                    return None
                parts.append(str(x.value))
            return '.'.join(parts)
        except (KeyError, OSError, AttributeError):
            return None

    driver = None
    try:
        with open('/sys/module/nvidia/version') as f:
            driver = f.read().strip()
    except OSError:
        pass
    return (version('libcublas.so', 'cublasGetProperty'),
            version('libcusolver.so', 'cusolverGetProperty'), driver)


def print_environment():
    print('torch %s, python %s, %s' % (torch.__version__, platform.python_version(),
                                        platform.platform()))
    capability = getattr(torch.backends.cpu, 'get_cpu_capability', lambda: '?')()
    forced = os.environ.get('ATEN_CPU_CAPABILITY')
    print('CPU: %s (%d cores), ATen CPU capability %s%s, %d threads' % (
        _cpu_name(), os.cpu_count() or 0, capability,
        ' (ATEN_CPU_CAPABILITY=%s)' % forced if forced else '', torch.get_num_threads()))
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        cublas, cusolver, driver = _cuda_library_versions()
        print('CUDA runtime %s, GPU: %s (sm_%d%d), driver %s, cuBLAS %s, cuSOLVER %s, cuDNN %s, '
              'TF32 matmul %s, TF32 cuDNN %s' % (
                  torch.version.cuda, p.name, p.major, p.minor, driver, cublas, cusolver,
                  torch.backends.cudnn.version(), torch.backends.cuda.matmul.allow_tf32,
                  torch.backends.cudnn.allow_tf32))
    else:
        print('CUDA: not available (torch built with CUDA %s)' % torch.version.cuda)


def exact(t, limit=64):
    """The first elements exactly: hex floats (complex: re, im), integers."""
    if isinstance(t, list):
        return ' | '.join(exact(x, limit) for x in t)
    flat = t.reshape(-1)[:limit]
    if t.is_complex():
        vals = [x.hex() for p in flat.to(torch.complex128).tolist() for x in (p.real, p.imag)]
    elif t.is_floating_point():
        vals = [x.hex() for x in flat.to(torch.float64).tolist()]
    else:
        vals = [str(int(x)) for x in flat.to(torch.int64).tolist()]
    return ' '.join(vals) + (' ...' if t.numel() > limit else '')


def show(name, r):
    if isinstance(r, Failure):
        print('%s: %s' % (name, r))
    elif isinstance(r, list):
        for k, x in enumerate(r):
            show('%s invariant %d' % (name, k), x)
    else:
        print('%s: dtype %s, shape %s' % (name, r.dtype, list(r.shape)))
        print(r)
        print('  exact: %s' % exact(r))


_MANTISSA = {torch.float16: 10, torch.bfloat16: 7, torch.float32: 23, torch.float64: 52,
             torch.complex64: 23, torch.complex128: 52}


def ulps(value, reference, dtype):
    """|value - reference| in units in the last place of dtype at the reference."""
    if dtype not in _MANTISSA or not (math.isfinite(value) and math.isfinite(reference)):
        return None
    real = {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, dtype)
    info = torch.finfo(real)
    tiny = info.tiny * info.eps  # the smallest subnormal
    spacing = tiny if reference == 0 else max(
        math.ldexp(1.0, math.frexp(abs(reference))[1] - 1 - _MANTISSA[dtype]), tiny)
    return abs(value - reference) / spacing


def element(t, flat):
    """Element `flat` of the real view (complex: re, im interleaved) as a float."""
    return float(_parts(t)[flat])


def check_side(name, value, reference):
    """Whether a side misses the float64 reference computed from its own inputs,
    and why (None, None when there is no reference to judge it by)."""
    if reference is None:
        return None, None
    if isinstance(reference, Failure):
        if isinstance(value, Failure):
            return False, '%s raises, and so does the float64 reference' % name
        return True, 'the float64 reference raises (%s) but %s returns values' % (
            reference.message, name)
    if isinstance(value, Failure):
        return True, '%s raises (%s) where the float64 reference computes a value' % (
            name, value.message)
    ref = _to(reference, _dtype_of(value))
    cls, detail, _ = compare(value, ref, name, 'reference')
    if cls is None:
        return False, '%s matches the float64 reference computed from its own inputs' % name
    return True, '%s misses the float64 reference computed from its own inputs: %s: %s' % (
        name, cls, detail)


def dump_inputs():
    for name, t in make_inputs().items():
        print('%s %s %s: %s' % (name, t.dtype, list(t.shape), exact(t, limit=t.numel())))
    return 0


def _element_bits(t, i):
    """Element i of a flat real view, exactly: value, hex and raw bits."""
    e = t[i].item()
    if isinstance(e, float):
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
        raw = t[i:i + 1].view(bits).item() & ((1 << (8 * t.element_size())) - 1)
        return '%r (%s, bits 0x%0*x)' % (e, e.hex(), 2 * t.element_size(), raw)
    return repr(e)


def same_bits(x, y):
    """Whether two runs' results are the same bit for bit (a NaN matches any
    NaN in the same place; -0.0 and 0.0 differ), and else what differs."""
    if isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            return False, '%d vs %d results' % (len(x), len(y))
        for k, (p, q) in enumerate(zip(x, y)):
            same, detail = same_bits(p, q)
            if not same:
                return False, 'result %d: %s' % (k, detail)
        return True, None
    fx, fy = isinstance(x, Failure), isinstance(y, Failure)
    if fx and fy:
        return True, None
    if fx or fy:
        return False, 'one run raises: %s' % (x if fx else y)
    if x.shape != y.shape or x.dtype != y.dtype:
        return False, 'dtype/shape: %s %s vs %s %s' % (x.dtype, list(x.shape), y.dtype,
                                                      list(y.shape))
    per = 2 if x.is_complex() else 1
    if x.is_complex():
        x, y = torch.view_as_real(x.resolve_conj()), torch.view_as_real(y.resolve_conj())
    x, y = x.contiguous().reshape(-1), y.contiguous().reshape(-1)
    if x.is_floating_point():
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
        differ = (x.view(bits) != y.view(bits)) & ~(torch.isnan(x) & torch.isnan(y))
    else:
        differ = x != y
    where = differ.nonzero()
    if not len(where):
        return True, None
    i = int(where[0])
    part = ('', ' (real)', ' (imag)')[0 if per == 1 else 1 + i % 2]
    return False, 'element %d%s: %s vs %s' % (i // per, part, _element_bits(x, i),
                                             _element_bits(y, i))


def malloc_perturb(byte):
    """glibc's M_PERTURB: fresh malloc blocks hold ~byte (0: off); nothing
    without glibc."""
    try:
        import ctypes
        ctypes.CDLL(None).mallopt(-6, byte)
    except (OSError, AttributeError):
        pass


def without_malloc_cache():
    """Restarts this script once with glibc's thread cache off: malloc's
    perturb byte never reaches the blocks that cache hands back, and glibc
    2.38+ serves PyTorch's aligned CPU allocations from it too."""
    if platform.libc_ver()[0] != 'glibc' or os.environ.get('DIVFUZZ_MALLOC_CACHE_OFF'):
        return
    env = dict(os.environ, DIVFUZZ_MALLOC_CACHE_OFF='1')
    env['GLIBC_TUNABLES'] = ':'.join(
        t for t in (env.get('GLIBC_TUNABLES'), 'glibc.malloc.tcache_count=0') if t)
    sys.stdout.flush()
    try:
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    except OSError as e:
        print('cannot restart with glibc.malloc.tcache_count=0 (%s): perturbing less memory' % e)


def check_nondeterminism(target, runs, cuda):
    """Runs one target on the same inputs up to `runs` times (RERUN_SECONDS at
    most); 1 when a run differs from the first bit for bit (the finding
    reproduces), else 0. Runs alternate malloc's perturb byte 0xff (zeroed)
    and 0x5a (0xa5 bytes), so a kernel that reads memory it never wrote (CPU
    linalg_lstsq's gelsy pivots, pytorch#187411) differs between runs in a
    fresh process as it did in the fuzzer's; a correct kernel cannot tell."""
    if target == 'cuda' and not cuda:
        print('CUDA not available: skipping the nondeterminism check of cuda')
        return 0
    import time

    def perturbed(k):
        malloc_perturb(0xff if k % 2 else 0x5a)
        try:
            return run(target)
        finally:
            malloc_perturb(0)

    print('runs alternate malloc\'s perturb byte (fresh memory zeroed, then 0xa5%s): a kernel '
          'that reads memory it never wrote differs too'
          % ('; glibc\'s thread cache off' if os.environ.get('DIVFUZZ_MALLOC_CACHE_OFF') else ''))
    first = perturbed(1)
    start, k = time.monotonic(), 1
    while k < runs and time.monotonic() - start < RERUN_SECONDS:
        k += 1
        again = perturbed(k)
        same, detail = same_bits(first, again)
        if not same:
            print('%s run 1: %s' % (target, first if isinstance(first, Failure) else exact(first)))
            print('%s run %d: %s' % (target, k, again if isinstance(again, Failure)
                                     else exact(again)))
            print('VERDICT: nondeterminism reproduces (%s run 1 vs run %d): %s' % (target, k,
                                                                                  detail))
            return 1
    print('VERDICT: no nondeterminism in %d runs of %s' % (k, target))
    return 0


# What a CUDA fault says (it poisons the process's CUDA context: a crash).
CUDA_FAULTS = ('illegal memory access', 'device-side assert', 'unspecified launch failure',
               'misaligned address', 'illegal instruction')


def check_failure(kind, target, seconds, cuda):
    """Runs one target in a child process: 1 when it hangs (still running
    after `seconds`) or crashes (dies by a signal, or a CUDA fault), as `kind`
    says, else 0."""
    import subprocess
    import tempfile
    import time
    if target == 'cuda' and not cuda:
        print('CUDA not available: skipping the %s check of cuda' % kind)
        return 0
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING='1')
    if target == 'cpu-scalar':
        env['ATEN_CPU_CAPABILITY'] = 'default'
    run_as = 'cpu' if target == 'cpu-scalar' else target
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'result.pt')
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--child', run_as,
                                 path], env=env)
        # The clock starts when the child has started torch and runs the
        # program (it makes path.started), not at the interpreter's start.
        start = time.time()
        began = None
        while proc.poll() is None:
            now = time.time()
            if began is None and os.path.exists(path + '.started'):
                began = now
            if now - (began or start) > seconds + (0 if began else 300):
                proc.kill()
                proc.wait()
                print('%s: still running after %d s (killed)' % (target, seconds))
                if kind == 'hang':
                    print('VERDICT: hang reproduces (%s, node %d, %s)' % (target, NODE, OP))
                    return 1
                print('VERDICT: no crash (%s hangs instead)' % target)
                return 0
            time.sleep(0.05)
        took = time.time() - (began or start)
        if proc.returncode < 0:
            print('%s: died by signal %d after %.1f s' % (target, -proc.returncode, took))
            if kind == 'crash':
                print('VERDICT: crash reproduces (%s, node %d, %s)' % (target, NODE, OP))
                return 1
            print('VERDICT: no hang (%s crashes instead)' % target)
            return 0
        result = torch.load(path) if os.path.exists(path) else {}
    error = result.get('error', '')
    if kind == 'crash' and any(f in error for f in CUDA_FAULTS):
        print('%s: a CUDA fault: %s' % (target, error.splitlines()[0] if error else ''))
        print('VERDICT: crash reproduces (%s, node %d, %s)' % (target, NODE, OP))
        return 1
    print('%s: finished in %.1f s (exit status %d%s)' % (
        target, took, proc.returncode, ', raised: ' + error.splitlines()[0] if error else ''))
    print('VERDICT: no %s' % kind)
    return 0


def collect(runs, cuda):
    """Every target's result (CUDA skipped when absent), comparable with the
    others; REFERENCES holds each side's float64 reference of the node."""
    results = {}
    for t in runs:
        if t == 'cuda' and not cuda:
            continue
        results[t] = run(t)
    _cast_back(results, list(results))
    if INVARIANTS:
        for t in list(results):
            if t in REFERENCES and not isinstance(REFERENCES[t], Failure):
                REFERENCES[t] = comparable(_to(REFERENCES[t], _dtype_of(results[t])))
            results[t] = comparable(results[t])
    return results


def show_all(runs, results):
    print()
    print('Output %%%s: result %d of node %d, %s' % (VALUE, OUTPUT, NODE, OP))
    for t in runs:
        if t not in results:
            print('%s: skipped (CUDA not available)' % t)
            continue
        show(t, results[t])
        if t in REFERENCES:
            ref = REFERENCES[t]
            if isinstance(ref, Failure):
                print('  float64 reference from %s\'s own inputs: %s' % (t, ref))
            else:
                print('  float64 reference from %s\'s own inputs: %s' % (t, exact(ref)))
    print()


def main():
    ap = argparse.ArgumentParser(description='divfuzz repro: ' + TITLE)
    ap.add_argument('--target-a', default=TARGET_A, choices=TARGETS)
    ap.add_argument('--target-b', default=TARGET_B, choices=TARGETS)
    ap.add_argument('--dump-inputs', action='store_true',
                    help='print every input exactly (hex floats) and exit')
    ap.add_argument('--runs', type=int, default=RUNS,
                    help='nondeterminism: how often to run %s' % RERUN if RERUN else
                    argparse.SUPPRESS)
    ap.add_argument('--attempts', type=int, default=ATTEMPTS,
                    help='how often to run both targets before saying the divergence does '
                    'not reproduce (default %(default)s)')
    ap.add_argument('--hang-seconds', type=int, default=HANG_SECONDS,
                    help='a hang: how long %s may run (default %%(default)s)' % FAILURE_TARGET
                    if FAILURE == 'hang' else argparse.SUPPRESS)
    ap.add_argument('--child', nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return _child(*args.child)
    if args.dump_inputs:
        return dump_inputs()
    if RERUN and RERUN != 'cuda':
        without_malloc_cache()
    torch.set_printoptions(precision=10, threshold=sys.maxsize)
    targets = [args.target_a, args.target_b]
    print('divfuzz repro: %s' % TITLE)
    if SEEN:
        print('divfuzz saw: %s' % SEEN)
    print_environment()
    cuda = torch.cuda.is_available()
    if FAILURE:
        # Running the program here would hang or kill this script.
        return check_failure(FAILURE, FAILURE_TARGET, args.hang_seconds, cuda)
    # CPU, CUDA and the float64 reference always (CUDA skipped when absent),
    # and whatever else the two targets name.
    runs = []
    for t in ['cpu', 'cuda', 'cpu-f64'] + targets:
        if t not in runs:
            runs.append(t)
    results = collect(runs, cuda)
    show_all(runs, results)
    if RERUN:
        return check_nondeterminism(RERUN, args.runs, cuda)
    if 'cuda' in targets and not cuda:
        print('CUDA not available: skipping the verdict (compare other targets with '
              '--target-a/--target-b, e.g. --target-a cpu --target-b cpu-f64)')
        return 0
    a, b = targets
    cls, detail, flat = compare(results[a], results[b], a, b)
    attempt = 1
    while cls is None and attempt < args.attempts:
        attempt += 1
        results = collect(runs, cuda)
        cls, detail, flat = compare(results[a], results[b], a, b)
    if cls is None:
        print('VERDICT: no divergence (%s vs %s%s): %s' % (
            a, b, '' if attempt == 1 else ', %d attempts' % attempt, detail))
        return 0
    if attempt > 1:
        print('The results vary from run to run: %s and %s diverge on attempt %d of %d:'
              % (a, b, attempt, args.attempts))
        show_all(runs, results)
    print('VERDICT: divergence reproduces (%s vs %s): %s: %s' % (a, b, cls, detail))
    # Who is wrong: each side against the float64 reference of the node
    # computed from its own inputs (cpu-f64 is the reference itself).
    wrong = {}
    for t in targets:
        if t == 'cpu-f64':
            print('  %s: the reference itself' % t)
            continue
        miss, why = check_side(t, results[t], REFERENCES.get(t))
        if miss is None:
            print('  %s: no per-node reference (runs in a child process)' % t)
            continue
        wrong[t] = miss
        print('  %s' % why)
        value, ref = results[t], REFERENCES.get(t)
        if isinstance(flat, tuple) and isinstance(value, list) and isinstance(ref, list):
            k, flat = flat
            value, ref = value[k], ref[k]
        if (flat is not None and isinstance(value, torch.Tensor) and
                isinstance(ref, torch.Tensor) and (value.is_floating_point() or value.is_complex())):
            try:
                x, r = element(value, flat), element(ref, flat)
                u = ulps(x, r, value.dtype)
                print('    at that element: %s %r, float64 reference %r%s' % (
                    t, x, r, '' if u is None else ', error %.4g ULPs' % u))
            except (IndexError, RuntimeError, TypeError):
                pass
    blamed = [t for t in targets if wrong.get(t)]
    if len(blamed) == 2:
        side = 'undecided' if cls == 'tolerance' else 'both'
    elif len(blamed) == 1:
        side = blamed[0]
    else:
        side = 'undecided'
    print('WRONG SIDE: %s' % side)
    return 1


if __name__ == '__main__':
    try:
        code = main()
    except Exception:  # noqa: BLE001 -- a harness failure is not a reproduction
        traceback.print_exc()
        print('repro script failed (exit 2)', file=sys.stderr)
        code = 2
    sys.exit(code)
)PY";

}  // namespace

}  // namespace divfuzz::minimize
