// The fuzzing loop's body, shared by the graph_fuzzer target and the divfuzz
// tool: bytes -> program -> two targets -> oracle -> findings and counters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "exec/memory_budget.h"
#include "exec/run_result.h"
#include "exec/target.h"
#include "graph/program.h"
#include "ops/infer.h"
#include "oracles/policy.h"
#include "oracles/verdict.h"

namespace divfuzz::fuzz {

// Runs a whole program on a target; exec::Run unless a test swaps in a
// deliberately faulty target.
using Runner =
    std::function<exec::RunResult(const graph::Program&, const ops::TypeEnv&, exec::Target)>;

struct HarnessConfig {
  exec::Target target_a = exec::Target::kCpu;
  exec::Target target_b = exec::Target::kCpuF64;
  std::string findings_dir = "findings";
  std::string stats_path;  // when set, execution counts are written there
  // Ops whose programs are not run: the campaign quarantines an op once it
  // has a reproduced hang finding, so workers stop dying on the same hang.
  std::set<std::string> quarantine;
  // Inputs (InputHash) that already killed a worker: skipped, so a seed or
  // corpus input that kills every new worker cannot stall a campaign.
  std::set<uint64_t> skip_inputs;
  // Programs whose tensors would need more (see exec/memory_budget.h) are
  // skipped, not run.
  int64_t memory_budget_mb = exec::kDefaultMemoryBudgetMb;
  // A program slower than this many times the running mean earns no verdict
  // counters, so libFuzzer's corpus does not fill with expensive programs
  // (3-minute CPU runs: 619 buckets against 317 without it). 0: off.
  double feedback_cost = 0;
  oracles::Policy policy = oracles::DefaultPolicy();
  // Where each input is recorded while it runs (fuzz/inflight.h); the
  // campaign sets it per worker. Empty: not recorded.
  std::string inflight_path;
  Runner runner_a;  // empty: exec::Run
  Runner runner_b;
};

// From DIVFUZZ_TARGETS ("cpu,cuda"), DIVFUZZ_FINDINGS, DIVFUZZ_STATS,
// DIVFUZZ_POLICY (a policy file), DIVFUZZ_TF32=1 (CUDA with TF32) and
// DIVFUZZ_FEEDBACK_COST (see HarnessConfig::feedback_cost),
// DIVFUZZ_QUARANTINE (comma-separated ops not to run), DIVFUZZ_SKIP_INPUTS (a
// file of InputHash values in hex, one a line), DIVFUZZ_MEMORY_BUDGET_MB
// DIVFUZZ_INFLIGHT (the in-flight input record, fuzz/inflight.h)
// and DIVFUZZ_FEEDBACK=0 (no divergence feedback to libFuzzer); the
// default pair is cpu vs cuda, or cpu vs cpu-f64 where CUDA is absent (said
// once on stderr).
HarnessConfig ConfigFromEnvironment();

// A fixed hash of an input's bytes (the same in every process).
uint64_t InputHash(const uint8_t* data, size_t size);

// A program for any bytes: a parse of them when they parse and type-check,
// else a program generated from a hash of them (deterministic).
graph::Program ProgramFromBytes(const uint8_t* data, size_t size, bool* parsed = nullptr);

struct Outcome {
  oracles::Verdict verdict;
  int new_findings = 0;
};

class Harness {
 public:
  explicit Harness(HarnessConfig config);
  ~Harness();
  Outcome RunProgram(const graph::Program& program);
  int TestOneInput(const uint8_t* data, size_t size);
  size_t Mutate(uint8_t* data, size_t size, size_t max_size, unsigned seed);
  size_t CrossOver(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size, uint8_t* out,
                   size_t max_out_size, unsigned seed);
  const HarnessConfig& config() const { return config_; }
  // Repeat hits of buckets already in the store are batched: they reach the
  // index's counts every 2 s, here, and when the harness is destroyed.
  void FlushHits();

 private:
  exec::RunResult RunSide(const graph::Program& program, const ops::TypeEnv& types, int side);
  // Reruns both targets when a root divergence would be stored; a target that
  // disagrees with itself turns it into `nondeterminism`.
  void CheckDeterminism(const graph::Program& program, const ops::TypeEnv& types,
                        const exec::RunResult& ra, const exec::RunResult& rb,
                        oracles::Verdict& verdict);
  struct State;
  HarnessConfig config_;
  std::unique_ptr<State> state_;
};

// The process-wide harness the libFuzzer entry points use.
Harness& GlobalHarness();

}  // namespace divfuzz::fuzz
