#include "fuzz/repro_queue.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "fuzz/flags.h"
#include "report/report.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {

ReproQueue::ReproQueue(std::string findings, std::string work, int max_seconds)
    : findings_(std::move(findings)), work_(std::move(work)), max_seconds_(max_seconds) {}

void ReproQueue::Poll() {
  if (pid_ > 0) {
    if (waitpid(pid_, nullptr, WNOHANG) == 0) return;
    pid_ = -1;
    done_ += batch_size_;
  }
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
    const std::string cls = e.value("class", "");
    if (id.empty() || !e.value("minimized", "").empty() || cls == "crash" || cls == "hang" ||
        tried_.count(id)) {
      continue;
    }
    pending.push_back(&e);
  }
  if (pending.empty()) return;
  std::stable_sort(pending.begin(), pending.end(), [](const auto* a, const auto* b) {
    return report::SeverityOrder(a->value("severity", "")) <
           report::SeverityOrder(b->value("severity", ""));
  });
  std::vector<std::string> batch;
  for (const nlohmann::json* e : pending) {
    if (batch.size() == kBatch) break;
    batch.push_back(e->value("id", ""));
    tried_.insert(batch.back());
  }
  Start(batch);
}

void ReproQueue::Finish(int seconds) {
  if (pid_ <= 0) return;
  for (int i = 0; i < seconds * 10 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void ReproQueue::Start(const std::vector<std::string>& ids) {
  const std::string log = absl::StrCat(work_, "/logs/repro-", batches_++, ".log");
  std::vector<std::string> args = {
      "divfuzz", "repro", absl::StrCat("--max_seconds=", max_seconds_),
      absl::StrCat("--policy=", absl::GetFlag(FLAGS_policy)),
      absl::StrCat("--tf32=", absl::GetFlag(FLAGS_tf32) ? "true" : "false")};
  for (const std::string& id : ids) args.push_back(absl::StrCat(findings_, "/", id));
  batch_size_ = static_cast<int>(ids.size());
  pid_ = fork();
  if (pid_ != 0) return;
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the campaign, even on kill -9
  FILE* f = std::fopen(log.c_str(), "w");
  if (f != nullptr) {
    dup2(fileno(f), STDOUT_FILENO);
    dup2(fileno(f), STDERR_FILENO);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  _exit(127);
}

}  // namespace divfuzz::fuzz
