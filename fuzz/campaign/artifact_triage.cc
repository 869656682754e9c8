#include "fuzz/campaign/artifact_triage.h"

#include <utility>

namespace divfuzz::fuzz {

ArtifactTriage::ArtifactTriage(ArtifactContext context, std::set<std::string> seen,
                               std::set<std::string> quarantine)
    : context_([&] {
        context.out_of_time = [this] {
          return std::chrono::steady_clock::now().time_since_epoch().count() >= deadline_.load();
        };
        return std::move(context);
      }()),
      seen_(std::move(seen)),
      quarantine_(std::move(quarantine)),
      thread_([this] { Loop(); }) {}

ArtifactTriage::~ArtifactTriage() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ArtifactTriage::Request() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    requested_ = true;
  }
  cv_.notify_all();
}

bool ArtifactTriage::Drain(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto idle = [this] { return !requested_ && !running_; };
  if (wait == std::chrono::milliseconds::max()) {
    cv_.wait(lock, idle);
    return true;
  }
  return cv_.wait_for(lock, wait, idle);
}

void ArtifactTriage::SetDeadline(std::chrono::steady_clock::time_point deadline) {
  deadline_.store(deadline.time_since_epoch().count());
}

uint64_t ArtifactTriage::passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return passes_;
}

std::set<std::string> ArtifactTriage::Seen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_;
}

std::set<std::string> ArtifactTriage::Quarantine() const {
  std::lock_guard<std::mutex> lock(mu_);
  return quarantine_;
}

void ArtifactTriage::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return requested_ || stop_; });
    if (!requested_) return;  // stopping, nothing left to do
    requested_ = false;
    running_ = true;
    std::set<std::string> seen = seen_, quarantine = quarantine_;
    lock.unlock();
    RecordNewArtifacts(context_, &seen, &quarantine);
    lock.lock();
    seen_.insert(seen.begin(), seen.end());
    quarantine_.insert(quarantine.begin(), quarantine.end());
    running_ = false;
    ++passes_;
    cv_.notify_all();
  }
}

}  // namespace divfuzz::fuzz
