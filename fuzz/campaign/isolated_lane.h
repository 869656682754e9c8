// The campaign's isolated lane: where a program that divfuzz declines for a
// hang or crash (exec::NodeError::isolable: a NaN into the SVD family, QR,
// lstsq or eig, matrix_exp of an overflowing norm, a polynomial of huge
// degree) runs anyway, instead of never. Workers queue a share of such
// programs (--isolated_share) as files in the lane's folder (atomically, so a
// worker that dies has handed them over for good); this thread runs them one
// at a time, each in a `divfuzz isolated` process of its own, outside the MPS
// server, each node given --isolated_timeout seconds (a hanging kernel never
// holds the shared GPU for minutes, nor more than one at a time). A hang or
// crash there is confirmed once by `divfuzz locate --isolated` with the sides
// swapped (which also tells whether the other side fails too) and recorded as
// a hang or crash finding, bucketed like every other (FailureHit) with its
// repro.py; a run that ends was judged and recorded by the child itself. A
// file is removed once handled: one left by a stopped campaign is run by the
// resumed one.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace divfuzz::fuzz {

struct LaneContext {
  std::string lane_dir;      // the queue: <hash>.dfz files the workers wrote
  std::string findings_dir;  // the findings store
  std::string targets;       // "cpu,cuda"
  int timeout_seconds = 5;   // one node running longer is a hang
  std::string log_dir;       // the children's logs (the last few are kept)
  // CUDA_VISIBLE_DEVICES of each run, in turn (the campaign's GPUs); empty: inherited.
  std::vector<std::string> gpus;
  // The workers' environment (fuzz/settings.h WorkerEnvironment): the
  // children judge with the campaign's settings.
  std::map<std::string, std::string> env;
  // After this many hangs or crashes of one op, its programs are dropped
  // unrun: its bucket is known, and each run would cost the timeout again.
  int give_up_after = 3;
};

struct LaneCounts {
  int64_t run = 0;         // programs run to a verdict, a hang or a crash
  int64_t clean = 0;       // ... that ran to their end (judged by the child)
  int64_t hangs = 0, crashes = 0;
  int64_t unconfirmed = 0;  // hangs and crashes that did not recur (divergence tier)
  int64_t dropped = 0;      // unparsable, or of an op the lane gave up on
  int64_t failed = 0;       // the child could not run (exit 2: its log says why)
};

class IsolatedLane {
 public:
  explicit IsolatedLane(LaneContext context);
  ~IsolatedLane();  // Finish(now)
  IsolatedLane(const IsolatedLane&) = delete;
  IsolatedLane& operator=(const IsolatedLane&) = delete;

  // Runs what is queued until the queue is empty or `deadline` has passed
  // (a run under way then is stopped and its file left queued), then stops.
  void Finish(std::chrono::steady_clock::time_point deadline);
  LaneCounts counts() const;
  // Files waiting in the queue.
  int Queued() const;

 private:
  void Loop();
  void Handle(const std::string& path);
  bool OutOfTime() const;

  LaneContext context_;
  std::atomic<std::chrono::steady_clock::rep> deadline_{
      std::chrono::steady_clock::time_point::max().time_since_epoch().count()};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool finishing_ = false;
  LaneCounts counts_;
  std::map<std::string, int> failures_by_op_;  // hangs and crashes so far
  uint64_t runs_ = 0;                          // for the GPU in turn and the log names
  std::thread thread_;                         // last: starts once the members above exist
};

}  // namespace divfuzz::fuzz
