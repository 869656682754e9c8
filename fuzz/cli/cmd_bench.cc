// divfuzz bench: where a program's time goes. A fixed, seeded set of
// programs (the --corpus folders' .dfz files and --bench_programs generated
// ones) goes through the steps a campaign worker takes, each timed on its
// own; then through the whole harness (which adds the findings store and its
// bookkeeping); then the same process runs a naive loop (a 6-op chain on a
// fresh 4x4 input, on both targets, compared with allclose) as a baseline, so
// that a figure means something on a noisy machine.
#include <ATen/ops/abs.h>
#include <ATen/ops/acosh.h>
#include <ATen/ops/add.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/logdet.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/sinh.h>
#include <ATen/ops/softmax.h>

#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/flags.h"
#include "fuzz/harness/harness.h"
#include "graph/gradient.h"
#include "graph/materialize.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "mutators/mutator.h"
#include "nlohmann/json.hpp"
#include "ops/infer.h"
#include "oracles/compare.h"
#include "oracles/triage.h"

namespace divfuzz::fuzz {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// The phases, in the order a worker meets them.
constexpr const char* kPhases[] = {"mutate",    "parse",  "infer",   "materialize",
                                   "run_a",     "run_b",  "compare", "triage"};
// Shown apart, already counted in run_a and run_b: moving inputs to each
// target and every node's snapshot back to the host (synchronizing on CUDA).
constexpr const char* kTransfers = "transfers";

struct Totals {
  std::map<std::string, double> seconds;  // per phase
  int64_t programs = 0;                   // went through every phase
  int64_t diverged = 0;
  double harness_seconds = 0;  // the whole harness, store included: first pass
  int64_t harness_programs = 0;
  double repeat_seconds = 0;  // the same set again: every finding already known
  // The harness's second pass: the programs it judged (value variants
  // included) and how many of its programs ran variants.
  int64_t repeat_cases = 0, repeat_batches = 0;
  // Programs with a gradient statement (autograd::grad), counted apart: each
  // runs its backward on both targets and costs several forward programs.
  int64_t gradient_programs = 0;
  double gradient_seconds = 0;  // their share of the timed passes
  double timed_seconds = 0;     // all programs' time in the timed passes
};

bool HasGradient(const std::string& text) {
  absl::StatusOr<graph::Program> p = graph::ParseProgram(text);
  if (!p.ok()) return false;
  for (const graph::Node& n : p->nodes) {
    if (graph::IsGradNode(n)) return true;
  }
  return false;
}

int RemoveOne(const char* path, const struct stat*, int, struct FTW*) {
  ::remove(path);
  return 0;
}

// The programs: the corpus folders' files, then generated ones (seeded, so
// every run of the bench sees the same set).
std::vector<std::string> BenchPrograms(const std::string& corpus, int generated,
                                       int* from_corpus) {
  std::vector<std::string> texts;
  for (absl::string_view dir : absl::StrSplit(corpus, ',', absl::SkipEmpty())) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (auto it = std::filesystem::directory_iterator(std::string(dir), ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      if (it->path().extension() == ".dfz") files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      absl::StatusOr<graph::Program> p = LoadProgramFile(f.string());
      if (p.ok()) texts.push_back(graph::PrintProgram(*p));
    }
  }
  *from_corpus = static_cast<int>(texts.size());
  for (int i = 0; i < generated; ++i) {
    texts.push_back(graph::PrintProgram(mutators::Generate(0xbe4c + static_cast<uint64_t>(i))));
  }
  return texts;
}

// One pass of the steps a worker takes, each timed.
void TimePhases(const std::string& text, uint64_t seed, exec::Target a, exec::Target b,
                const oracles::Policy& policy, Totals& t) {
  auto start = Clock::now();
  absl::StatusOr<graph::Program> parsed = graph::ParseProgram(text);
  if (!parsed.ok()) return;
  // libFuzzer's custom mutator: mutate a parsed program and print it back.
  const std::string mutated = graph::PrintProgram(mutators::Mutate(*parsed, seed));
  t.seconds["mutate"] += Seconds(start);
  (void)mutated;

  start = Clock::now();
  absl::StatusOr<graph::Program> program = graph::ParseProgram(text);
  t.seconds["parse"] += Seconds(start);

  start = Clock::now();
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(*program);
  t.seconds["infer"] += Seconds(start);
  if (!types.ok()) return;

  // The host side of materialization (the values); each run repeats it and
  // adds the copy to its device, which counts in run_a/run_b.
  start = Clock::now();
  for (const graph::Input& in : program->inputs) (void)graph::MaterializePayload(in);
  t.seconds["materialize"] += Seconds(start);

  start = Clock::now();
  const exec::RunResult ra = exec::Run(*program, *types, a);
  t.seconds["run_a"] += Seconds(start);
  start = Clock::now();
  const exec::RunResult rb = exec::Run(*program, *types, b);
  t.seconds["run_b"] += Seconds(start);

  t.seconds[kTransfers] += ra.transfer_seconds + rb.transfer_seconds;

  start = Clock::now();
  oracles::Verdict v = oracles::Compare(*program, *types, ra, rb, policy);
  t.seconds["compare"] += Seconds(start);

  // Attribution, witnesses and the expected-by-policy rules, for the roots.
  start = Clock::now();
  oracles::Triage(*program, *types, ra, rb, policy, v);
  t.seconds["triage"] += Seconds(start);
  ++t.programs;
  t.diverged += v.Diverged();
}

// The baseline: a 6-op chain (matmul, acosh, sinh, softmax, add, logdet) on a
// fresh 4x4 input, run on A and B and compared with allclose, for `seconds`.
double NaiveLoopRate(exec::Target a, exec::Target b, double seconds) {
  auto device_of = [](exec::Target t) {
    return t == exec::Target::kCuda || t == exec::Target::kCudaF64 ? at::Device(at::kCUDA)
                                                                  : at::Device(at::kCPU);
  };
  auto dtype_of = [](exec::Target t) {
    return t == exec::Target::kCpuF64 || t == exec::Target::kCudaF64 ? at::kDouble : at::kFloat;
  };
  auto chain = [](const at::Tensor& x) {
    at::Tensor y = at::matmul(x, x);
    y = at::acosh(at::abs(y).add(1));
    y = at::sinh(y);
    y = at::softmax(y, -1);
    y = at::add(y, x);
    return at::logdet(y).to(at::kCPU).to(at::kFloat);
  };
  int64_t n = 0;
  const auto start = Clock::now();
  while (Seconds(start) < seconds || n == 0) {
    const at::Tensor x = at::randn({4, 4});
    const at::Tensor ya = chain(x.to(device_of(a)).to(dtype_of(a)));
    const at::Tensor yb = chain(x.to(device_of(b)).to(dtype_of(b)));
    (void)at::allclose(ya, yb, 1.3e-6, 1e-5, /*equal_nan=*/true);
    ++n;
  }
  return n / Seconds(start);
}

}  // namespace

int RunBench(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "divfuzz bench: unexpected argument '" << args[0] << "' (it takes flags only)\n";
    return 2;
  }
  const int generated = absl::GetFlag(FLAGS_bench_programs);
  if (generated < 0) {
    std::cerr << "divfuzz bench: expected --bench_programs >= 0, got " << generated << "\n";
    return 2;
  }
  absl::StatusOr<std::pair<exec::Target, exec::Target>> pair =
      TargetPairFromFlag(absl::GetFlag(FLAGS_targets));
  absl::StatusOr<oracles::Policy> policy = PolicyFromFlags();
  for (const absl::Status& s : {pair.status(), policy.status()}) {
    if (!s.ok()) {
      std::cerr << s.message() << "\n";
      return 2;
    }
  }
  if (const int v = absl::GetFlag(FLAGS_variants); v < 1 || v > 1024) {
    std::cerr << "divfuzz bench: expected --variants from 1 to 1024, got " << v << "\n";
    return 2;
  }
  exec::SetDeferredTransfers(absl::GetFlag(FLAGS_deferred_transfers));
  int from_corpus = 0;
  const std::vector<std::string> texts =
      BenchPrograms(absl::GetFlag(FLAGS_corpus), generated, &from_corpus);
  if (texts.empty()) {
    std::cerr << "divfuzz bench: no programs (no .dfz in --corpus="
              << absl::GetFlag(FLAGS_corpus) << " and --bench_programs=0)\n";
    return 2;
  }
  const auto [a, b] = *pair;
  const double budget = std::max(0, absl::GetFlag(FLAGS_seconds));
  std::cerr << "divfuzz bench: " << texts.size() << " programs (" << from_corpus
            << " from --corpus, " << generated << " generated), " << exec::TargetName(a) << " vs "
            << exec::TargetName(b) << "\n";

  // A warm-up pass: libtorch's first calls of each kernel (and CUDA's
  // context) cost far more than any later one.
  Totals warm;
  for (size_t i = 0; i < texts.size() && i < 8; ++i) TimePhases(texts[i], i, a, b, *policy, warm);

  Totals t;
  std::vector<bool> gradient(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    gradient[i] = HasGradient(texts[i]);
    t.gradient_programs += gradient[i] ? 1 : 0;
  }
  const auto start = Clock::now();
  int passes = 0;
  do {
    for (size_t i = 0; i < texts.size(); ++i) {
      const auto one = Clock::now();
      TimePhases(texts[i], passes * texts.size() + i, a, b, *policy, t);
      const double s = Seconds(one);
      t.timed_seconds += s;
      if (gradient[i]) t.gradient_seconds += s;
    }
    ++passes;
    std::cerr << "divfuzz bench: pass " << passes << ", " << t.programs << " programs in "
              << absl::StrFormat("%.1f", Seconds(start)) << " s\n";
  } while (Seconds(start) < budget);

  // The whole harness (store and bookkeeping included) over the same set,
  // twice: the first pass files every new finding (repro.py included), the
  // second meets only known ones, as a campaign mostly does. mkdtemp and nftw
  // rather than std::filesystem: libtorch.so exports its own copy of the
  // std::filesystem symbols, and its remove_all crashes here.
  std::string pattern =
      (std::filesystem::temp_directory_path() / "divfuzz-bench-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::cerr << "divfuzz bench: cannot make a scratch folder for the findings store ("
              << pattern << ")\n";
    return 1;
  }
  const std::string findings = pattern + "/findings";
  {
    HarnessConfig config;
    config.target_a = a;
    config.target_b = b;
    config.findings_dir = findings;
    config.policy = *policy;
    config.variants = absl::GetFlag(FLAGS_variants);
    config.triage_memo = false;  // the second pass repeats the first's programs
    Harness harness(config);
    Harness::Counts before;
    for (double* seconds : {&t.harness_seconds, &t.repeat_seconds}) {
      before = harness.counts();
      const auto h = Clock::now();
      int64_t n = 0;
      for (const std::string& text : texts) {
        absl::StatusOr<graph::Program> p = graph::ParseProgram(text);
        if (!p.ok()) continue;
        harness.RunProgram(*p);
        ++n;
      }
      *seconds = Seconds(h);
      t.harness_programs = n;
    }
    const Harness::Counts after = harness.counts();
    t.repeat_cases = after.executions + after.variant_cases - before.executions -
                     before.variant_cases;
    t.repeat_batches = after.batches - before.batches;
  }
  ::nftw(pattern.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS);

  const double naive_seconds = std::max(1.0, std::min(5.0, budget / 4));
  const double naive = NaiveLoopRate(a, b, naive_seconds);

  double phase_total = 0;
  for (const char* p : kPhases) phase_total += t.seconds[p];
  const double per = t.programs > 0 ? 1e6 / t.programs : 0;
  const double rate = phase_total > 0 ? t.programs / phase_total : 0;
  const double harness_us =
      t.harness_programs > 0 ? 1e6 * t.harness_seconds / t.harness_programs : 0;
  const double repeat_us =
      t.harness_programs > 0 ? 1e6 * t.repeat_seconds / t.harness_programs : 0;
  const double cases_rate = t.repeat_seconds > 0 ? t.repeat_cases / t.repeat_seconds : 0;
  const int variants = absl::GetFlag(FLAGS_variants);
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::json phases = nlohmann::json::object();
    for (const char* p : kPhases) phases[p] = t.seconds[p] * per;
    phases[kTransfers] = t.seconds[kTransfers] * per;
    std::cout << nlohmann::json{{"deferred_transfers", exec::DeferredTransfers()},
                                {"targets", std::string(exec::TargetName(a)) + "," +
                                                std::string(exec::TargetName(b))},
                                {"programs", t.programs},
                                {"from_corpus", from_corpus},
                                {"generated", generated},
                                {"passes", passes},
                                {"diverged", t.diverged},
                                {"us_per_program", phases},
                                {"programs_per_s", rate},
                                {"harness_us_per_program", harness_us},
                                {"harness_repeat_us_per_program", repeat_us},
                                {"variants", variants},
                                {"batched_programs", t.repeat_batches},
                                {"checked_cases_per_s", cases_rate},
                                {"naive_loop_per_s", naive},
                                {"gradient_programs", t.gradient_programs},
                                {"gradient_time_share",
                                 t.timed_seconds > 0 ? t.gradient_seconds / t.timed_seconds : 0},
                                {"naive_over_divfuzz", rate > 0 ? naive / rate : 0}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << absl::StrFormat("divfuzz bench: %d programs x %d pass(es), %s vs %s, %d diverged\n",
                               static_cast<int>(texts.size()), passes,
                               std::string(exec::TargetName(a)),
                               std::string(exec::TargetName(b)), t.diverged);
  std::cout << absl::StrFormat("%-14s %12s %7s\n", "phase", "us/program", "share");
  for (const char* p : kPhases) {
    std::cout << absl::StrFormat("%-14s %12.1f %6.1f%%\n", p, t.seconds[p] * per,
                                 phase_total > 0 ? 100 * t.seconds[p] / phase_total : 0.0);
  }
  std::cout << absl::StrFormat("%-14s %12.1f %6.1f%%   (within run_a and run_b: inputs to the "
                               "target, snapshots back to the host)\n",
                               kTransfers, t.seconds[kTransfers] * per,
                               phase_total > 0 ? 100 * t.seconds[kTransfers] / phase_total : 0.0);
  std::cout << absl::StrFormat("%-14s %12.1f\n", "sum", phase_total * per);
  std::cout << absl::StrFormat(
      "%-14s %12.1f   (the whole harness: the phases without mutate, plus the findings store)\n",
      "harness", harness_us);
  std::cout << absl::StrFormat(
      "%-14s %12.1f   (the same set again: every finding already in the store)\n", "harness_again",
      repeat_us);
  std::cout << absl::StrFormat("programs/s: %.1f (phases), %.1f (harness), %.1f (harness again)\n",
                               rate, harness_us > 0 ? 1e6 / harness_us : 0.0,
                               repeat_us > 0 ? 1e6 / repeat_us : 0.0);
  std::cout << absl::StrFormat(
      "checked cases/s: %.1f (harness again, --variants=%d: %d of %d programs ran variants)\n",
      cases_rate, variants, static_cast<int>(t.repeat_batches),
      static_cast<int>(t.harness_programs));
  std::cout << absl::StrFormat(
      "gradient programs: %d of %d, %.1f%% of the timed passes' time\n",
      static_cast<int>(t.gradient_programs), static_cast<int>(texts.size()),
      t.timed_seconds > 0 ? 100 * t.gradient_seconds / t.timed_seconds : 0.0);
  std::cout << absl::StrFormat(
      "naive loop (6-op chain on a fresh 4x4 input, both targets, allclose): %.0f/s, %.1fx the "
      "phases' rate\n",
      naive, rate > 0 ? naive / rate : 0.0);
  return 0;
}

}  // namespace divfuzz::fuzz
