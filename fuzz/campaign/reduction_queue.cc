#include "fuzz/campaign/reduction_queue.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "fuzz/harness/crash_hang_triage.h"
#include "absl/strings/str_cat.h"
#include "fuzz/flags.h"
#include "fuzz/campaign/spawn.h"
#include "report/report.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {

ReproQueue::ReproQueue(std::string findings, std::string work, int max_seconds, int jobs)
    : findings_(std::move(findings)),
      work_(std::move(work)),
      max_seconds_(max_seconds),
      jobs_(static_cast<size_t>(std::max(1, jobs))) {}

void ReproQueue::Poll() {
  for (auto it = running_.begin(); it != running_.end();) {
    int status = 0;
    if (waitpid(it->pid, &status, WNOHANG) == 0) {
      ++it;
      continue;
    }
    done_ += static_cast<int>(it->ids.size());
    if (WIFSIGNALED(status)) {
      if (it->ids.size() > 1) {
        // The buckets it had not finished go again, each alone.
        for (const std::string& id : it->ids) {
          tried_.erase(id);
          solo_.insert(id);
        }
      } else if (!it->ids.empty()) {
        std::fprintf(stderr,
                     "divfuzz campaign: the reducer crashed or hung (signal %d) on %s; see %s\n",
                     WTERMSIG(status), it->ids[0].c_str(), it->log.c_str());
      }
    }
    it = running_.erase(it);
  }
  if (running_.size() >= jobs_) return;
  // The supervisor polls every 200 ms; reading the whole index that often
  // would be wasted work, new buckets can wait a second.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_scan_ < std::chrono::seconds(1)) return;
  last_scan_ = now;
  auto store = store::FindingsStore::Open(findings_);
  if (!store.ok()) return;
  auto index = (*store)->Load();
  if (!index.ok()) return;
  // The most severe buckets first: bugs get their repros before expected
  // ones. One process takes a batch, so libtorch and CUDA start once for it.
  std::vector<const nlohmann::json*> pending;
  for (const nlohmann::json& e : *index) {
    const std::string id = e.value("id", "");
    if (id.empty() || !e.value("minimized", "").empty() || tried_.count(id)) {
      continue;
    }
    if (ReproWaitsForTheEnd(e, outside_mps_)) {
      tried_.insert(id);
      std::cout << "divfuzz campaign: " << id
                << " hangs on the GPU: its repro waits for the end of the campaign (listed in "
                   "campaign/unminimized.txt), since its reducer would hold back the workers on "
                   "the MPS server\n"
                << std::flush;
      continue;
    }
    pending.push_back(&e);
  }
  if (pending.empty()) return;
  // Hang buckets last all the same: each candidate that still hangs costs a
  // whole --timeout, and the cheap ones should not wait behind them.
  std::stable_sort(pending.begin(), pending.end(), [](const auto* a, const auto* b) {
    const bool hang_a = a->value("class", "") == "hang", hang_b = b->value("class", "") == "hang";
    if (hang_a != hang_b) return hang_b;
    return report::SeverityOrder(a->value("severity", "")) <
           report::SeverityOrder(b->value("severity", ""));
  });
  std::vector<std::string> batch;
  for (const nlohmann::json* e : pending) {
    const std::string id = e->value("id", "");
    // A hang or crash bucket restarts its process for every candidate that
    // still fails: alone, so the batch's others do not wait on it.
    const std::string cls = e->value("class", "");
    if (solo_.count(id) || cls == "crash" || cls == "hang") {
      if (!batch.empty()) continue;
      batch = {id};
      break;
    }
    if (batch.size() == kBatch) break;
    batch.push_back(id);
  }
  for (const std::string& id : batch) tried_.insert(id);
  Start(batch);
}

void ReproQueue::Finish(int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (const Job& job : running_) {
    while (std::chrono::steady_clock::now() < deadline && waitpid(job.pid, nullptr, WNOHANG) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(job.pid, SIGKILL);
    waitpid(job.pid, nullptr, 0);
  }
  running_.clear();
}

void ReproQueue::Start(const std::vector<std::string>& ids) {
  std::string log = absl::StrCat(work_, "/logs/repro-", batches_++, ".log");
  std::vector<std::string> args = {
      "divfuzz", "repro", absl::StrCat("--max_seconds=", max_seconds_),
      // A program a reducer hangs in lands with the workers' artifacts.
      absl::StrCat("--hang_artifacts=", work_, "/crashes"),
      absl::StrCat("--timeout=", absl::GetFlag(FLAGS_timeout)),
      absl::StrCat("--policy=", absl::GetFlag(FLAGS_policy)),
      absl::StrCat("--tf32=", absl::GetFlag(FLAGS_tf32) ? "true" : "false")};
  for (const std::string& id : ids) args.push_back(absl::StrCat(findings_, "/", id));
  SpawnOptions options{{}, log};
  if (outside_mps_) options.unset = {"CUDA_MPS_PIPE_DIRECTORY"};
  const pid_t pid = SpawnSelf(args, options);
  if (pid > 0) running_.push_back({pid, ids, log});
}

}  // namespace divfuzz::fuzz
