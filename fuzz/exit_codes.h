// The divfuzz tool's exit codes, one meaning each (README "Exit codes").
#pragma once

namespace divfuzz::fuzz {

// Ran, and nothing at or above --fail_on was hit (or no --fail_on).
inline constexpr int kExitClean = 0;
// Ran, and found what the command reports: a bucket at or above --fail_on
// (campaign), a divergence (replay), a repro that does not reproduce (repro).
inline constexpr int kExitFindings = 1;
// Could not run: bad flags or arguments, a malformed program, a work folder or
// findings store that cannot be used, a target this machine cannot run.
inline constexpr int kExitCannotRun = 2;
// Ran, found nothing, but declined to run some node (replay, repro): its inputs
// break a precondition PyTorch does not check and the kernel does not survive
// (exec/index_precheck.h), so nothing was compared there and "agree" would
// mislead. Each such node is printed "declined: <reason>; not run".
inline constexpr int kExitDeclined = 3;

// The exit code of several programs or findings: the worst, in the order
// 0 < 3 (declined) < 1 (findings) < 2 (could not run).
constexpr int WorseExit(int a, int b) {
  auto rank = [](int c) {
    return c == kExitDeclined ? 1 : c == kExitFindings ? 2 : c == 0 ? 0 : 3;
  };
  return rank(b) > rank(a) ? b : a;
}

// A campaign worker that cannot record a finding in the store exits with this
// (after one "divfuzz: cannot record a finding ..." line on stderr); the
// supervisor stops the campaign with that message instead of losing findings.
inline constexpr int kExitWorkerStoreFailed = 86;
// A campaign worker on the campaign's MPS server (fuzz/campaign/mps_server.h) that
// met a CUDA fault exits with this, recording nothing: a fault reaches every
// client of the server, so it may be another worker's. The supervisor keeps
// its input (mps-fault-*), replays it away from the server, and restarts
// the server's clients.
inline constexpr int kExitMpsFault = 87;

}  // namespace divfuzz::fuzz
