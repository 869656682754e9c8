// Minimizes new buckets and writes their repros while a campaign fuzzes: one
// `divfuzz repro` process at a time (for a batch of buckets) beside the
// workers, so fuzzing never waits for the reducer.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

namespace divfuzz::fuzz {

class ReproQueue {
 public:
  ReproQueue(std::string findings, std::string work, int max_seconds);

  // Reaps a finished job; starts one for the next bucket without a minimized
  // program, if none runs. Crash and hang buckets are left alone: they would
  // take the reducer down with them.
  void Poll();

  // Waits for the running job up to `seconds`, then stops it.
  void Finish(int seconds);

  int done() const { return done_; }

 private:
  void Start(const std::vector<std::string>& ids);

  static constexpr size_t kBatch = 8;

  std::string findings_, work_;
  int max_seconds_;
  pid_t pid_ = -1;
  int done_ = 0;        // buckets handed to finished jobs
  int batch_size_ = 0;  // of the running job
  int batches_ = 0;
  std::chrono::steady_clock::time_point last_scan_{};
  std::set<std::string> tried_;
};

}  // namespace divfuzz::fuzz
