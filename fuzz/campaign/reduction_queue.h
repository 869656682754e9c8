// Minimizes new buckets and writes their repros while a campaign fuzzes:
// `divfuzz repro` processes (each for a batch of buckets, at most `jobs` at a
// time) beside the workers, so fuzzing never waits for the reducer.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

namespace divfuzz::fuzz {

class ReproQueue {
 public:
  ReproQueue(std::string findings, std::string work, int max_seconds, int jobs = 1);

  // Reaps finished jobs; starts one for the next buckets without a minimized
  // program while fewer than `jobs` run. `divfuzz repro` survives candidates
  // that crash or hang (reducer_supervisor.h); should a job itself die, its
  // batch is retried one bucket per process. Crash and hang buckets (their
  // own programs crash or hang: crash_hang_reduction.h) get a process each.
  void Poll();

  // Waits for the running jobs up to `seconds`, then stops them.
  void Finish(int seconds);

  // Reducers run away from the campaign's MPS server, whose every client a
  // CUDA fault reaches: a crash bucket's reducer runs its failing program
  // again and again, and shrinking shapes reaches empty tensors some CUDA
  // kernels fault on (embedding_renorm of a [3, 0] weight, on the H200). On
  // the H200, 97 worker inputs kept at 17 restarts of the server all ran
  // cleanly alone: the faults came from elsewhere.
  void set_outside_mps(bool v) { outside_mps_ = v; }

  int done() const { return done_; }

 private:
  void Start(const std::vector<std::string>& ids);

  static constexpr size_t kBatch = 8;

  struct Job {
    pid_t pid;
    std::vector<std::string> ids;  // its batch
    std::string log;
  };

  std::string findings_, work_;
  int max_seconds_;
  size_t jobs_;
  std::vector<Job> running_;
  int done_ = 0;  // buckets handed to finished jobs
  int batches_ = 0;
  std::chrono::steady_clock::time_point last_scan_{};
  std::set<std::string> tried_;
  // Buckets of a batch whose process crashed (a candidate program can crash
  // libtorch): each gets a process of its own, so one crash costs one bucket.
  std::set<std::string> solo_;
  bool outside_mps_ = false;
};

}  // namespace divfuzz::fuzz
