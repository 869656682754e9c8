// Where a campaign worker's time goes, phase by phase (issue 35: measure in
// the campaign, not only in `divfuzz bench`). Exclusive: a phase entered
// inside another pauses it, and time outside every phase of ours is
// libFuzzer's own (its corpus, coverage, I/O, and the process's start).
// Wall and this thread's CPU time are kept apart: wall minus CPU is time off
// the CPU (a GPU synchronization that yields, MPS's time slice, a lock, the
// disk); a synchronization that spins counts as CPU.
#pragma once

#include <array>
#include <cstddef>

#include <nlohmann/json.hpp>

namespace divfuzz::fuzz {

// Each phase once: its name in the statistics and what it covers.
#define DIVFUZZ_PHASES(X)                                                               \
  X(libfuzzer, "libFuzzer's own: corpus, coverage, its I/O, and the worker's start")    \
  X(mutate, "the custom mutator and cross-over (parse, mutate, print)")                 \
  X(parse, "the input's bytes to a program, and type inference")                       \
  X(run_a, "the first target's run (forward and backward), inputs materialized")       \
  X(run_b, "the second target's run; on CUDA it waits for the device at each snapshot") \
  X(variants, "batched runs of value variants, both targets")                          \
  X(compare, "the oracle's comparison of every node")                                 \
  X(triage, "roots, witnesses (float64, exact, reruns) and the policy's rules")         \
  X(feedback, "libFuzzer's extra counters from the verdict")                           \
  X(store, "the findings store: known signatures, new buckets, repro.py, the lane queue") \
  X(flush, "statistics, hit counts and the skip list, once a second")                  \
  X(release, "freeing both runs' tensors and snapshots")                             \
  X(other, "the harness's own steps between these (memory budget, printing a program)")

class PhaseClock {
 public:
  enum Phase : int {
#define DIVFUZZ_PHASE_ENUM(name, what) k_##name,
    DIVFUZZ_PHASES(DIVFUZZ_PHASE_ENUM)
#undef DIVFUZZ_PHASE_ENUM
        kCount
  };

  PhaseClock();  // in libfuzzer from now

  // Charges the time since the last switch to the current phase and enters
  // `to`; returns the phase left.
  Phase Switch(Phase to);

  // While alive, the clock is in `p`; then back in the phase it was in.
  class Scope {
   public:
    Scope(PhaseClock* clock, Phase p) : clock_(clock), outer_(clock->Switch(p)) {}
    ~Scope() { clock_->Switch(outer_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseClock* clock_;
    Phase outer_;
  };

  // Inputs to a device and snapshots back (exec::RunResult::transfer_seconds),
  // already inside run_a, run_b and variants: shown apart.
  void AddTransfers(double seconds) { transfers_ += seconds; }

  // {"libfuzzer": {"wall": s, "cpu": s}, ..., "transfers": s}, the current
  // phase charged up to now.
  nlohmann::json Json();

  static const char* Name(int phase);
  static const char* What(int phase);

 private:
  Phase current_ = k_libfuzzer;
  double wall_mark_ = 0, cpu_mark_ = 0;
  std::array<double, kCount> wall_{}, cpu_{};
  double transfers_ = 0;
};

}  // namespace divfuzz::fuzz
