#include "fuzz/harness/harness.h"
#include "fuzz/harness/phase_clock.h"

#include "graph/gradient.h"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "exec/executor.h"
#include "exec/malloc_perturb.h"
#include "exec/memory_budget.h"
#include "fuzz/harness/crash_hang_triage.h"
#include "fuzz/exit_codes.h"
#include "fuzz/harness/feedback.h"
#include "fuzz/harness/inflight.h"
#include "fuzz/settings.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/stable_hash.h"
#include "minimize/emit_python.h"
#include "mutators/mutator.h"
#include "mutators/value_variants.h"
#include "nlohmann/json.hpp"
#include "ops/catalogue.h"
#include "ops/infer.h"
#include "oracles/compare.h"
#include "oracles/expected_rules.h"
#include "oracles/invariants.h"
#include "oracles/nan_rule.h"
#include "oracles/triage.h"
#include "store/findings_store.h"
#include "store/root_cause_group.h"

namespace divfuzz::fuzz {
namespace {

absl::string_view Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? absl::string_view() : absl::string_view(v);
}

// log2(error / allowed) clamped to [0, 40]; non-finite errors get 41.
int SizeBucket(const oracles::Divergence& d) {
  if (!std::isfinite(d.abs_error)) return 41;
  if (!(d.allowed > 0) || d.abs_error <= d.allowed) return 0;
  return std::min(40, static_cast<int>(std::log2(d.abs_error / d.allowed)));
}

}  // namespace

// Whether a node runs an (op, dtype) pair that only some device accepts.
bool UsesOneSidedPair(const graph::Program& program, const ops::TypeEnv& types) {
  for (const graph::Node& n : program.nodes) {
    const ops::OpSpec* spec = ops::FindOp(n.QualifiedName());
    if (spec == nullptr || spec->one_sided_dtypes == 0) continue;
    for (const graph::Argument& a : n.args) {
      if (a.value.kind != graph::Literal::Kind::kValue) continue;
      auto it = types.find(a.value.s);
      if (it != types.end() && ops::Has(spec->one_sided_dtypes, it->second.dtype)) return true;
      break;  // the first tensor decides, as in inference
    }
  }
  return false;
}

struct Harness::State {
  std::unique_ptr<store::FindingsStore> store;
  int64_t executions = 0, parsed = 0, generated = 0, diverged = 0, new_findings = 0;
  std::map<std::string, int64_t> roots_by_tier;  // root divergence hits per tier
  int64_t moved_by_rules = 0;  // roots a side was blamed for that a policy rule explains
  int64_t quarantined = 0;     // programs skipped for a quarantined op
  int64_t over_budget = 0;     // programs skipped for their memory footprint
  int64_t one_sided = 0;       // programs with a pair some device rejects (ops/generic.h)
  int64_t gradient_programs = 0;  // programs with a gradient statement (graph/gradient.h)
  // Roots judged once and reused for later copies (oracles/triage_memo.h).
  oracles::TriageMemo triage_memo;
  // Nodes not run, per op: inputs that break a precondition the kernel does
  // not survive (exec::NodeError::declined); nothing was compared there.
  std::map<std::string, int64_t> declined_by_op;
  // Programs queued for the isolated lane, and those left out because its
  // queue was full (kMaxLaneQueue).
  int64_t isolated_queued = 0, isolated_dropped = 0;
  int64_t batches = 0;         // batched runs of value variants
  int64_t variant_cases = 0;   // the variants those checked (each a program of its own)
  // Signatures already in the store: their repeat hits are counted here and
  // added to the index every few seconds in one rewrite (and before exit),
  // since rewriting it for each hit cost more than running the program. It
  // starts with the store's buckets and learns those of other processes
  // when the index changes (IsKnown): recording a bucket another worker
  // found is a locked read of the whole index, which serialized a
  // campaign's workers once the index grew to megabytes.
  std::set<std::string> known;
  struct stat index_stamp {};  // the index as `known` last read it
  std::map<std::string, int64_t> pending_hits;
  std::unique_ptr<InflightRecord> inflight;
  mutable PhaseClock phases;  // where this worker's time goes

  nlohmann::json Json() const {
    return {{"executions", executions},         {"parsed", parsed},
            {"generated", generated},           {"diverged", diverged},
            {"new_findings", new_findings},     {"roots_by_tier", roots_by_tier},
            {"moved_by_rules", moved_by_rules}, {"quarantined", quarantined},
            {"over_budget", over_budget},       {"one_sided", one_sided},
            {"gradient_programs", gradient_programs},
            {"triage_judged", triage_memo.judged()}, {"triage_reused", triage_memo.reused()},
            {"batches", batches},               {"variant_cases", variant_cases},
            {"declined_by_op", declined_by_op},
            {"isolated_queued", isolated_queued},   {"isolated_dropped", isolated_dropped},
            {"phases", phases.Json()}};
  }
  // Epoch: the first program flushes at once, so a worker that dies early
  // (a crash in its first second) still leaves its counts.
  std::chrono::steady_clock::time_point last_stats, last_hits;
  double mean_seconds = 0;  // running mean of a program's run time (both sides)
  std::filesystem::file_time_type skip_stamp{};  // the skip list as last read
};

// Adds the skip list's input hashes and "op NAME" lines to `c`.
void ReadSkipList(const std::string& path, HarnessConfig* c) {
  if (path.empty()) return;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    uint64_t h = 0;
    if (absl::StartsWith(line, "op ")) {
      c->quarantine.insert(line.substr(3));
    } else if (absl::SimpleHexAtoi(line, &h)) {
      c->skip_inputs.insert(h);
    }
  }
}

HarnessConfig ConfigFromEnvironment() {
  // The campaign's settings as WorkerEnvironment wrote them (settings.def's
  // defaults where a variable is unset: the CLI's, for raw libFuzzer runs too).
  absl::StatusOr<CampaignConfig> settings = ConfigFromWorkerEnvironment();
  if (!settings.ok()) {
    std::cerr << "divfuzz: " << settings.status().message() << "\n";
    std::exit(2);
  }
  HarnessConfig c;
  if (!settings->targets.empty()) {
    absl::StatusOr<std::pair<exec::Target, exec::Target>> pair =
        exec::ParseTargetPair(settings->targets);
    if (!pair.ok()) {
      std::cerr << "divfuzz: DIVFUZZ_TARGETS: " << pair.status().message() << "\n";
      std::exit(2);
    }
    c.target_a = pair->first;
    c.target_b = pair->second;
    for (const exec::Target t : {c.target_a, c.target_b}) {
      if (t == exec::Target::kCuda && !exec::CudaAvailable()) {
        std::cerr << "divfuzz: DIVFUZZ_TARGETS=" << settings->targets
                  << ": target cuda cannot run on this machine (no CUDA device is visible)\n";
        std::exit(kExitCannotRun);
      }
    }
  } else if (exec::CudaAvailable()) {
    c.target_b = exec::Target::kCuda;
  } else {
    std::cerr << "divfuzz: CUDA is not available; comparing cpu with the cpu-f64 reference\n";
  }
  c.findings_dir = settings->findings;
  if (!settings->policy.empty()) {
    absl::StatusOr<oracles::Policy> policy = oracles::LoadPolicy(settings->policy);
    if (!policy.ok()) {
      std::cerr << "divfuzz: " << policy.status().message() << "\n";
      std::exit(2);
    }
    c.policy = *policy;
  }
  c.abort_on_bug = settings->abort_on_bug;
  if (absl::StatusOr<store::Baseline> b = store::LoadBaseline(settings->baseline); b.ok()) {
    c.baseline = *std::move(b);
  } else {
    std::cerr << "divfuzz: DIVFUZZ_BASELINE: " << b.status().message() << "\n";
    std::exit(2);
  }
  c.policy.cuda_tf32 = settings->tf32;
  exec::SetDeferredTransfers(settings->deferred_transfers);
  exec::SetCudaMathMode({c.policy.cuda_tf32, c.policy.cuda_tf32});
  c.stats_path = std::string(Env("DIVFUZZ_STATS"));
  c.inflight_path = std::string(Env("DIVFUZZ_INFLIGHT"));
  for (absl::string_view op : absl::StrSplit(Env("DIVFUZZ_QUARANTINE"), ',', absl::SkipEmpty())) {
    c.quarantine.insert(std::string(op));
  }
  c.skip_path = std::string(Env("DIVFUZZ_SKIP_INPUTS"));
  ReadSkipList(c.skip_path, &c);
  c.feedback_cost = settings->feedback_cost;
  if (c.feedback_cost < 0) {
    std::cerr << "divfuzz: DIVFUZZ_FEEDBACK_COST: expected a factor >= 0, got '"
              << Env("DIVFUZZ_FEEDBACK_COST") << "'\n";
    std::exit(2);
  }
  c.variants = settings->variants;
  c.on_mps = !Env("DIVFUZZ_ON_MPS").empty();
  if (c.variants < 1 || c.variants > 1024) {
    std::cerr << "divfuzz: DIVFUZZ_VARIANTS: expected 1 to 1024 variants, got '"
              << Env("DIVFUZZ_VARIANTS") << "'\n";
    std::exit(2);
  }
  c.grad_share = settings->grad_share;
  if (!(c.grad_share >= 0 && c.grad_share <= 1)) {
    std::cerr << "divfuzz: DIVFUZZ_GRAD_SHARE: expected a share from 0 to 1, got '"
              << Env("DIVFUZZ_GRAD_SHARE") << "'\n";
    std::exit(2);
  }
  c.isolated_share = settings->isolated_share;
  if (!(c.isolated_share >= 0 && c.isolated_share <= 1)) {
    std::cerr << "divfuzz: DIVFUZZ_ISOLATED_SHARE: expected a share from 0 to 1, got '"
              << Env("DIVFUZZ_ISOLATED_SHARE") << "'\n";
    std::exit(2);
  }
  c.lane_dir = std::string(Env(kLaneDirVariable));
  c.memory_budget_mb = settings->memory_budget_mb;
  if (c.memory_budget_mb <= 0) {
    std::cerr << "divfuzz: DIVFUZZ_MEMORY_BUDGET_MB: expected a positive number of MiB, got '"
              << Env("DIVFUZZ_MEMORY_BUDGET_MB") << "'\n";
    std::exit(2);
  }
  // Off: the counters say nothing about the program, so libFuzzer mutates its
  // seeds blindly (the baseline for measuring what feedback buys).
  SetFeedbackEnabled(settings->feedback);
  return c;
}

uint64_t InputHash(const uint8_t* data, size_t size) {
  return graph::Fnv1a64(data, size, graph::kFuzzHashBasis);
}

graph::Program ProgramFromBytes(const uint8_t* data, size_t size, bool* parsed) {
  absl::StatusOr<graph::Program> p =
      graph::ParseProgram(std::string_view(reinterpret_cast<const char*>(data), size), "<input>");
  if (p.ok() && ops::InferProgram(*p).ok()) {
    if (parsed) *parsed = true;
    return *std::move(p);
  }
  if (parsed) *parsed = false;
  return mutators::Generate(InputHash(data, size));
}

Harness::Harness(HarnessConfig config) : config_(std::move(config)), state_(new State) {
  absl::StatusOr<std::unique_ptr<store::FindingsStore>> s =
      store::FindingsStore::Open(config_.findings_dir);
  if (!s.ok()) {
    std::cerr << "divfuzz: cannot open findings store: " << s.status().message() << "\n";
    std::exit(kExitCannotRun);
  }
  state_->store = *std::move(s);
  RefreshKnown();
  state_->last_hits = std::chrono::steady_clock::now();
  if (!config_.inflight_path.empty()) {
    // libFuzzer's -max_len in a campaign is 64 KiB; the file stays sparse.
    absl::StatusOr<std::unique_ptr<InflightRecord>> r =
        InflightRecord::Open(config_.inflight_path, size_t{1} << 20);
    if (!r.ok()) {
      std::cerr << "divfuzz: " << r.status().message() << "\n";
      std::exit(2);
    }
    state_->inflight = *std::move(r);
  }
}

// Every later finding would be lost the same way: stop, so that a campaign
// stops with this message (fuzz/exit_codes.h) instead of fuzzing on blind.
[[noreturn]] static void StoreFailed(const std::string& store, absl::string_view what,
                                     const absl::Status& status) {
  std::cerr << "divfuzz: cannot record a finding in " << store << ": " << what << ": "
            << status.message() << "\n"
            << std::flush;
  std::_Exit(kExitWorkerStoreFailed);
}

Harness::Counts Harness::counts() const {
  return {state_->executions, state_->batches, state_->variant_cases};
}

void Harness::RefreshKnown() {
  struct stat now {};
  if (::stat(state_->store->IndexPath().c_str(), &now) != 0) return;  // no index yet
  const struct stat& last = state_->index_stamp;
  if (now.st_ino == last.st_ino && now.st_size == last.st_size &&
      now.st_mtim.tv_sec == last.st_mtim.tv_sec && now.st_mtim.tv_nsec == last.st_mtim.tv_nsec) {
    return;
  }
  absl::StatusOr<std::set<std::string>> signatures = state_->store->Signatures();
  if (!signatures.ok()) return;  // Record reads it again and reports what is wrong
  state_->known.insert(signatures->begin(), signatures->end());
  state_->index_stamp = now;
}

bool Harness::IsKnown(const std::string& signature) {
  PhaseClock::Scope phase(&state_->phases, PhaseClock::k_store);
  if (state_->known.count(signature)) return true;
  RefreshKnown();
  return state_->known.count(signature) > 0;
}

void Harness::FlushHits() {
  if (state_->pending_hits.empty()) return;
  PhaseClock::Scope phase(&state_->phases, PhaseClock::k_store);
  if (absl::Status s = state_->store->AddHits(state_->pending_hits); !s.ok()) {
    StoreFailed(config_.findings_dir, "adding hits to known buckets failed", s);
  }
  state_->pending_hits.clear();
}

Harness::~Harness() {
  // The counters first: a store that fails here ends the process.
  if (!config_.stats_path.empty()) {
    (void)store::WriteFileAtomically(config_.stats_path, state_->Json().dump());
  }
  FlushHits();
}

Outcome Harness::RunProgram(const graph::Program& program) {
  PhaseClock::Scope other(&state_->phases, PhaseClock::k_other);
  absl::StatusOr<ops::TypeEnv> types = [&] {
    PhaseClock::Scope parse(&state_->phases, PhaseClock::k_parse);
    return ops::InferProgram(program);
  }();
  if (!types.ok()) return Outcome{};
  Outcome outcome = RunOne(program, *types);
  if (config_.variants > 1) RunVariants(program, *types, outcome);
  FlushPeriodically();
  return outcome;
}

// One program, step by step: each step below is one thing RunOne does.
Outcome Harness::RunOne(const graph::Program& program, const ops::TypeEnv& types) {
  Outcome outcome;
  if (!WithinMemoryBudget(program, types)) return outcome;
  BothSides run = RunBothSides(program, types);
  if (UsesOneSidedPair(program, types)) ++state_->one_sided;
  if (graph::HasGradients(program)) ++state_->gradient_programs;
  bool isolable = false;
  for (size_t i = 0; i < run.a.nodes.size() && i < program.nodes.size(); ++i) {
    const std::optional<exec::NodeError>& e = run.a.nodes[i].error;
    if (e && e->declined) ++state_->declined_by_op[program.nodes[i].QualifiedName()];
    isolable = isolable || (e && e->isolable);
  }
  for (const exec::NodeResult& n : run.b.nodes) isolable = isolable || (n.error && n.error->isolable);
  if (isolable) QueueForIsolatedLane(program);
  outcome.verdict = Judge(program, types, run);

  // The signal is the verdict alone (FeedBackRoot): a root divergence's (op,
  // dtype, class) and how far past the tolerance it went. Counters for every op
  // (and dtype and outcome) that merely ran made the corpus swell with long
  // programs collecting combinations: in 3-minute CPU runs beside a blind
  // baseline, per-(op, dtype, outcome) counters found 227 buckets, per-op ones
  // 281, the verdict alone 367-412 (blind: 335-389). One fixed counter says
  // "it ran".
  {
    PhaseClock::Scope phase(&state_->phases, PhaseClock::k_feedback);
    BumpCounter("<ran>", "", "");
  }

  // Printed only for programs that get recorded: most executions agree.
  const std::string text = outcome.verdict.Diverged() || run.a.cuda_fatal || run.b.cuda_fatal
                               ? graph::PrintProgram(program)
                               : "";
  // A poisoned CUDA context makes every result of the run meaningless (the
  // fault may have been launched by an earlier node or, on the campaign's MPS
  // server, by another worker: on the H200 such runs filed 20 error splits
  // "cuda raised: illegal memory access"). Nothing is judged; the crash is
  // recorded and the supervisor starts a fresh worker.
  if (run.a.cuda_fatal || run.b.cuda_fatal) {
    RecordCudaFaultAndAbort(program, types, outcome.verdict, run.a.cuda_fatal ? run.a : run.b,
                            text);
  }
  // A fault while the oracle reran kernels: as above, nothing is judged.
  for (const oracles::Divergence* d : outcome.verdict.Roots()) {
    if (d->cuda_fault_in_triage) {
      RecordCudaFaultAndAbort(program, types, outcome.verdict,
                              run.a.target == exec::Target::kCuda || run.a.target == exec::Target::kCudaF64 ? run.a : run.b,
                              graph::PrintProgram(program), d->node_index);
    }
  }
  for (const oracles::Divergence* d : outcome.verdict.Roots()) {
    if (!run.costly) FeedBackRoot(*d);
    CountRoot(*d);
    if (RecordRoot(program, outcome.verdict, *d, text)) ++outcome.new_findings;
  }
  if (!outcome.verdict.divergences.empty()) ++state_->diverged;
  {
    PhaseClock::Scope phase(&state_->phases, PhaseClock::k_release);
    BothSides gone = std::move(run);
  }
  return outcome;
}

void Harness::QueueForIsolatedLane(const graph::Program& program) {
  if (config_.lane_dir.empty() || !(config_.isolated_share > 0)) return;
  PhaseClock::Scope phase(&state_->phases, PhaseClock::k_store);
  const std::string text = graph::PrintProgram(program);
  // By the text's hash: a program is always or never sampled, and its
  // repeats share one queue file.
  const uint64_t h = graph::Fnv1a64(reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                                    graph::kFuzzHashBasis);
  if (config_.isolated_share < 1 &&
      static_cast<double>(h >> 11) * 0x1.0p-53 >= config_.isolated_share) {
    return;
  }
  const std::string path =
      absl::StrCat(config_.lane_dir, "/", absl::Hex(h, absl::kZeroPad16), kLaneSuffix);
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return;
  size_t queued = 0;
  for (auto it = std::filesystem::directory_iterator(config_.lane_dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    queued += absl::EndsWith(it->path().filename().string(), kLaneSuffix);
  }
  if (queued >= kMaxLaneQueue) {
    ++state_->isolated_dropped;
    return;
  }
  // Atomic: the supervisor never reads half a program, and a worker that
  // dies after this line has handed it over for good.
  if (absl::Status st = store::WriteFileAtomically(path, text); !st.ok()) {
    std::cerr << "divfuzz: queueing a program for the isolated lane failed: " << st.message()
              << "\n";
    return;
  }
  ++state_->isolated_queued;
}

void Harness::RunVariants(const graph::Program& program, const ops::TypeEnv& types,
                          Outcome& outcome) {
  absl::StatusOr<mutators::VariantBatch> batch =
      mutators::BatchVariants(program, types, config_.variants - 1);
  if (!batch.ok() || !exec::CheckMemoryBudget(batch->program, batch->types,
                                              config_.memory_budget_mb).ok()) {
    return;
  }
  BothSides run;
  {
    PhaseClock::Scope phase(&state_->phases, PhaseClock::k_variants);
    run.a = RunSide(batch->program, batch->types, 0);
    run.b = RunSide(batch->program, batch->types, 1);
  }
  state_->phases.AddTransfers(run.a.transfer_seconds + run.b.transfer_seconds);
  ++state_->batches;
  state_->variant_cases += batch->count;
  const oracles::Verdict verdict = Judge(batch->program, batch->types, run);
  std::string text;  // the batched program's, printed only if it is recorded
  if (run.a.cuda_fatal || run.b.cuda_fatal) {  // nothing of the run is judged (RunOne)
    RecordCudaFaultAndAbort(batch->program, batch->types, verdict,
                            run.a.cuda_fatal ? run.a : run.b, graph::PrintProgram(batch->program));
  }
  for (const oracles::Divergence* d : verdict.Roots()) {
    FeedBackRoot(*d);
    CountRoot(*d);
    const std::string signature = oracles::Signature(*d);
    if (IsKnown(signature)) {
      ++state_->pending_hits[signature];
      continue;
    }
    if (const int v = batch->VariantOf(d->value, d->element); v > 0) {
      // A variant has the program's types: only its values differ.
      const Outcome alone = RunOne(mutators::Variant(program, v), types);
      outcome.new_findings += alone.new_findings;
      if (IsKnown(signature)) continue;
    }
    if (text.empty()) text = graph::PrintProgram(batch->program);
    if (RecordRoot(batch->program, verdict, *d, text)) ++outcome.new_findings;
  }
}

bool Harness::WithinMemoryBudget(const graph::Program& program, const ops::TypeEnv& types) {
  if (exec::CheckMemoryBudget(program, types, config_.memory_budget_mb).ok()) return true;
  ++state_->over_budget;
  BumpCounter("<over_budget>", "", "skipped");
  return false;
}

Harness::BothSides Harness::RunBothSides(const graph::Program& program, const ops::TypeEnv& types) {
  const auto start = std::chrono::steady_clock::now();
  BothSides run;
  {
    PhaseClock::Scope phase(&state_->phases, PhaseClock::k_run_a);
    run.a = RunSide(program, types, 0);
  }
  {
    PhaseClock::Scope phase(&state_->phases, PhaseClock::k_run_b);
    run.b = RunSide(program, types, 1);
  }
  state_->phases.AddTransfers(run.a.transfer_seconds + run.b.transfer_seconds);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.costly = config_.feedback_cost > 0 && state_->mean_seconds > 0 &&
               seconds > config_.feedback_cost * state_->mean_seconds;
  state_->mean_seconds =
      state_->mean_seconds == 0 ? seconds : 0.99 * state_->mean_seconds + 0.01 * seconds;
  ++state_->executions;
  return run;
}

oracles::Verdict Harness::Judge(const graph::Program& program, const ops::TypeEnv& types,
                                const BothSides& run) {
  oracles::Verdict verdict = [&] {
    PhaseClock::Scope phase(&state_->phases, PhaseClock::k_compare);
    return oracles::Compare(program, types, run.a, run.b, config_.policy);
  }();
  PhaseClock::Scope phase(&state_->phases, PhaseClock::k_triage);
  oracles::Triage(program, types, run.a, run.b, config_.policy, verdict, nullptr,
                  config_.triage_memo ? &state_->triage_memo : nullptr);
  CheckDeterminism(program, types, run.a, run.b, verdict);
  return verdict;
}

void Harness::FeedBackRoot(const oracles::Divergence& d) {
  PhaseClock::Scope phase(&state_->phases, PhaseClock::k_feedback);
  BumpCounter(d.op, d.dtype, oracles::ClassName(d.cls));
  // How far past the tolerance, on a log scale: libFuzzer keeps an input
  // that makes an op diverge by more than any input before it.
  BumpCounter(d.op, d.dtype, absl::StrCat(oracles::ClassName(d.cls), "|x2^", SizeBucket(d)));
}

void Harness::CountRoot(const oracles::Divergence& d) {
  ++state_->roots_by_tier[d.tier];
  if (d.tier == "expected" && d.wrong_side != "undecided") ++state_->moved_by_rules;
}

bool Harness::RecordRoot(const graph::Program& program, const oracles::Verdict& verdict,
                         const oracles::Divergence& d, const std::string& text) {
  PhaseClock::Scope phase(&state_->phases, PhaseClock::k_store);
  const std::string signature = oracles::Signature(d);
  // Before the store is asked: ClusterFuzz reruns the input and it must abort
  // again, whatever an earlier run recorded.
  if (config_.abort_on_bug && d.tier == "bug") {
    store::FindingHit bug;
    bug.signature = signature;
    bug.root_op = d.op;
    bug.dtype = d.dtype;
    bug.divergence_class = std::string(oracles::ClassName(d.cls));
    bug.wrong_side = d.wrong_side;
    bug.tier = d.tier;
    bug.detail = {{"expected_rule", d.expected_rule}, {"witness", d.witness},
                  {"trigger", d.trigger}};
    AbortOnNewBug(bug, store::FindingsStore::MakeId(bug));
  }
  if (IsKnown(signature)) {
    ++state_->pending_hits[signature];
    return false;
  }
  store::FindingHit hit;
  hit.signature = signature;
  hit.root_op = d.op;
  hit.dtype = d.dtype;
  hit.divergence_class = std::string(oracles::ClassName(d.cls));
  hit.wrong_side = d.wrong_side;
  hit.tier = d.tier;
  hit.severity = std::string(oracles::SeverityName(oracles::SeverityRank(d)));
  hit.targets = absl::StrCat(verdict.target_a, " vs ", verdict.target_b);
  hit.detail = {{"node", d.node_index},
                {"output", d.output_index},
                {"value", d.value},
                {"element", d.element},
                {"a", d.value_a},
                {"b", d.value_b},
                {"abs_error", d.abs_error},
                {"allowed", d.allowed},
                {"summary", d.detail},
                {"reference_a", d.reference_a},
                {"reference_b", d.reference_b},
                {"ulp_a", d.ulp_a},
                {"ulp_b", d.ulp_b},
                {"rel_a", d.rel_a},
                {"rel_b", d.rel_b},
                {"expected_rule", d.expected_rule},
                {"witness", d.witness},
                {"trigger", d.trigger},
                {"reason", d.reason},
                {"backward_of", d.backward_of},
                {"forward_op", d.forward_op}};
  // value a/b and reference_a/b above are of this invariant, not the raw output.
  if (d.invariant >= 0) {
    hit.detail["invariant"] = oracles::InvariantName(ops::FindOp(d.op), d.invariant);
  }
  if (config_.isolated) hit.detail["isolated_lane"] = true;
  absl::StatusOr<store::RecordResult> r = state_->store->Record(hit, text);
  if (!r.ok()) StoreFailed(config_.findings_dir, "recording a new bucket failed", r.status());
  state_->known.insert(signature);
  if (!r->is_new) return false;
  ++state_->new_findings;
  if (d.node_index >= 0) WriteReproPy(program, verdict, d, r->id);
  std::cerr << "divfuzz: NEW finding " << r->id << " [" << d.tier << ", wrong: " << d.wrong_side
            << "]: " << d.detail << "\n";
  return true;
}

void Harness::AbortOnNewBug(const store::FindingHit& hit, const std::string& id) {
  nlohmann::json entry = {{"id", id},           {"root_op", hit.root_op},
                          {"class", hit.divergence_class}, {"tier", hit.tier},
                          {"wrong_side", hit.wrong_side},  {"detail", hit.detail}};
  entry["group"] = store::RootCauseKeyOf(entry).Id();
  if (config_.baseline.Knows(entry)) return;
  // The bucket id is stable across hosts and builds; ClusterFuzz's stack
  // analyzer reads glibc's assertion form into the crash state, so each
  // bucket is a crash of its own there, not one "abort" for all.
  std::cerr << "divfuzz: bug-tier divergence in bucket " << id << " (group "
            << entry["group"].get<std::string>() << ")\n"
            << "divfuzz: " << __FILE__ << ":" << __LINE__
            << ": AbortOnNewBug: Assertion `no bug-tier divergence: " << id << "' failed.\n"
            << std::flush;
  std::abort();
}

void Harness::WriteReproPy(const graph::Program& program, const oracles::Verdict& verdict,
                           const oracles::Divergence& d, const std::string& id) {
  minimize::ReproSpec spec;
  spec.target_a = verdict.target_a;
  spec.target_b = verdict.target_b;
  spec.node_index = d.node_index;
  spec.output_index = d.output_index;
  if (d.cls == oracles::DivergenceClass::kNondeterminism) spec.rerun_target = d.wrong_side;
  spec.attempts = minimize::ReproAttempts(program, d.node_index);
  spec.title = absl::StrCat(d.op, " (", d.dtype, "): ", oracles::ClassName(d.cls), " between ",
                            spec.target_a, " and ", spec.target_b);
  absl::Status s =
      state_->store->WriteArtifact(id, "repro.py", minimize::EmitPython(program, spec, config_.policy), "repro_py");
  if (!s.ok()) std::cerr << "divfuzz: writing repro.py failed: " << s.message() << "\n";
}

void Harness::RecordCudaFaultAndAbort(const graph::Program& program, const ops::TypeEnv& types,
                                      const oracles::Verdict& verdict, const exec::RunResult& bad,
                                      const std::string& text, int node) {
  // The node that faulted names the bucket, as the campaign names the crash
  // artifact this abort leaves: one bucket for both (fuzz/harness/crash_hang_triage.h).
  for (size_t i = 0; i < bad.nodes.size(); ++i) {
    const auto& e = bad.nodes[i].error;
    if (e && e->kind == exec::NodeError::Kind::kCudaFatal) {
      node = static_cast<int>(i);
      break;
    }
  }
  // The isolated lane files it once its confirming replay has localized it
  // (fuzz/campaign/isolated_lane.h): this line names the node, as locate's does.
  if (config_.isolated) {
    std::printf("CUDA_FATAL %s %d %s\n", std::string(exec::TargetName(bad.target)).c_str(), node,
                node >= 0 ? program.nodes[node].QualifiedName().c_str() : "<unknown>");
    std::fflush(stdout);
    std::abort();
  }
  // On the campaign's MPS server this worker may be innocent.
  if (config_.on_mps) {
    FlushHits();
    std::cerr << "divfuzz: CUDA fault on the campaign's MPS server ("
              << (node >= 0 && node < static_cast<int>(bad.nodes.size()) && bad.nodes[node].error
                      ? bad.nodes[node].error->message
                      : std::string(node >= 0 ? "in the oracle's rerun of a backward"
                                              : "node unknown"))
              << "); exiting so the supervisor replays the input alone\n";
    std::_Exit(kExitMpsFault);
  }
  store::FindingHit hit =
      FailureHit(program, &types, node, node >= 0 ? program.nodes[node].QualifiedName() : "",
                 "crash", std::string(exec::TargetName(bad.target)), /*cuda_fault=*/true,
                 // An asynchronous fault surfaces at the next synchronizing node,
                 // not always the one that launched it: only the campaign's
                 // replay with CUDA_LAUNCH_BLOCKING=1 localizes (and files) it.
                 /*reproduced=*/false);
  hit.targets = absl::StrCat(verdict.target_a, " vs ", verdict.target_b);
  (void)state_->store->Record(hit, text);
  FlushHits();
  std::cerr << "divfuzz: CUDA fault; aborting so the supervisor restarts the worker\n";
  std::abort();
}

void Harness::FlushPeriodically() {
  auto now = std::chrono::steady_clock::now();
  if (now - state_->last_stats <= std::chrono::seconds(1)) return;
  PhaseClock::Scope phase(&state_->phases, PhaseClock::k_flush);
  state_->last_stats = now;
  // Each flush rewrites the whole index under the store's lock, which every
  // worker and reducer shares: hits go every 10 s (counts only; a new bucket
  // is recorded at once).
  if (now - state_->last_hits > std::chrono::seconds(10)) {
    state_->last_hits = now;
    FlushHits();
  }
  ReloadSkipList();
  if (!config_.stats_path.empty()) {
    (void)store::WriteFileAtomically(config_.stats_path, state_->Json().dump());
  }
}

void Harness::ReloadSkipList() {
  if (config_.skip_path.empty()) return;
  std::error_code ec;
  const auto stamp = std::filesystem::last_write_time(config_.skip_path, ec);
  if (ec || stamp == state_->skip_stamp) return;
  state_->skip_stamp = stamp;
  ReadSkipList(config_.skip_path, &config_);
}

exec::RunResult Harness::RunSide(const graph::Program& program, const ops::TypeEnv& types,
                                 int side) {
  const Runner& runner = side == 0 ? config_.runner_a : config_.runner_b;
  const exec::Target target = side == 0 ? config_.target_a : config_.target_b;
  return runner ? runner(program, types, target) : exec::Run(program, types, target);
}

void Harness::CheckDeterminism(const graph::Program& program, const ops::TypeEnv& types,
                               const exec::RunResult& ra, const exec::RunResult& rb,
                               oracles::Verdict& verdict) {
  // A bucket already in the store had its first program checked; reruns for
  // its repeat hits would double their cost.
  auto candidate = [&](const oracles::Divergence& d) {
    return d.root && d.node_index >= 0 && d.tier != "expected" && d.tier != "dtype_gap" &&
           !IsKnown(oracles::Signature(d));
  };
  bool needed = false;
  for (const oracles::Divergence& d : verdict.divergences) needed = needed || candidate(d);
  if (!needed) return;
  // The same target twice must agree bit for bit before anyone is blamed. The
  // second run's fresh memory holds a byte pattern (exec/malloc_perturb.h), so
  // a kernel that reads memory it never wrote shows here too.
  exec::RunResult again[2];
  {
    exec::ScopedMallocPerturb perturb(exec::RerunPerturbByte(2));
    again[0] = RunSide(program, types, 0);
    again[1] = RunSide(program, types, 1);
  }
  const exec::RunResult* first[2] = {&ra, &rb};
  for (oracles::Divergence& d : verdict.divergences) {
    if (!candidate(d)) continue;
    for (int side = 0; side < 2; ++side) {
      const auto& n1 = first[side]->nodes;
      const auto& n2 = again[side].nodes;
      if (static_cast<size_t>(d.node_index) >= std::min(n1.size(), n2.size())) continue;
      if (oracles::RerunDifferenceOutsideNanRule(program, d.node_index, *first[side],
                                                 again[side])) {
        oracles::MarkNondeterminism(d, program, d.node_index, first[side]->target,
                                    config_.policy);
        break;
      }
    }
  }
}

int Harness::TestOneInput(const uint8_t* data, size_t size) {
  struct InFlight {
    InflightRecord* record;
    ~InFlight() {
      if (record != nullptr) record->End();
    }
  } in_flight{state_->inflight.get()};
  if (in_flight.record != nullptr) in_flight.record->Begin(data, size);
  if (!config_.skip_inputs.empty() && config_.skip_inputs.count(InputHash(data, size))) {
    ++state_->quarantined;
    BumpCounter("<skipped_input>", "", "quarantined");
    return 0;
  }
  PhaseClock::Scope phase(&state_->phases, PhaseClock::k_parse);
  bool parsed = false;
  graph::Program program = ProgramFromBytes(data, size, &parsed);
  ++(parsed ? state_->parsed : state_->generated);
  for (const graph::Node& n : program.nodes) {
    // A gradient statement is the backward of every op before it, not an
    // op: quarantining it (as a crash located "in autograd::grad" once did,
    // session 35) would end all gradient fuzzing for the campaign.
    if (!graph::IsGradNode(n) && config_.quarantine.count(n.QualifiedName())) {
      ++state_->quarantined;
      BumpCounter(n.QualifiedName(), "", "quarantined");
      return 0;
    }
  }
  RunProgram(program);
  return 0;
}

namespace {

size_t Emit(const graph::Program& p, uint8_t* out, size_t max_size) {
  const std::string text = graph::PrintProgram(p);
  if (text.size() > max_size) return 0;
  std::memcpy(out, text.data(), text.size());
  return text.size();
}

}  // namespace

size_t Harness::Mutate(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  PhaseClock::Scope phase(&state_->phases, PhaseClock::k_mutate);
  const graph::Program program = ProgramFromBytes(data, size);
  mutators::MutateOptions options;
  options.grad_share = config_.grad_share;
  for (unsigned attempt = 0; attempt < 4; ++attempt) {
    if (size_t n = Emit(mutators::Mutate(program, seed + attempt * 7919u, options), data,
                        max_size)) {
      return n;
    }
  }
  mutators::GenerateOptions small;
  small.max_nodes = 2;
  small.grad_share = config_.grad_share;
  if (size_t n = Emit(mutators::Generate(seed, small), data, max_size)) return n;
  return std::min(size, max_size);
}

size_t Harness::CrossOver(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size,
                          uint8_t* out, size_t max_out_size, unsigned seed) {
  PhaseClock::Scope phase(&state_->phases, PhaseClock::k_mutate);
  const graph::Program pa = ProgramFromBytes(a, a_size);
  const graph::Program pb = ProgramFromBytes(b, b_size);
  mutators::MutateOptions options;
  options.grad_share = config_.grad_share;
  return Emit(mutators::CrossOver(pa, pb, seed, options), out, max_out_size);
}

Harness& GlobalHarness() {
  // A static object, so its destructor flushes statistics when libFuzzer exits.
  static Harness harness(ConfigFromEnvironment());
  return harness;
}

}  // namespace divfuzz::fuzz
