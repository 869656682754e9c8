// divfuzz isolated FILE: the campaign's isolated lane runs each program it
// takes from its queue here (fuzz/campaign/isolated_lane.h): in a process of
// its own, outside the MPS server, with the nodes divfuzz declines for a hang
// or crash run anyway. Each node is announced before it runs ("RUN target
// node op", as `divfuzz locate` does), so the lane tells which one hung or
// crashed; a run that ends is judged and recorded like a worker's.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "absl/flags/flag.h"
#include "exec/executor.h"
#include "exec/index_precheck.h"
#include "fuzz/cli/backward_announcer.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/cli/given_flags.h"
#include "fuzz/flags.h"
#include "fuzz/harness/harness.h"
#include "graph/parser.h"
#include "ops/infer.h"
#include "oracles/trigger.h"

namespace divfuzz::fuzz {

int RunIsolated(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::cerr << "divfuzz isolated: expected one program file\n";
    return 2;
  }
  exec::EnterIsolatedLane();
  // A CUDA fault then surfaces in the node that caused it.
  setenv("CUDA_LAUNCH_BLOCKING", "1", /*overwrite=*/0);
  // A program as the lane's queue holds it: one that does not parse is an
  // error here, never a program generated from its bytes.
  absl::StatusOr<graph::Program> parsed = LoadProgramFile(args[0]);
  if (!parsed.ok()) {
    std::cerr << parsed.status().message() << "\n";
    return 2;
  }
  if (absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(*parsed); !types.ok()) {
    std::cerr << args[0] << ": " << types.status().message() << "\n";
    return 2;
  }
  const graph::Program program = *std::move(parsed);
  // The campaign's settings as its workers get them; the flags, where given,
  // win (a run by hand).
  HarnessConfig config = ConfigFromEnvironment();
  if (GivenFlags().count("targets")) {
    absl::StatusOr<std::pair<exec::Target, exec::Target>> pair =
        TargetPairFromFlag(absl::GetFlag(FLAGS_targets));
    if (!pair.ok()) {
      std::cerr << pair.status().message() << "\n";
      return 2;
    }
    config.target_a = pair->first;
    config.target_b = pair->second;
  }
  if (GivenFlags().count("findings")) config.findings_dir = absl::GetFlag(FLAGS_findings);
  // This process is not a worker: no statistics, in-flight record, skip
  // list, variants or queue of its own.
  config.stats_path.clear();
  config.inflight_path.clear();
  config.skip_path.clear();
  config.quarantine.clear();
  config.skip_inputs.clear();
  config.lane_dir.clear();
  config.isolated_share = 0;
  config.variants = 1;
  config.on_mps = false;
  config.isolated = true;
  BackwardAnnouncer announce_backward;  // "BACKWARD" lines inside gradient statements
  const Runner announcing = [&](const graph::Program& p, const ops::TypeEnv& types,
                                exec::Target target) {
    const std::string name(exec::TargetName(target));
    if (target == exec::Target::kCpuScalar) {
      std::printf("RUN %s -1 <program>\n", name.c_str());
      std::fflush(stdout);
    }
    return exec::Run(
        p, types, target,
        [&](int node) {
          std::printf("RUN %s %d %s\n", name.c_str(), node, p.nodes[node].QualifiedName().c_str());
          std::fflush(stdout);
          BackwardAnnouncer::At(name, node);
        },
        [&](int node, const std::vector<at::Tensor>& inputs) {
          const std::string trigger = oracles::TensorsTrigger(inputs);
          if (trigger != "ordinary") {
            std::printf("INPUTS %s %d %s\n", name.c_str(), node, trigger.c_str());
            std::fflush(stdout);
          }
        });
  };
  config.runner_a = announcing;
  // After the second side: the judging (witnesses included) is no kernel
  // under test, and gets a longer allowance from the lane.
  config.runner_b = [&](const graph::Program& p, const ops::TypeEnv& types, exec::Target target) {
    exec::RunResult r = announcing(p, types, target);
    std::printf("JUDGE\n");
    std::fflush(stdout);
    return r;
  };
  {
    Harness harness(std::move(config));  // its destructor flushes repeat hits
    const Outcome outcome = harness.RunProgram(program);
    std::printf("VERDICT %s %d\n", outcome.verdict.Diverged() ? "diverged" : "agree",
                outcome.new_findings);
  }
  std::printf("DONE\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace divfuzz::fuzz
