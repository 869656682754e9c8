#include "fuzz/harness/phase_clock.h"

#include <time.h>

namespace divfuzz::fuzz {
namespace {

double Now(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

constexpr const char* kNames[] = {
#define DIVFUZZ_PHASE_NAME(name, what) #name,
    DIVFUZZ_PHASES(DIVFUZZ_PHASE_NAME)
#undef DIVFUZZ_PHASE_NAME
};
constexpr const char* kWhat[] = {
#define DIVFUZZ_PHASE_WHAT(name, what) what,
    DIVFUZZ_PHASES(DIVFUZZ_PHASE_WHAT)
#undef DIVFUZZ_PHASE_WHAT
};

}  // namespace

PhaseClock::PhaseClock()
    : wall_mark_(Now(CLOCK_MONOTONIC)), cpu_mark_(Now(CLOCK_THREAD_CPUTIME_ID)) {}

PhaseClock::Phase PhaseClock::Switch(Phase to) {
  const double wall = Now(CLOCK_MONOTONIC), cpu = Now(CLOCK_THREAD_CPUTIME_ID);
  wall_[current_] += wall - wall_mark_;
  cpu_[current_] += cpu - cpu_mark_;
  wall_mark_ = wall;
  cpu_mark_ = cpu;
  const Phase left = current_;
  current_ = to;
  return left;
}

nlohmann::json PhaseClock::Json() {
  Switch(current_);
  nlohmann::json j = nlohmann::json::object();
  for (int p = 0; p < kCount; ++p) j[kNames[p]] = {{"wall", wall_[p]}, {"cpu", cpu_[p]}};
  j["transfers"] = transfers_;
  return j;
}

const char* PhaseClock::Name(int phase) {
  return phase >= 0 && phase < kCount ? kNames[phase] : "?";
}

const char* PhaseClock::What(int phase) {
  return phase >= 0 && phase < kCount ? kWhat[phase] : "?";
}

}  // namespace divfuzz::fuzz
