#include "minimize/emit_common.h"

#include "exec/cuda_variants.h"

#include "graph/gradient.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "exec/malloc_perturb.h"
#include "exec/target.h"
#include "graph/printer.h"
#include "ops/catalogue.h"
#include "oracles/expected_rules.h"

namespace divfuzz::minimize {
namespace {

using graph::DType;

// The lines of `harness`, each with its newline.
std::vector<absl::string_view> Lines(absl::string_view harness) {
  std::vector<absl::string_view> lines;
  while (!harness.empty()) {
    size_t nl = harness.find('\n');
    nl = nl == absl::string_view::npos ? harness.size() : nl + 1;
    lines.push_back(harness.substr(0, nl));
    harness.remove_prefix(nl);
  }
  return lines;
}

// The block a marker line opens or closes: "NAME" of "# divfuzz-harness begin NAME".
bool Marker(absl::string_view line, absl::string_view comment, absl::string_view word,
            std::string* name) {
  const std::string prefix = absl::StrCat(comment, " divfuzz-harness ", word, " ");
  if (!absl::StartsWith(line, prefix)) return false;
  *name = std::string(absl::StripTrailingAsciiWhitespace(line.substr(prefix.size())));
  return true;
}

struct DTypeSpelling {
  DType dtype;
  const char* torch;
  const char* aten;
};
constexpr DTypeSpelling kDTypeSpellings[] = {
    {DType::kF16, "torch.float16", "at::kHalf"},
    {DType::kBF16, "torch.bfloat16", "at::kBFloat16"},
    {DType::kF32, "torch.float32", "at::kFloat"},
    {DType::kF64, "torch.float64", "at::kDouble"},
    {DType::kC64, "torch.complex64", "at::kComplexFloat"},
    {DType::kC128, "torch.complex128", "at::kComplexDouble"},
    {DType::kI8, "torch.int8", "at::kChar"},
    {DType::kI16, "torch.int16", "at::kShort"},
    {DType::kI32, "torch.int32", "at::kInt"},
    {DType::kI64, "torch.int64", "at::kLong"},
    {DType::kU8, "torch.uint8", "at::kByte"},
    {DType::kBool, "torch.bool", "at::kBool"},
};

const DTypeSpelling& SpellingOf(DType dtype) {
  for (const DTypeSpelling& s : kDTypeSpellings) {
    if (s.dtype == dtype) return s;
  }
  return kDTypeSpellings[2];
}

// The targets a repro runs, in the order its usage names them.
constexpr exec::Target kReproTargets[] = {exec::Target::kCpu, exec::Target::kCuda,
                                          exec::Target::kCpuF64, exec::Target::kCpuScalar};

}  // namespace


std::string FillHarness(absl::string_view harness, absl::string_view comment,
                        const std::map<std::string, std::string>& blocks) {
  std::string out;
  std::string open;  // the block being replaced, if any
  for (absl::string_view line : Lines(harness)) {
    std::string name;
    if (Marker(line, comment, "begin", &name)) {
      auto it = blocks.find(name);
      if (it != blocks.end()) {
        open = name;
        out += it->second;
      }
    } else if (Marker(line, comment, "end", &name)) {
      if (name == open) open.clear();
    } else if (open.empty()) {
      absl::StrAppend(&out, line);
    }
  }
  return out;
}

std::string HarnessBlock(absl::string_view harness, absl::string_view comment,
                         absl::string_view name) {
  std::string out;
  bool in = false;
  for (absl::string_view line : Lines(harness)) {
    std::string marker;
    if (Marker(line, comment, "begin", &marker) || Marker(line, comment, "end", &marker)) {
      if (marker == name) in = !in;
    } else if (in) {
      absl::StrAppend(&out, line);
    }
  }
  return out;
}

std::vector<int> GuardedNodes(const graph::Program& program) {
  std::vector<int> out;
  for (size_t i = 0; i < program.nodes.size(); ++i) {
    const ops::OpSpec* spec = ops::FindOp(program.nodes[i].QualifiedName());
    if (spec != nullptr && ops::GuardsItsInputs(*spec)) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::string BaseTargetName(const std::string& target) { return target.substr(0, target.find('+')); }

void SetReproTargets(exec::Target a, exec::Target b, ReproSpec* spec) {
  spec->target_a = std::string(exec::TargetName(exec::Target(a.base())));
  spec->target_b = std::string(exec::TargetName(exec::Target(b.base())));
  spec->backend.clear();
  for (exec::Target t : {a, b}) {
    if (spec->backend.empty() && t.variants() != 0) {
      spec->backend = exec::VariantSuffix(t.variants()).substr(1);
    }
  }
}

HarnessConstants ConstantsFor(const oracles::Policy& policy, const std::string& op) {
  HarnessConstants c;
  for (DType d : {DType::kF16, DType::kBF16, DType::kF32, DType::kF64, DType::kC64, DType::kC128}) {
    c.tolerances.push_back({d, policy.For(op, d)});
    const DType part = d == DType::kC64 ? DType::kF32 : d == DType::kC128 ? DType::kF64 : d;
    c.float_bits.push_back(
        {d, -std::ilogb(graph::Epsilon(part)), std::ilogb(graph::DenormMin(part))});
  }
  for (exec::Target t : kReproTargets) c.targets.emplace_back(exec::TargetName(t));
  for (const char* f : exec::kCudaFaultMessages) c.cuda_faults.emplace_back(f);
  c.perturb_odd = exec::RerunPerturbByte(1);
  c.perturb_even = exec::RerunPerturbByte(2);
  for (const char* m : exec::kDtypeGapMessages) c.dtype_gaps.emplace_back(m);
  c.input_written = exec::kInputWritten;
  for (const exec::CudaVariant& v : exec::CudaVariants()) {
    c.switches.push_back({std::string(v.name), std::string(v.library), std::string(v.python),
                          std::string(v.settings)});
  }
  c.malloc_cache_off = "DIVFUZZ_MALLOC_CACHE_OFF";
  c.no_malloc_cache = "glibc.malloc.tcache_count=0";
  c.start_seconds = 300;
  c.poll_seconds = 0.05;
  c.exact_limit = 64;
  return c;
}

std::string ShortestDouble(double v) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string WrapItems(const std::vector<std::string>& items, const std::string& indent) {
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

std::string NodeText(const graph::Node& node) {
  std::vector<std::string> results, args;
  for (const std::string& r : node.results) results.push_back("%" + r);
  for (const graph::Argument& a : node.args) {
    const std::string value = graph::PrintLiteral(a.value);
    args.push_back(a.name.empty() ? value : absl::StrCat(a.name, "=", value));
  }
  const std::string lhs = results.empty() ? "" : absl::StrCat(absl::StrJoin(results, ", "), " = ");
  return absl::StrCat(lhs, node.QualifiedName(), "(", absl::StrJoin(args, ", "), ")");
}

std::string InputText(const graph::Input& input, size_t name_max, size_t payload_max,
                      std::string (*comment)(absl::string_view, size_t)) {
  return absl::StrCat("%", comment(input.name, name_max), ": ", graph::PrintType(input.type), " = ",
                      comment(graph::PrintPayload(input.payload, input.type.dtype), payload_max));
}

bool UniformPayload(const std::vector<double>& values, size_t per) {
  bool uniform = values.size() >= per && !values.empty();
  for (size_t i = per; uniform && i < values.size(); ++i) {
    const double a = values[i], b = values[i % per];
    uniform = std::memcmp(&a, &b, sizeof a) == 0;
  }
  return uniform;
}

std::string Where(const graph::Program& program, const ReproSpec& spec, int node_index) {
  const graph::Node& node = program.nodes[node_index];
  return absl::StrCat("%", node.results[spec.output_index], ", result ", spec.output_index,
                      " of node ", node_index, " (", node.QualifiedName(), ")");
}

std::string CheckLines(const ReproSpec& spec, absl::string_view prefix, bool flags) {
  std::string out;
  if (!spec.rerun_target.empty()) {
    absl::StrAppend(&out, prefix, "Nondeterminism: then reruns ", spec.rerun_target, " up to ",
                    kNondeterminismRuns, " times", flags ? " (--runs)" : "", " or ",
                    kNondeterminismSeconds, " s and exits 1 if two runs differ bit for bit.\n");
  }
  if (spec.rerun_target.empty() && spec.attempts > 1) {
    absl::StrAppend(&out, prefix, "The kernel's writes race: runs both targets up to ",
                    spec.attempts, " times", flags ? " (--attempts)" : "",
                    " until they diverge.\n");
  }
  if (spec.failure == "hang") {
    absl::StrAppend(&out, prefix, "A hang: runs ", spec.failure_target,
                    " in a child process and exits 1 if it is still running after ",
                    spec.hang_seconds, " s", flags ? " (--hang-seconds)" : "", ".\n");
  } else if (spec.failure == "crash") {
    absl::StrAppend(&out, prefix, "A crash: runs ", spec.failure_target,
                    " in a child process and exits 1 if it dies by a signal or a CUDA fault.\n");
  }
  return out;
}

std::string FormatLiteral(const graph::Literal& l, const LiteralSyntax& syntax) {
  using Kind = graph::Literal::Kind;
  switch (l.kind) {
    case Kind::kNone:
      return syntax.none;
    case Kind::kBool:
      return l.b ? syntax.yes : syntax.no;
    case Kind::kInt:
      return syntax.integer(l.i);
    case Kind::kFloat:
      return syntax.floating(l.f);
    case Kind::kString:
      return syntax.text(l.s);
    case Kind::kDType:
      return syntax.dtype(l.dtype);
    case Kind::kValue:
      return syntax.value(l.s);
    case Kind::kList: {
      std::vector<std::string> items;
      for (const graph::Literal& item : l.list) items.push_back(FormatLiteral(item, syntax));
      return absl::StrCat(syntax.list_open, absl::StrJoin(items, ", "), syntax.list_close);
    }
  }
  return syntax.none;
}

absl::string_view TorchDTypeName(DType dtype) { return SpellingOf(dtype).torch; }
absl::string_view AtenDTypeName(DType dtype) { return SpellingOf(dtype).aten; }

// The node helpers of emit_python.h, which both emitters use.

bool RacesAt(const graph::Program& program, const std::string& signature) {
  const std::string op = signature.substr(0, signature.find('|'));
  // A gradient finding's signature names its backward kernel (SinhBackward0).
  const bool gradient = op == graph::kGradOp || op.find("Backward") != std::string::npos;
  for (size_t i = 0; i < program.nodes.size(); ++i) {
    const graph::Node& node = program.nodes[i];
    const bool named = gradient ? graph::IsGradNode(node) : node.QualifiedName() == op;
    if (named && oracles::MayVaryBetweenRuns(program, static_cast<int>(i))) return true;
  }
  return false;
}

int ReproAttempts(const graph::Program& program, int node_index) {
  return node_index >= 0 && static_cast<size_t>(node_index) < program.nodes.size() &&
                 oracles::MayVaryBetweenRuns(program, node_index)
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

}  // namespace divfuzz::minimize
