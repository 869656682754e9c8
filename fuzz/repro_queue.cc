#include "fuzz/repro_queue.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

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
    ++done_;
  }
  auto store = store::FindingsStore::Open(findings_);
  if (!store.ok()) return;
  auto index = (*store)->Load();
  if (!index.ok()) return;
  // The most severe bucket first: bugs get their repros before expected ones.
  const nlohmann::json* next = nullptr;
  for (const nlohmann::json& e : *index) {
    const std::string id = e.value("id", "");
    const std::string cls = e.value("class", "");
    if (id.empty() || !e.value("minimized", "").empty() || cls == "crash" || cls == "hang" ||
        tried_.count(id)) {
      continue;
    }
    if (next == nullptr || report::SeverityOrder(e.value("severity", "")) <
                               report::SeverityOrder(next->value("severity", ""))) {
      next = &e;
    }
  }
  if (next == nullptr) return;
  const std::string id = next->value("id", "");
  tried_.insert(id);
  Start(id);
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

void ReproQueue::Start(const std::string& id) {
  const std::string log = absl::StrCat(work_, "/logs/repro-", id, ".log");
  pid_ = fork();
  if (pid_ != 0) return;
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the campaign, even on kill -9
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

}  // namespace divfuzz::fuzz
