#include "fuzz/campaign/status.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "report/groups.h"
#include "report/report.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> LoadIndex(const std::string& findings) {
  if (auto store = store::FindingsStore::Open(findings); store.ok()) {
    if (auto index = (*store)->Load(); index.ok()) return *index;
  }
  return {};
}

}  // namespace

StatusReporter::StatusReporter(std::string work, std::string findings)
    : work_(std::move(work)), findings_(std::move(findings)) {
  csv_path_ = work_ + "/stats.csv";
  if (!fs::exists(csv_path_)) {
    std::ofstream(csv_path_) << "elapsed_s,executions,exec_per_s,corpus,buckets,bug,divergence,"
                                "expected,dtype_gap,workers,restarts\n";
  }
}

void StatusReporter::Report(double elapsed, int64_t executions, int64_t checked,
                            int workers_alive, int restarts) {
  // The first report after a (re)start has no earlier sample of its own.
  // Never negative: counts only grow (a resumed campaign's new workers never
  // reuse an earlier generation's stats file), but a rate must not say less.
  auto rate_of = [&](int64_t now, int64_t before) {
    return last_elapsed_ >= 0 && elapsed > last_elapsed_
               ? std::max(0.0, (now - before) / (elapsed - last_elapsed_))
               : 0.0;
  };
  const double rate = rate_of(executions, last_executions_);
  const double checked_rate = rate_of(checked, last_checked_);
  last_elapsed_ = elapsed;
  last_executions_ = executions;
  last_checked_ = checked;
  std::error_code ec;
  int64_t corpus = 0;
  for (auto it = fs::directory_iterator(work_ + "/corpus", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    ++corpus;
  }
  std::map<std::string, int> tiers;
  std::string newest, newest_time;
  const std::vector<nlohmann::json> index = LoadIndex(findings_);
  for (const nlohmann::json& e : index) {
    tiers[e.value("tier", "?")]++;
    if (e.value("first_seen", "") >= newest_time) {
      newest_time = e.value("first_seen", "");
      newest = e.value("id", "");
    }
  }
  const int buckets = static_cast<int>(index.size());
  std::cout << absl::StrFormat(
                   "[%5.0fs] %d execs (%.0f/s), checked %d (%.0f/s), %d workers, %d restarts, "
                   "corpus %d, buckets %d (bug %d, divergence %d, expected %d, gap %d), last "
                   "new: %s\n",
                   elapsed, executions, rate, checked, checked_rate, workers_alive, restarts,
                   corpus, buckets,
                   tiers["bug"], tiers["divergence"], tiers["expected"], tiers["dtype_gap"],
                   newest.empty() ? "-" : newest)
            << std::flush;
  std::ofstream(csv_path_, std::ios::app)
      << absl::StrFormat("%.0f,%d,%.1f,%d,%d,%d,%d,%d,%d,%d,%d\n", elapsed, executions, rate,
                         corpus, buckets, tiers["bug"], tiers["divergence"], tiers["expected"],
                         tiers["dtype_gap"], workers_alive, restarts);
}

// Where the workers' time went (fuzz/harness/phase_clock.h), largest first.
static void PrintPhases(const nlohmann::json& phases, int64_t executions, std::ostream& out) {
  std::vector<std::pair<double, std::string>> rows;
  std::map<std::string, double> cpu;
  double total = 0;
  for (const auto& [name, v] : phases.items()) {
    if (!v.is_object()) continue;
    const double wall = v.value("wall", 0.0);
    rows.emplace_back(wall, name);
    cpu[name] = v.value("cpu", 0.0);
    total += wall;
  }
  if (total <= 0) return;
  std::sort(rows.rbegin(), rows.rend());
  out << absl::StrFormat(
      "where the workers' time went: %.0f worker-seconds (off-CPU: waiting on the GPU, MPS's "
      "time slice, a lock or the disk)\n  %-10s %7s %10s %8s\n",
      total, "phase", "share", "us/exec", "off-CPU");
  for (const auto& [wall, name] : rows) {
    out << absl::StrFormat("  %-10s %6.1f%% %10.0f %7.0f%%\n", name, 100.0 * wall / total,
                           executions > 0 ? 1e6 * wall / executions : 0.0,
                           wall > 0 ? 100.0 * std::max(0.0, wall - cpu[name]) / wall : 0.0);
  }
  if (const double t = phases.value("transfers", 0.0); t > 0) {
    out << absl::StrFormat("  (inputs to devices and snapshots back, within run_a, run_b and "
                           "variants: %.1f%%, %.0f us/exec)\n",
                           100.0 * t / total, executions > 0 ? 1e6 * t / executions : 0.0);
  }
}

void PrintSummary(const std::string& findings_dir, const std::string& work_dir, int64_t executions,
                  double seconds, int restarts, const nlohmann::json& totals, std::ostream& out,
                  const store::Baseline* baseline, const std::string& known_bugs) {
  std::vector<nlohmann::json> index = LoadIndex(findings_dir);
  std::map<std::string, int> by_class, by_tier;
  for (const nlohmann::json& e : index) {
    by_class[e.value("class", "?")]++;
    by_tier[e.value("tier", "?")]++;
  }
  out << "\n== divfuzz campaign summary\n";
  out << absl::StrFormat("executions: %d in %.0f s (%.1f/s), worker restarts: %d\n", executions,
                         seconds, seconds > 0 ? executions / seconds : 0.0, restarts);
  // Value variants (--variants): each batched run checks many programs.
  if (const int64_t batches = totals.value("batches", int64_t{0}); batches > 0) {
    const int64_t cases = executions + totals.value("variant_cases", int64_t{0});
    out << absl::StrFormat(
        "checked cases: %d (%.1f/s): the executions and %d value variants in %d batched runs\n",
        cases, seconds > 0 ? cases / seconds : 0.0, cases - executions, batches);
  }
  out << "buckets: " << index.size() << "\n";
  if (baseline != nullptr) {
    // What a CI job gates on: the buckets --baseline does not know.
    std::map<std::string, int> new_by_tier;
    int known = 0;
    for (const nlohmann::json& e : index) {
      if (baseline->Knows(e)) {
        ++known;
      } else {
        new_by_tier[e.value("tier", "?")]++;
      }
    }
    out << "  against --baseline=" << baseline->path << ": " << (index.size() - known) << " new, "
        << known << " known; new by tier:";
    for (const auto& [tier, n] : new_by_tier) out << " " << tier << "=" << n;
    out << "\n";
  }
  out << "  by tier: ";
  for (const auto& [tier, n] : by_tier) out << " " << tier << "=" << n;
  out << "\n  by class:";
  for (const auto& [cls, n] : by_class) out << " " << cls << "=" << n;
  out << "\nroot divergence hits by tier:";
  // A named copy: items() of the temporary value() returns would dangle (the
  // campaign died of SIGSEGV here on GPU hosts).
  const nlohmann::json roots = totals.value("roots_by_tier", nlohmann::json::object());
  for (const auto& [tier, n] : roots.items()) out << " " << tier << "=" << n;
  out << "\nhits a side was blamed for that a policy rule explains (moved to expected): "
      << totals.value("moved_by_rules", 0) << "\nprograms skipped: quarantined ops "
      << totals.value("quarantined", 0) << ", over the memory budget "
      << totals.value("over_budget", 0) << "\n";
  // Nodes declined (exec/index_precheck.h): never run, so never compared.
  const nlohmann::json declined = totals.value("declined_by_op", nlohmann::json::object());
  int64_t declined_total = 0;
  for (const auto& [op, n] : declined.items()) {
    if (n.is_number_integer()) declined_total += n.get<int64_t>();
  }
  out << "nodes declined, not run (inputs the kernel does not survive): " << declined_total;
  if (declined_total > 0) {
    out << ", by op:";
    for (const auto& [op, n] : declined.items()) out << " " << op << "=" << n;
  }
  out << "\n";
  const int64_t one_sided = totals.value("one_sided", int64_t{0});
  out << absl::StrFormat(
      "programs with a pair only some device accepts (dtype gaps, one-sided errors): %d (%.1f%% "
      "of executions)\n",
      one_sided, executions > 0 ? 100.0 * one_sided / executions : 0.0);
  // Gradient statements (graph/gradient.h): how many programs ran one, and
  // the buckets rooted at a backward kernel, by tier.
  const int64_t gradient_programs = totals.value("gradient_programs", int64_t{0});
  std::map<std::string, int> gradient_by_tier;
  for (const nlohmann::json& e : index) {
    const nlohmann::json detail = e.value("detail", nlohmann::json::object());
    const std::string op = e.value("root_op", "");
    if (!detail.value("forward_op", std::string()).empty() || op == "autograd::grad" ||
        op.find("Backward") != std::string::npos) {
      gradient_by_tier[e.value("tier", "?")]++;
    }
  }
  out << absl::StrFormat("programs with a gradient statement: %d (%.1f%% of executions); "
                         "gradient buckets by tier:",
                         gradient_programs,
                         executions > 0 ? 100.0 * gradient_programs / executions : 0.0);
  for (const auto& [tier, n] : gradient_by_tier) out << " " << tier << "=" << n;
  out << "\n";
  // Roots a worker had judged before, on the same slice of a program
  // (oracles/triage_memo.h): their judgement was reused, not rerun.
  const int64_t judged = totals.value("triage_judged", int64_t{0});
  const int64_t reused = totals.value("triage_reused", int64_t{0});
  out << absl::StrFormat("root divergences judged: %d; taken from an identical earlier root "
                         "(same node, same slice of its program): %d (%.1f%%)\n",
                         judged, reused,
                         judged + reused > 0 ? 100.0 * reused / (judged + reused) : 0.0);
  PrintPhases(totals.value("phases", nlohmann::json::object()), executions, out);
  // Root-cause groups first: one mechanism often files many buckets.
  std::vector<report::Bucket> buckets;
  for (const nlohmann::json& e : index) {
    buckets.push_back(report::BucketFromIndex(e));
    report::FindMinimized(findings_dir, e, &buckets.back());
  }
  const std::vector<report::Group> groups = report::GroupBuckets(std::move(buckets));
  const std::string groups_text = report::GroupsText(groups);
  const std::string groups_path = work_dir + "/groups.txt";
  out << "root-cause groups: " << groups.size() << " (most severe first; also in " << groups_path
      << ")\n";
  for (absl::string_view line : absl::StrSplit(groups_text, '\n', absl::SkipEmpty())) {
    out << "  " << line << "\n";
  }
  if (absl::Status s = store::WriteFileAtomically(groups_path, groups_text); !s.ok()) {
    std::cerr << "divfuzz campaign: writing " << groups_path << " failed: " << s.message() << "\n";
  }
  out << "buckets, most severe first:\n";
  std::sort(index.begin(), index.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    const int sa = report::SeverityOrder(a.value("severity", "")),
              sb = report::SeverityOrder(b.value("severity", ""));
    return sa != sb ? sa < sb : a.value("count", 0) > b.value("count", 0);
  });
  out << absl::StrFormat("  %-52s %-13s %-10s %-9s %6s%s\n", "bucket", "severity", "tier", "wrong",
                         "hits", baseline != nullptr ? "  baseline" : "");
  for (const nlohmann::json& e : index) {
    out << absl::StrFormat("  %-52s %-13s %-10s %-9s %6d%s\n", e.value("id", ""),
                           e.value("severity", ""), e.value("tier", ""), e.value("wrong_side", ""),
                           e.value("count", 0),
                           baseline != nullptr ? "  " + baseline->StatusOf(e) : "");
  }
  out << known_bugs;
  // Buckets found as the run ended (or with --repro_seconds=0, or given up by
  // their reducer) have only the fuzzer's program: say how to finish them.
  std::string unminimized;
  int count = 0;
  for (const nlohmann::json& e : index) {
    if (!e.value("minimized", "").empty()) continue;
    absl::StrAppend(&unminimized, findings_dir, "/", e.value("id", ""), "\n");
    ++count;
  }
  const std::string list = work_dir + "/unminimized.txt";
  if (count == 0) {
    std::remove(list.c_str());
  } else if (absl::Status s = store::WriteFileAtomically(list, unminimized); !s.ok()) {
    std::cerr << "divfuzz campaign: writing " << list << " failed: " << s.message() << "\n";
  } else {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    const std::string tool = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "divfuzz";
    out << count << " bucket(s) have no minimized repro yet (listed in " << list
        << ", most severe first); to write them:\n  xargs " << tool << " repro < " << list << "\n";
  }
  out << "findings: " << findings_dir << "/index.jsonl\n";
}

}  // namespace divfuzz::fuzz
