#include "minimize/repro.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "exec/target.h"
#include "graph/printer.h"
#include "graph/validate.h"
#include "minimize/emit_cpp.h"
#include "minimize/emit_python.h"
#include "minimize/emit_common.h"
#include "minimize/emit_report.h"
#include "minimize/program_edit.h"
#include "nlohmann/json.hpp"

namespace divfuzz::minimize {
namespace {

// One line: what the oracle concluded about the root.
std::string Seen(const oracles::Divergence& d, const std::string& ta, const std::string& tb) {
  if (d.cls == oracles::DivergenceClass::kNondeterminism) {
    return absl::StrCat("nondeterminism, wrong side ", d.wrong_side, ": ", d.detail);
  }
  std::string s = absl::StrCat(oracles::ClassName(d.cls), ", tier ", d.tier, ", wrong side ",
                               d.wrong_side, ": ", ta, " ", d.value_a, ", ", tb, " ", d.value_b);
  if (d.element >= 0) absl::StrAppend(&s, " (element ", d.element, ")");
  return s;
}

std::string NotReproducedReport(const graph::Program& program, const ReproOptions& o,
                                const ReproSpec& spec, const std::string& note) {
  std::string out = absl::StrCat("# ", spec.title.empty() ? "divfuzz finding" : spec.title,
                                 "\n\n**Did not reproduce on this machine**: ", note, "\n\n");
  if (!o.seen.empty()) absl::StrAppend(&out, "divfuzz saw: ", o.seen, "\n\n");
  absl::StrAppend(&out,
                  "Run `repro.py` (or `repro_cpp/`) where it was found; they exit 1 when the "
                  "divergence reproduces.\n\n## Minimal repro (unreduced)\n\n```python\n",
                  EmitPythonSnippet(program, spec), "```\n\n## Environment (this machine)\n\n");
  for (const auto& [label, value] : CurrentEnvironment().Items()) {
    absl::StrAppend(&out, "- ", label, ": ", value, "\n");
  }
  absl::StrAppend(&out, "\n<details><summary>The program (divfuzz .dfz)</summary>\n\n```\n",
                  graph::PrintProgram(program), "```\n</details>\n");
  return out;
}

// A value as graph::FormatFloat shows it ("2.0", "-inf", "nan"): exact,
// since it is the shortest decimal that reads back to the same double.
bool ParseShownFloat(const std::string& shown, double* v) {
  if (shown == "nan" || shown == "-nan") {
    *v = shown[0] == '-' ? -std::numeric_limits<double>::quiet_NaN()
                         : std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (shown.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(shown.c_str(), &end);
  return end == shown.c_str() + shown.size();
}

absl::Status MakeDirs(const std::string& path) {
  std::string prefix;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    prefix = path.substr(0, i);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      return absl::InternalError(
          absl::StrCat("cannot create ", prefix, ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReproFiles> MakeRepro(const graph::Program& program, const ReproOptions& options) {
  if (absl::Status s = graph::ValidateProgram(program); !s.ok()) return s;
  absl::StatusOr<Evaluation> start = EvaluateStart(program, options);
  if (!start.ok() && start.status().code() != absl::StatusCode::kFailedPrecondition) {
    return start.status();
  }
  const std::string ta(exec::TargetName(options.target_a));
  const std::string tb(exec::TargetName(options.target_b));
  ReproFiles files;
  ReproSpec spec;
  SetReproTargets(options.target_a, options.target_b, &spec);
  const std::string rerun = BaseTargetName(NondeterministicSide(options.signature));
  if (!start.ok() || !start->found) {
    files.note = !start.ok() ? std::string(start.status().message())
                 : !rerun.empty()
                     ? absl::StrCat("no ", options.signature, " in ", kNondeterminismReruns,
                                    " reruns of ", rerun, " here")
                     : absl::StrCat("no root divergence",
                                    options.signature.empty()
                                        ? ""
                                        : absl::StrCat(" with signature ", options.signature),
                                    " on ", ta, " vs ", tb, " here");
    spec.rerun_target = rerun;
    if (RacesAt(program, options.signature)) {
      spec.attempts = kRacingAttempts;
    }
    spec.node_index = options.node_index;
    spec.output_index = options.output_index;
    spec.seen = options.seen;
    spec.title = options.signature.empty() ? "divfuzz finding" : options.signature;
    files.signature = options.signature;
    files.repro_py = EmitPython(program, spec, options.policy);
    const CppRepro cpp = EmitCpp(program, spec, options.policy);
    files.main_cpp = cpp.main_cpp;
    files.cmake_lists = cpp.cmake_lists;
    files.report_md = NotReproducedReport(program, options, spec, files.note);
    return files;
  }
  files.reproduced = true;
  graph::Program final_program = program;
  Evaluation eval = std::move(*start);
  if (options.minimize) {
    ReduceOptions ro = options;
    ro.signature = oracles::Signature(eval.root);
    absl::StatusOr<ReduceResult> r = Reduce(program, ro, eval);
    // Nondeterminism may not show again in the reducer's own reruns: then
    // the repros run the program as given.
    if (!r.ok() && !(r.status().code() == absl::StatusCode::kNotFound &&
                     eval.root.cls == oracles::DivergenceClass::kNondeterminism)) {
      return r.status();
    }
    if (r.ok()) {
      if (options.original != nullptr) {
        r->nodes_before = static_cast<int>(options.original->nodes.size());
        r->elements_before = InputElements(*options.original);
        r->bytes_before = graph::PrintProgram(*options.original).size();
      }
      final_program = r->program;
      eval = r->evaluation;
      files.min_dfz = graph::PrintProgram(final_program);
      files.reduction = std::move(*r);
    }
  }
  const oracles::Divergence& d = eval.root;
  files.signature = oracles::Signature(d);
  if (d.cls == oracles::DivergenceClass::kNondeterminism) spec.rerun_target = BaseTargetName(d.wrong_side);
  spec.attempts = ReproAttempts(final_program, d.node_index);
  spec.node_index = d.node_index;
  spec.output_index = d.output_index;
  spec.title = ReportTitle(d, ta, tb);
  spec.seen = options.seen.empty() ? Seen(d, ta, tb) : options.seen;
  // The exact witness decided the side: the repros judge by it too, so they
  // and report.md name the same side (a float64 run shares the kernels'
  // algorithms: j0, gelu and digamma at extremes were "undecided" there).
  // (A backward kernel's element indexes that kernel's output, not the
  // gradient the repros compare: no exact value for them there.)
  if (d.backward_of >= 0) spec.backward = BackwardLine(d);
  // (Nor for an invariant of a decomposition: its element is the invariant's.)
  if (d.witness == "exact" && d.element >= 0 && d.component < 0 && d.backward_of < 0 &&
      d.invariant < 0) {
    for (const auto& [target, shown] :
         {std::pair{spec.target_a, d.reference_a}, std::pair{spec.target_b, d.reference_b}}) {
      double v = 0;
      if (ParseShownFloat(shown, &v)) spec.exact[target] = v;
    }
    if (!spec.exact.empty()) spec.exact_element = d.element;
  }
  files.repro_py = EmitPython(final_program, spec, options.policy);
  const CppRepro cpp = EmitCpp(final_program, spec, options.policy);
  files.main_cpp = cpp.main_cpp;
  files.cmake_lists = cpp.cmake_lists;
  if (options.ablate) files.ablation = RunAblation(final_program, eval, options);
  ReportInput report = BuildReport(final_program, eval, options, spec);
  report.finding_id = options.finding_id;
  if (files.ablation) report.ablation = RenderAblation(*files.ablation);
  report.reduction = files.reduction ? &*files.reduction : nullptr;
  files.report_md = EmitReport(report);
  return files;
}

absl::Status WriteReproToDir(const std::string& dir, const ReproFiles& files) {
  if (absl::Status s = MakeDirs(dir + "/repro_cpp"); !s.ok()) return s;
  const std::pair<std::string, const std::string*> outputs[] = {
      {"min.dfz", &files.min_dfz},
      {"repro.py", &files.repro_py},
      {"repro_cpp/main.cpp", &files.main_cpp},
      {"repro_cpp/CMakeLists.txt", &files.cmake_lists},
      {"report.md", &files.report_md},
  };
  const std::string ablation = files.ablation ? AblationJson(*files.ablation) : "";
  for (const auto& [name, content] : outputs) {
    if (content->empty()) continue;
    if (absl::Status s = store::WriteFileAtomically(dir + "/" + name, *content); !s.ok()) return s;
  }
  if (!ablation.empty()) return store::WriteFileAtomically(dir + "/ablation.json", ablation);
  return absl::OkStatus();
}

absl::Status WriteReproToStore(store::FindingsStore& store, const std::string& id,
                               const ReproFiles& files) {
  const std::tuple<std::string, const std::string*, std::string> outputs[] = {
      {"min.dfz", &files.min_dfz, "minimized"},
      {"repro.py", &files.repro_py, "repro_py"},
      {"repro_cpp/CMakeLists.txt", &files.cmake_lists, ""},
      {"repro_cpp/main.cpp", &files.main_cpp, "repro_cpp"},
      {"report.md", &files.report_md, "report_md"},
  };
  for (const auto& [name, content, field] : outputs) {
    if (content->empty()) continue;
    if (absl::Status s = store.WriteArtifact(id, name, *content, field); !s.ok()) return s;
  }
  if (files.ablation.has_value()) {
    if (absl::Status s = store.WriteArtifact(id, "ablation.json", AblationJson(*files.ablation),
                                             "ablation");
        !s.ok()) {
      return s;
    }
  }
  // The reducer's numbers, for campaign reports and scripts/verify_repros.py.
  if (files.reduction.has_value()) {
    const ReduceResult& r = *files.reduction;
    const nlohmann::json j = {{"nodes_before", r.nodes_before},
                              {"nodes_after", r.nodes_after},
                              {"elements_before", r.elements_before},
                              {"elements_after", r.elements_after},
                              {"bytes_before", r.bytes_before},
                              {"bytes_after", r.bytes_after},
                              {"tests", r.tests},
                              {"candidates_hung_or_crashed", r.skipped},
                              {"rounds", r.rounds},
                              {"seconds", r.seconds},
                              {"out_of_time", r.out_of_time}};
    return store.WriteArtifact(id, "reduction.json", j.dump(1) + "\n", "reduction");
  }
  return absl::OkStatus();
}

}  // namespace divfuzz::minimize
