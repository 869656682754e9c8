// divfuzz campaign: supervises libFuzzer worker processes for a time budget,
// restarting any that die, and prints a summary of the findings store.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "fuzz/artifacts.h"
#include "fuzz/commands.h"
#include "fuzz/flags.h"
#include "nlohmann/json.hpp"
#include "oracles/policy.h"
#include "store/findings_store.h"

extern "C" int LLVMFuzzerRunDriver(int* argc, char*** argv,
                                   int (*callback)(const uint8_t* data, size_t size));
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json::object();
}

int64_t Get(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : 0;
}

// Starts one worker; its output goes to log_path.
pid_t SpawnWorker(const std::vector<std::string>& args, const std::string& log_path,
                  const std::map<std::string, std::string>& env) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  FILE* log = std::fopen(log_path.c_str(), "a");
  if (log != nullptr) {
    dup2(fileno(log), STDOUT_FILENO);
    dup2(fileno(log), STDERR_FILENO);
  }
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  std::perror("divfuzz: exec of the worker failed");
  _exit(127);
}

int SeverityOrder(const std::string& s) {
  static const std::vector<std::string> order = {
      "crash", "hang", "bug-split", "bug-tolerance", "divergence", "dtype-gap", "expected"};
  auto it = std::find(order.begin(), order.end(), s);
  return static_cast<int>(it - order.begin());
}

void PrintSummary(const std::string& findings_dir, int64_t executions, double seconds, int restarts,
                  const nlohmann::json& totals) {
  absl::StatusOr<std::unique_ptr<store::FindingsStore>> s =
      store::FindingsStore::Open(findings_dir);
  std::vector<nlohmann::json> index;
  if (s.ok()) {
    absl::StatusOr<std::vector<nlohmann::json>> loaded = (*s)->Load();
    if (loaded.ok()) index = *loaded;
  }
  std::map<std::string, int> by_class, by_tier;
  for (const nlohmann::json& e : index) {
    by_class[e.value("class", "?")]++;
    by_tier[e.value("tier", "?")]++;
  }
  std::cout << "\n== divfuzz campaign summary\n";
  std::cout << absl::StrFormat("executions: %d in %.0f s (%.1f/s), worker restarts: %d\n",
                               executions, seconds, seconds > 0 ? executions / seconds : 0.0,
                               restarts);
  std::cout << "buckets: " << index.size() << "\n  by tier: ";
  for (const auto& [tier, n] : by_tier) std::cout << " " << tier << "=" << n;
  std::cout << "\n  by class:";
  for (const auto& [cls, n] : by_class) std::cout << " " << cls << "=" << n;
  std::cout << "\nroot divergence hits by tier:";
  for (const auto& [tier, n] : totals["roots_by_tier"].items())
    std::cout << " " << tier << "=" << n;
  std::cout << "\nhits a side was blamed for that a policy rule explains (moved to expected): "
            << totals.value("moved_by_rules", 0) << "\n";
  std::sort(index.begin(), index.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    const int sa = SeverityOrder(a.value("severity", "")),
              sb = SeverityOrder(b.value("severity", ""));
    return sa != sb ? sa < sb : a.value("count", 0) > b.value("count", 0);
  });
  std::cout << absl::StrFormat("  %-52s %-13s %-10s %-9s %6s\n", "bucket", "severity", "tier",
                               "wrong", "hits");
  for (const nlohmann::json& e : index) {
    std::cout << absl::StrFormat("  %-52s %-13s %-10s %-9s %6d\n", e.value("id", ""),
                                 e.value("severity", ""), e.value("tier", ""),
                                 e.value("wrong_side", ""), e.value("count", 0));
  }
  std::cout << "findings: " << findings_dir << "/index.jsonl\n";
}

// Minimizes new buckets and writes their repros while fuzzing goes on: one
// `divfuzz repro` process at a time, beside the workers.
class ReproQueue {
 public:
  ReproQueue(std::string findings, std::string work, int max_seconds)
      : findings_(std::move(findings)), work_(std::move(work)), max_seconds_(max_seconds) {}

  // Starts a job for the next bucket without a minimized program, if none runs.
  void Poll() {
    if (pid_ > 0) {
      if (waitpid(pid_, nullptr, WNOHANG) == 0) return;
      pid_ = -1;
      ++done_;
    }
    auto store = store::FindingsStore::Open(findings_);
    if (!store.ok()) return;
    auto index = (*store)->Load();
    if (!index.ok()) return;
    for (const nlohmann::json& e : *index) {
      const std::string id = e.value("id", "");
      const std::string cls = e.value("class", "");
      // Crashes and hangs would take the reducer down with them.
      if (id.empty() || !e.value("minimized", "").empty() || cls == "crash" || cls == "hang" ||
          !tried_.insert(id).second) {
        continue;
      }
      Start(id);
      return;
    }
  }

  // Waits for the running job up to `seconds`, then stops it.
  void Finish(int seconds) {
    if (pid_ <= 0) return;
    for (int i = 0; i < seconds * 10 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  int done() const { return done_; }

 private:
  void Start(const std::string& id) {
    const std::string log = absl::StrCat(work_, "/logs/repro-", id, ".log");
    pid_ = fork();
    if (pid_ != 0) return;
    FILE* f = std::fopen(log.c_str(), "w");
    if (f != nullptr) {
      dup2(fileno(f), STDOUT_FILENO);
      dup2(fileno(f), STDERR_FILENO);
    }
    const std::string dir = absl::StrCat(findings_, "/", id);
    const std::string budget = absl::StrCat("--max_seconds=", max_seconds_);
    const std::string policy = absl::StrCat("--policy=", absl::GetFlag(FLAGS_policy));
    const std::string tf32 = absl::StrCat("--tf32=", absl::GetFlag(FLAGS_tf32) ? "true" : "false");
    execl("/proc/self/exe", "divfuzz", "repro", budget.c_str(), policy.c_str(), tf32.c_str(),
          dir.c_str(), nullptr);
    _exit(127);
  }

  std::string findings_, work_;
  int max_seconds_;
  pid_t pid_ = -1;
  int done_ = 0;
  std::set<std::string> tried_;
};

// One status line for the terminal and one row for stats.csv.
class StatusReporter {
 public:
  StatusReporter(std::string work, std::string findings)
      : work_(std::move(work)), findings_(std::move(findings)) {
    csv_path_ = work_ + "/stats.csv";
    if (!fs::exists(csv_path_)) {
      std::ofstream(csv_path_) << "elapsed_s,executions,exec_per_s,corpus,buckets,bug,divergence,"
                                  "expected,dtype_gap\n";
    }
  }

  void Report(double elapsed, int64_t executions) {
    const double rate =
        elapsed > last_elapsed_ ? (executions - last_executions_) / (elapsed - last_elapsed_) : 0;
    last_elapsed_ = elapsed;
    last_executions_ = executions;
    std::error_code ec;
    int64_t corpus = 0;
    for (auto it = fs::directory_iterator(work_ + "/corpus", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      ++corpus;
    }
    std::map<std::string, int> tiers;
    std::string newest, newest_time;
    int buckets = 0;
    if (auto store = store::FindingsStore::Open(findings_); store.ok()) {
      if (auto index = (*store)->Load(); index.ok()) {
        for (const nlohmann::json& e : *index) {
          ++buckets;
          tiers[e.value("tier", "?")]++;
          if (e.value("first_seen", "") >= newest_time) {
            newest_time = e.value("first_seen", "");
            newest = e.value("id", "");
          }
        }
      }
    }
    std::cout << absl::StrFormat(
                     "[%5.0fs] %d execs (%.0f/s), corpus %d, buckets %d (bug %d, divergence %d, "
                     "expected %d, gap %d), last new: %s\n",
                     elapsed, executions, rate, corpus, buckets, tiers["bug"], tiers["divergence"],
                     tiers["expected"], tiers["dtype_gap"], newest.empty() ? "-" : newest)
              << std::flush;
    std::ofstream(csv_path_, std::ios::app) << absl::StrFormat(
        "%.0f,%d,%.1f,%d,%d,%d,%d,%d,%d\n", elapsed, executions, rate, corpus, buckets,
        tiers["bug"], tiers["divergence"], tiers["expected"], tiers["dtype_gap"]);
  }

 private:
  std::string work_, findings_, csv_path_;
  double last_elapsed_ = 0;
  int64_t last_executions_ = 0;
};

}  // namespace

std::string ResolveTargets(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (exec::CudaAvailable()) return "cpu,cuda";
  std::cerr << "divfuzz: CUDA is not available; comparing cpu with the cpu-f64 reference\n";
  return "cpu,cpu-f64";
}

int RunLibFuzzer(int argc, char** argv) {
  return LLVMFuzzerRunDriver(&argc, &argv, LLVMFuzzerTestOneInput);
}

int RunFuzzWorker(int argc, char** argv) {
  // argv[0] is the tool, argv[1] "fuzz": libFuzzer sees the rest.
  int n = argc - 1;
  char** args = argv + 1;
  args[0] = argv[0];
  return LLVMFuzzerRunDriver(&n, &args, LLVMFuzzerTestOneInput);
}

int RunCampaign(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "divfuzz campaign: unexpected argument '" << args[0]
              << "' (it takes flags only)\n";
    return 2;
  }
  const int budget = absl::GetFlag(FLAGS_seconds);
  if (budget <= 0) {
    std::cerr << "divfuzz campaign: --seconds must be positive\n";
    return 2;
  }
  const std::string work = absl::GetFlag(FLAGS_work);
  const std::string findings = absl::GetFlag(FLAGS_findings);
  const std::string targets = ResolveTargets(absl::GetFlag(FLAGS_targets));
  std::error_code ec;
  for (const char* sub : {"corpus", "crashes", "logs"})
    fs::create_directories(fs::path(work) / sub, ec);
  if (ec) {
    std::cerr << "divfuzz campaign: cannot create " << work << ": " << ec.message() << "\n";
    return 2;
  }
  std::vector<std::string> seeds;
  for (absl::string_view part :
       absl::StrSplit(absl::GetFlag(FLAGS_corpus), ',', absl::SkipEmpty())) {
    const std::string dir(part);
    if (fs::is_directory(dir)) {
      seeds.push_back(dir);
    } else {
      std::cerr << "divfuzz campaign: seed corpus folder " << dir << " does not exist; skipped\n";
    }
  }
  if (const std::string p = absl::GetFlag(FLAGS_policy); !p.empty()) {
    if (absl::StatusOr<oracles::Policy> policy = oracles::LoadPolicy(p); !policy.ok()) {
      std::cerr << "divfuzz campaign: " << policy.status().message() << "\n";
      return 2;
    }
  }
  std::cout << "divfuzz campaign: " << budget << " s, targets " << targets << ", findings "
            << findings << "/, work " << work << "/\n";

  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  int64_t executions = 0;
  int restarts = 0;
  std::set<std::string> handled_artifacts, quarantine;
  StatusReporter status_line(work, findings);
  ReproQueue repros(findings, work, absl::GetFlag(FLAGS_repro_seconds));
  const bool minimize_new = absl::GetFlag(FLAGS_repro_seconds) > 0;
  nlohmann::json totals = {{"roots_by_tier", nlohmann::json::object()}, {"moved_by_rules", 0}};
  for (int worker = 0;; ++worker) {
    const int remaining = budget - static_cast<int>(elapsed());
    if (remaining < 1) break;
    const std::string stats = absl::StrCat(work, "/logs/stats-", worker, ".json");
    const std::string log = absl::StrCat(work, "/logs/worker-", worker, ".log");
    std::vector<std::string> argv = {
        "divfuzz",
        "fuzz",
        absl::StrCat("-max_total_time=", remaining),
        "-max_len=65536",
        absl::StrCat("-timeout=", absl::GetFlag(FLAGS_timeout)),
        absl::StrCat("-rss_limit_mb=", absl::GetFlag(FLAGS_rss_limit_mb)),
        absl::StrCat("-artifact_prefix=", work, "/crashes/"),
        "-print_final_stats=1",
        absl::StrCat(work, "/corpus")};
    argv.insert(argv.end(), seeds.begin(), seeds.end());
    const pid_t pid = SpawnWorker(argv, log,
                                  {{"DIVFUZZ_TARGETS", targets},
                                   {"DIVFUZZ_FINDINGS", findings},
                                   {"DIVFUZZ_STATS", stats},
                                   {"DIVFUZZ_POLICY", absl::GetFlag(FLAGS_policy)},
                                   {"DIVFUZZ_TF32", absl::GetFlag(FLAGS_tf32) ? "1" : "0"},
                                   {"DIVFUZZ_QUARANTINE", absl::StrJoin(quarantine, ",")}});
    int status = 0;
    auto last_print = Clock::now();
    while (waitpid(pid, &status, WNOHANG) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (minimize_new) repros.Poll();
      if (Clock::now() - last_print >= std::chrono::seconds(5)) {
        last_print = Clock::now();
        status_line.Report(elapsed(), executions + Get(ReadJson(stats), "executions"));
      }
      if (elapsed() > budget + 30) kill(pid, SIGKILL);  // libFuzzer missed its deadline
    }
    const nlohmann::json final_stats = ReadJson(stats);
    executions += Get(final_stats, "executions");
    totals["moved_by_rules"] =
        totals["moved_by_rules"].get<int64_t>() + Get(final_stats, "moved_by_rules");
    if (final_stats.contains("roots_by_tier") && final_stats["roots_by_tier"].is_object()) {
      for (const auto& [tier, n] : final_stats["roots_by_tier"].items()) {
        totals["roots_by_tier"][tier] = totals["roots_by_tier"].value(tier, 0) + n.get<int64_t>();
      }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
    ++restarts;
    RecordNewArtifacts(
        {absl::StrCat(work, "/crashes"), findings, targets, absl::GetFlag(FLAGS_timeout)},
        &handled_artifacts, &quarantine);
    std::cout << "divfuzz campaign: worker " << worker << " ended with "
              << (WIFSIGNALED(status) ? absl::StrCat("signal ", WTERMSIG(status))
                                      : absl::StrCat("exit code ", WEXITSTATUS(status)))
              << " (log: " << log << "); starting a new one\n";
  }
  repros.Finish(30);
  if (minimize_new)
    std::cout << "divfuzz campaign: buckets minimized with repros: " << repros.done() << "\n";
  PrintSummary(findings, executions, elapsed(), restarts, totals);
  return 0;
}

}  // namespace divfuzz::fuzz
