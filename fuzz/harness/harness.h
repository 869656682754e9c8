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
#include "store/baseline.h"
#include "store/findings_store.h"

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
  // The campaign's skip list (fuzz/campaign/artifact_replay.h WriteSkipList): read again
  // when it changes, so running workers learn what the supervisor
  // quarantined after they started.
  std::string skip_path;
  // Programs whose tensors would need more (see exec/memory_budget.h) are
  // skipped, not run.
  int64_t memory_budget_mb = exec::kDefaultMemoryBudgetMb;
  // A program slower than this many times the running mean earns no verdict
  // counters, so libFuzzer's corpus does not fill with expensive programs
  // (3-minute CPU runs: 619 buckets against 317 without it). 0: off, for a
  // harness built in code (tests); a worker's is --feedback_cost's
  // (settings.def, 3 unless given) through ConfigFromEnvironment.
  double feedback_cost = 0;
  // Value variants (mutators/value_variants.h): a program whose nodes are all
  // pointwise also runs variants 1..variants-1 of its input values, stacked
  // into one batched program. 1: off (a harness built in code); a worker's
  // is --variants'.
  int variants = 1;
  // Reuse the judgement of a root judged before on the same slice and values
  // (oracles/triage_memo.h). The bench turns it off: it repeats one program
  // set, so every root of its later passes would be a repeat.
  bool triage_memo = true;
  // The share of generated programs with a gradient statement, and the rate
  // at which mutation adds them (mutators::GenerateOptions): 0 for a harness
  // built in code; a worker's is --grad_share's.
  double grad_share = 0;
  // On the campaign's MPS server (DIVFUZZ_ON_MPS): a CUDA fault reaches every
  // client, so a worker that meets one records nothing and exits
  // kExitMpsFault; the supervisor replays its input alone.
  bool on_mps = false;
  // OSS-Fuzz mode (--abort_on_bug): a bug-tier root not in `baseline` is
  // recorded, then aborts the process with a message naming its bucket.
  bool abort_on_bug = false;
  store::Baseline baseline;
  oracles::Policy policy = oracles::DefaultPolicy();
  // Where each input is recorded while it runs (fuzz/harness/inflight.h); the
  // campaign sets it per worker. Empty: not recorded.
  std::string inflight_path;
  // The campaign's isolated lane (fuzz/campaign/isolated_lane.h): a program
  // with a node declined for a hang or crash (exec::NodeError::isolable) is
  // queued into `lane_dir` at `isolated_share` (by a hash of its text), for
  // the supervisor to run in a process of its own. Empty or 0: never (a
  // harness built in code; a worker's from DIVFUZZ_LANE_DIR and
  // --isolated_share).
  std::string lane_dir;
  double isolated_share = 0;
  // This process is the lane (`divfuzz isolated`): what it records says so,
  // and a CUDA fault is printed (CUDA_FATAL) for the lane to confirm and file.
  bool isolated = false;
  Runner runner_a;  // empty: exec::Run
  Runner runner_b;
};

// From the campaign's settings that travel in the environment (the `env`
// column of fuzz/settings.def: DIVFUZZ_TARGETS "cpu,cuda", DIVFUZZ_FINDINGS,
// DIVFUZZ_POLICY, DIVFUZZ_TF32, DIVFUZZ_FEEDBACK, DIVFUZZ_FEEDBACK_COST,
// DIVFUZZ_MEMORY_BUDGET_MB; unset ones take the table's defaults), and what
// the campaign gives each worker of its own: DIVFUZZ_STATS, DIVFUZZ_QUARANTINE
// (comma-separated ops not to run), DIVFUZZ_SKIP_INPUTS (a file of InputHash
// values in hex, one a line) and DIVFUZZ_INFLIGHT (the in-flight input record,
// fuzz/harness/inflight.h). Without DIVFUZZ_TARGETS the pair is cpu vs cuda, or cpu
// vs cpu-f64 where CUDA is absent (said once on stderr).
// DIVFUZZ_LANE_DIR: the isolated lane's queue (HarnessConfig::lane_dir).
HarnessConfig ConfigFromEnvironment();

// The isolated lane's queue: the variable naming its folder, its files'
// suffix, and how many may wait there (a worker queues no more beyond it).
inline constexpr char kLaneDirVariable[] = "DIVFUZZ_LANE_DIR";
inline constexpr char kLaneSuffix[] = ".dfz";
inline constexpr size_t kMaxLaneQueue = 64;

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
  // The program, then its value variants (HarnessConfig::variants).
  Outcome RunProgram(const graph::Program& program);
  int TestOneInput(const uint8_t* data, size_t size);
  size_t Mutate(uint8_t* data, size_t size, size_t max_size, unsigned seed);
  size_t CrossOver(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size, uint8_t* out,
                   size_t max_out_size, unsigned seed);
  const HarnessConfig& config() const { return config_; }
  // Programs run on their own, batched runs of variants, and the variants
  // those checked: executions + variant_cases programs were judged.
  struct Counts {
    int64_t executions = 0, batches = 0, variant_cases = 0;
  };
  Counts counts() const;
  // Repeat hits of buckets already in the store are batched: they reach the
  // index's counts every 10 seconds, here, and when the harness is destroyed.
  void FlushHits();

 private:
  // The program alone: run, judged, fed back and recorded.
  Outcome RunOne(const graph::Program& program, const ops::TypeEnv& types);
  // Its variants in one batched run. A new bucket is recorded as the one
  // variant that shows it, run on its own with its own inputs, or as the
  // batched program where that variant alone does not show it.
  void RunVariants(const graph::Program& program, const ops::TypeEnv& types, Outcome& outcome);
  // A program with a node declined for a hang or crash, at the lane's share:
  // written to the lane's queue for the supervisor.
  void QueueForIsolatedLane(const graph::Program& program);
  // RunOne's steps, in the order it takes them.
  struct BothSides {
    exec::RunResult a, b;
    bool costly = false;  // ran past feedback_cost times the mean: no verdict counters
  };
  // Counts and skips a program over the memory budget.
  bool WithinMemoryBudget(const graph::Program& program, const ops::TypeEnv& types);
  // Target A, then B; updates the mean run time and the execution count.
  BothSides RunBothSides(const graph::Program& program, const ops::TypeEnv& types);
  // Compare, triage and the determinism check.
  oracles::Verdict Judge(const graph::Program& program, const ops::TypeEnv& types,
                         const BothSides& run);
  // The root's verdict counters for libFuzzer (class, and size past tolerance).
  void FeedBackRoot(const oracles::Divergence& d);
  // The worker statistics' roots by tier and those moved by policy rules.
  void CountRoot(const oracles::Divergence& d);
  // A repeat hit of a known bucket is batched; a new one is recorded with
  // `text` (the program) and its repro.py. True for a bucket new to the store.
  bool RecordRoot(const graph::Program& program, const oracles::Verdict& verdict,
                  const oracles::Divergence& d, const std::string& text);
  // --abort_on_bug: aborts naming the bucket unless the baseline knows it.
  void AbortOnNewBug(const store::FindingHit& hit, const std::string& id);
  void WriteReproPy(const graph::Program& program, const oracles::Verdict& verdict,
                    const oracles::Divergence& d, const std::string& id);
  // `bad` poisoned its CUDA context: files the crash bucket of the node that
  // faulted (`node` where no node of `bad` did: the oracle's rerun of that
  // node's backward faulted), flushes, and aborts so the supervisor starts a
  // fresh worker.
  [[noreturn]] void RecordCudaFaultAndAbort(const graph::Program& program,
                                            const ops::TypeEnv& types,
                                            const oracles::Verdict& verdict,
                                            const exec::RunResult& bad, const std::string& text,
                                            int node = -1);
  // Every second (and at the first program): counters to the stats file;
  // every 10 s: batched hits to the store.
  void FlushPeriodically();
  void ReloadSkipList();
  // Whether the store has the bucket: this process's view, refreshed from
  // the index when that changed since it was last read.
  bool IsKnown(const std::string& signature);
  void RefreshKnown();

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
