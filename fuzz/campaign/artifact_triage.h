// Replays the inputs that killed workers (RecordNewArtifacts) on a thread of
// its own. Confirming one hang takes minutes (a replay, one at four times the
// timeout, one in the other order); done inline it held the supervisor, so
// dead workers stayed dead and no progress was printed (on an H200, 2 hangs
// stalled a 10-minute campaign for 400 s).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "fuzz/campaign/artifact_replay.h"

namespace divfuzz::fuzz {

class ArtifactTriage {
 public:
  // `seen` and `quarantine`: what an earlier run of the campaign handled.
  ArtifactTriage(ArtifactContext context, std::set<std::string> seen,
                 std::set<std::string> quarantine);
  ~ArtifactTriage();  // finishes the pass under way and what was requested
  ArtifactTriage(const ArtifactTriage&) = delete;
  ArtifactTriage& operator=(const ArtifactTriage&) = delete;

  // New artifacts may be in crashes_dir: triage them in the next pass.
  void Request();
  // Blocks until every requested pass has ended, or `wait` has passed;
  // true when they have.
  bool Drain(std::chrono::milliseconds wait = std::chrono::milliseconds::max());
  // Replays stop at `deadline`, the pass under way's too
  // (ArtifactContext::out_of_time).
  void SetDeadline(std::chrono::steady_clock::time_point deadline);
  // Passes ended so far: when it changes, Seen() and Quarantine() have grown.
  uint64_t passes() const;
  std::set<std::string> Seen() const;
  std::set<std::string> Quarantine() const;

 private:
  void Loop();

  std::atomic<std::chrono::steady_clock::rep> deadline_{
      std::chrono::steady_clock::time_point::max().time_since_epoch().count()};
  ArtifactContext context_;  // its out_of_time reads deadline_
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> seen_, quarantine_;
  bool requested_ = false, running_ = false, stop_ = false;
  uint64_t passes_ = 0;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace divfuzz::fuzz
