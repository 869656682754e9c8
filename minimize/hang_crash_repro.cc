#include "minimize/hang_crash_repro.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "graph/printer.h"
#include "graph/validate.h"
#include "minimize/emit_common.h"
#include "minimize/emit_cpp.h"
#include "minimize/emit_python.h"
#include "minimize/environment.h"
#include "minimize/program_edit.h"
#include "ops/infer.h"

namespace divfuzz::minimize {
namespace {

std::string Title(const FailureSpec& spec, const oracles::Divergence& root) {
  return absl::StrCat(root.op, " (", root.dtype.empty() ? "?" : root.dtype, ") ",
                      spec.kind == "hang" ? "hangs" : "crashes", " on ",
                      exec::TargetName(spec.target));
}

std::string Report(const graph::Program& program, const FailureSpec& spec,
                   const oracles::Divergence& root, const ReproSpec& repro,
                   const ReproOptions& options, const ReduceResult* reduction) {
  const std::string target(exec::TargetName(spec.target));
  std::string out = absl::StrCat("# ", repro.title, "\n\n");
  if (spec.kind == "hang") {
    absl::StrAppend(&out, "`", root.op, "` on ", target, " does not return: the program below ",
                    "was still running in node ", root.node_index, " after ", spec.hang_seconds,
                    " s");
  } else {
    absl::StrAppend(&out, "`", root.op, "` on ", target,
                    " kills the process (a signal, or a CUDA fault that poisons the context) in "
                    "node ",
                    root.node_index);
  }
  absl::StrAppend(&out, ", on inputs of ", InputElements(program),
                  " elements in all. Whatever the inputs, an op should return or raise.\n\n");
  if (!options.seen.empty()) absl::StrAppend(&out, "divfuzz saw: ", options.seen, "\n\n");
  absl::StrAppend(&out, "## Minimal repro\n\n```python\n", EmitPythonSnippet(program, repro),
                  "```\n\n`repro.py` (and `repro_cpp/`) run ", target,
                  " in a child process and exit 1 when it ",
                  spec.kind == "hang" ? absl::StrCat("is still running after ", spec.hang_seconds,
                                                     " s (--hang-seconds)")
                                      : "dies by a signal or a CUDA fault",
                  ", 0 when it does not: they can drive `git bisect run`.\n\n");
  absl::StrAppend(&out, "## Environment\n\n");
  for (const auto& [label, value] : CurrentEnvironment().Items()) {
    absl::StrAppend(&out, "- ", label, ": ", value, "\n");
  }
  absl::StrAppend(&out, "\n<details><summary>The program (divfuzz .dfz",
                  options.finding_id.empty() ? "" : ", finding ", options.finding_id,
                  ")</summary>\n\n```\n", graph::PrintProgram(program), "```\n\nSignature `",
                  spec.signature, "`.");
  if (reduction != nullptr) {
    absl::StrAppendFormat(&out,
                          " Reduced from %d to %d ops and %d to %d input elements in %.1f s "
                          "(%d candidates tried).",
                          reduction->nodes_before, reduction->nodes_after,
                          reduction->elements_before, reduction->elements_after, reduction->seconds,
                          reduction->tests);
    if (reduction->skipped > 0) {
      absl::StrAppend(&out, " ", reduction->skipped,
                      " candidate(s) hung or crashed elsewhere and were left out (divfuzz saves "
                      "them as findings of their own).");
    }
  }
  absl::StrAppend(&out, "\n</details>\n");
  return out;
}

}  // namespace

absl::StatusOr<FailureSpec> FailureSpecFor(const std::string& signature, exec::Target target_a,
                                           exec::Target target_b, int node, int hang_seconds) {
  const std::vector<std::string> parts = absl::StrSplit(signature, '|');
  if (parts.size() != 4 || (parts[2] != "hang" && parts[2] != "crash")) {
    return absl::InvalidArgumentError(
        absl::StrCat("signature '", signature, "' is not a hang or crash finding's"));
  }
  FailureSpec spec;
  spec.kind = parts[2];
  spec.signature = signature;
  spec.node = node;
  spec.hang_seconds = hang_seconds;
  if (parts[3] == exec::TargetName(target_a)) {
    spec.target = target_a;
  } else if (parts[3] == exec::TargetName(target_b)) {
    spec.target = target_b;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("the finding ", parts[2], "s on '", parts[3], "', which is neither target"));
  }
  return spec;
}

absl::StatusOr<Evaluation> FailureStart(const graph::Program& program, const FailureSpec& spec,
                                        const EvalOptions& options) {
  if (absl::Status s = graph::ValidateProgram(program); !s.ok()) return s;
  if (spec.node < 0 || static_cast<size_t>(spec.node) >= program.nodes.size() ||
      program.nodes[spec.node].results.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("the finding names node ", spec.node,
                                                   ", which the program (", program.nodes.size(),
                                                   " nodes) has no result of"));
  }
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(program);
  if (!types.ok()) return types.status();
  Evaluation e;
  e.types = std::move(*types);
  // The nodes before the failing one returned when the finding was found.
  graph::Program prefix = program;
  prefix.nodes.resize(spec.node);
  prefix.outputs.clear();
  const std::string text = options.on_run ? graph::PrintProgram(prefix) : "";
  if (options.on_run) options.on_run(text);
  e.a = exec::Run(prefix, e.types, spec.target);
  if (options.on_run) options.on_run("");
  e.b = e.a;
  const std::vector<std::string> parts = absl::StrSplit(spec.signature, '|');
  const graph::Node& node = program.nodes[spec.node];
  e.root.cls =
      spec.kind == "hang" ? oracles::DivergenceClass::kHang : oracles::DivergenceClass::kCrash;
  e.root.node_index = spec.node;
  e.root.value = node.results[0];
  e.root.op = node.QualifiedName();
  e.root.dtype = parts.size() == 4 ? parts[1] : "";
  e.root.wrong_side = std::string(exec::TargetName(spec.target));
  e.root.tier = "bug";
  e.root.root = true;
  e.verdict.divergences = {e.root};
  e.found = true;
  e.hits = e.runs = 1;
  return e;
}

absl::StatusOr<ReproFiles> MakeFailureRepro(const graph::Program& program, const FailureSpec& spec,
                                            const ReproOptions& options) {
  absl::StatusOr<Evaluation> start = FailureStart(program, spec, options);
  if (!start.ok()) return start.status();
  ReproFiles files;
  files.reproduced = true;
  files.signature = spec.signature;
  graph::Program final_program = program;
  oracles::Divergence root = start->root;
  if (options.minimize && options.max_seconds > 0 && options.evaluate) {
    ReduceOptions ro = options;
    ro.signature = spec.signature;
    ro.keep_tier = false;
    absl::StatusOr<ReduceResult> r = Reduce(program, ro, std::move(*start));
    if (!r.ok()) return r.status();
    final_program = r->program;
    root = r->evaluation.root;
    files.reduction = std::move(*r);
  }
  if (options.original != nullptr) {
    // Where an earlier process had got to: the numbers count from the
    // finding's own program. A resumed reduction that ran out of budget
    // still has them.
    if (!files.reduction) {
      files.reduction.emplace();
      files.reduction->program = final_program;
      files.reduction->nodes_after = static_cast<int>(final_program.nodes.size());
      files.reduction->elements_after = InputElements(final_program);
      files.reduction->bytes_after = graph::PrintProgram(final_program).size();
      files.reduction->signature = spec.signature;
      files.reduction->tier = "bug";
    }
    files.reduction->nodes_before = static_cast<int>(options.original->nodes.size());
    files.reduction->elements_before = InputElements(*options.original);
    files.reduction->bytes_before = graph::PrintProgram(*options.original).size();
  }
  if (files.reduction) {
    files.reduction->tests += spec.runs_before;
    files.reduction->seconds += spec.seconds_before;
    files.reduction->skipped = spec.hung_or_crashed;
    files.min_dfz = graph::PrintProgram(final_program);
  }
  ReproSpec repro;
  SetReproTargets(options.target_a, options.target_b, &repro);
  repro.node_index = root.node_index;
  repro.failure = spec.kind;
  repro.failure_target = BaseTargetName(std::string(exec::TargetName(spec.target)));
  repro.hang_seconds = spec.hang_seconds;
  repro.title = Title(spec, root);
  repro.seen = options.seen;
  files.repro_py = EmitPython(final_program, repro, options.policy);
  const CppRepro cpp = EmitCpp(final_program, repro, options.policy);
  files.main_cpp = cpp.main_cpp;
  files.cmake_lists = cpp.cmake_lists;
  files.report_md = Report(final_program, spec, root, repro, options,
                           files.reduction ? &*files.reduction : nullptr);
  return files;
}

}  // namespace divfuzz::minimize
