// divfuzz replay: rerun programs and show both targets' outputs and the verdict.
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "exec/format.h"
#include "exec/memory_budget.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/exit_codes.h"
#include "fuzz/flags.h"
#include "graph/parser.h"
#include "ops/infer.h"
#include "oracles/compare.h"
#include "oracles/triage.h"

namespace divfuzz::fuzz {

namespace {

void PrintSide(const exec::RunResult& r, size_t node) {
  std::cout << "    " << exec::TargetName(r.target) << ": ";
  if (node >= r.nodes.size()) {
    std::cout << (r.setup_error.empty() ? "not run" : r.setup_error) << "\n";
    return;
  }
  const exec::NodeResult& n = r.nodes[node];
  if (n.error && n.error->declined) {
    std::cout << "declined (not run)\n";
    return;
  }
  if (n.error) {
    std::cout << "error (" << exec::ErrorKindName(n.error->kind) << "): " << n.error->message
              << "\n";
    return;
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    std::cout << (i ? "\n      " : "") << exec::FormatTensor(n.outputs[i]);
  }
  std::cout << "\n";
}

}  // namespace

int RunReplay(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << "divfuzz replay: expected one or more program files (.dfz)\n";
    return 2;
  }
  absl::StatusOr<std::pair<exec::Target, exec::Target>> pair =
      TargetPairFromFlag(absl::GetFlag(FLAGS_targets));
  absl::StatusOr<oracles::Policy> loaded = PolicyFromFlags();
  for (const absl::Status& s : {pair.status(), loaded.status()}) {
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return 2;
    }
  }
  const exec::Target* ta = &pair->first;
  const exec::Target* tb = &pair->second;
  const oracles::Policy& policy = *loaded;
  int worst = kExitClean;
  // A file that cannot be run is reported and skipped: the files after it in
  // a batch still run (a batch of 40 judged programs stopped at one invalid
  // file and lost the verdicts of the rest), and the exit code says 2.
  std::vector<std::string> unusable;
  for (const std::string& path : args) {
    absl::StatusOr<graph::Program> program = LoadProgramFile(path);
    absl::StatusOr<ops::TypeEnv> types =
        program.ok() ? ops::InferProgram(*program, path) : absl::StatusOr<ops::TypeEnv>(program.status());
    absl::Status usable = types.status();
    if (usable.ok()) {
      usable =
          exec::CheckMemoryBudget(*program, *types, absl::GetFlag(FLAGS_memory_budget_mb), path);
    }
    if (!usable.ok()) {
      std::cerr << usable.message() << "\n";
      unusable.push_back(path);
      continue;
    }
    const exec::RunResult a = exec::Run(*program, *types, *ta);
    const exec::RunResult b = exec::Run(*program, *types, *tb);
    oracles::Verdict v = oracles::Compare(*program, *types, a, b, policy);
    oracles::Triage(*program, *types, a, b, policy, v);
    const std::vector<std::pair<size_t, std::string>> declined = DeclinedNodes(a, b);
    std::cout << "== " << path << " (" << v.target_a << " vs " << v.target_b << ")\n";
    for (size_t i = 0, d = 0; i < program->nodes.size(); ++i) {
      const graph::Node& n = program->nodes[i];
      std::cout << "  [" << i << "] %" << absl::StrJoin(n.results, ", %") << " = "
                << n.QualifiedName() << "\n";
      PrintSide(a, i);
      PrintSide(b, i);
      if (d < declined.size() && declined[d].first == i) {
        std::cout << "  " << declined[d++].second << "\n";
      }
    }
    // A declined node was compared nowhere: never "agree" (exit code 3).
    if (!v.Diverged() && !declined.empty()) {
      std::cout << "verdict: declined: " << declined.size() << " node"
                << (declined.size() == 1 ? "" : "s")
                << " not run (inputs the kernel does not survive); the rest agree\n";
      worst = WorseExit(worst, kExitDeclined);
      continue;
    }
    if (!v.Diverged()) {
      std::cout << "verdict: agree\n";
      continue;
    }
    worst = WorseExit(worst, kExitFindings);
    for (const oracles::Divergence& d : v.divergences) {
      std::cout << "verdict: " << oracles::ClassName(d.cls) << " at node " << d.node_index << " (%"
                << d.value << " = " << d.op << ", " << d.dtype << ")"
                << (d.root ? " [root]" : " [downstream]") << ": " << d.detail << "\n";
      if (!d.root) continue;
      std::cout << "  tier: " << d.tier << ", wrong side: " << d.wrong_side
                << (d.expected_rule.empty() ? "" : ", rule: " + d.expected_rule) << "\n"
                << "  witness: " << d.witness << "; trigger: " << d.trigger << "\n"
                << "  reference (" << (d.witness == "none" ? "cpu-f64" : d.witness)
                << ", from each side's inputs"
                << (d.invariant >= 0 ? ", of the same invariant" : "") << "): " << d.reference_a << " / "
                << d.reference_b << "; error in ULPs " << d.ulp_a << " / " << d.ulp_b << "\n"
                << "  why: " << d.reason << "\n";
    }
  }
  if (!unusable.empty()) {
    std::cerr << "divfuzz replay: " << unusable.size() << " of " << args.size()
              << " file(s) could not be run (the messages above); the others ran\n";
    return 2;
  }
  return worst;
}

}  // namespace divfuzz::fuzz
