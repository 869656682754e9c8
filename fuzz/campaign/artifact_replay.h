// Turns the inputs that killed a libFuzzer worker (crash-*, timeout-*, oom-*
// files under the campaign's crashes/ folder) into `crash` and `hang`
// findings: each is replayed once in a fresh `divfuzz locate` process, which
// names the node (and target) it died in. A slow-unit-* input becomes a
// finding only when its replay hangs or crashes.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fuzz/campaign/artifact_files.h"  // SaveInflightArtifact, WriteSkipList
#include "fuzz/harness/crash_hang_triage.h"  // kMpsFaultPrefix
#include "graph/program.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {

// A child that announces each node before it runs (`divfuzz locate` and
// `divfuzz isolated`: "RUN target node op", "BACKWARD target node Name",
// "INPUTS target node trigger",
// "CUDA_FATAL target node op", "BATCH n"), run to its end and read back.
struct WatchedRun {
  bool hung = false;        // one node ran past the timeout: killed
  bool crashed = false;     // died from a signal, or from a CUDA fault
  bool cuda_fault = false;  // a device-side assert or illegal access (signal 0)
  int signal = 0;
  int exit_code = -1;       // when it exited on its own
  std::string target;       // the target and node running last
  int node = -1;
  std::string op;
  // The autograd backward node running last inside that node (a gradient
  // statement's "BACKWARD" lines: NativeGroupNormBackward0), "" when none.
  std::string backward;
  std::string input_trigger;  // what the child saw in that node's inputs ("" ordinary)
  bool batched = false;       // it failed in the batched run of the value variants
  bool cut = false;           // stopped because out_of_time() said so: tells nothing
  // The last line was "JUDGE" (`divfuzz isolated`: both sides ran, the
  // verdict is being worked out): what hung or crashed is no kernel under test.
  bool judging = false;
};

// Runs this binary with `args` (stdout and stderr into `log`), `env` set;
// `outside_mps`: without CUDA_MPS_PIPE_DIRECTORY (a CUDA context of its own).
// Process start-up gets 60 s; from the first RUN line on, each node gets
// `timeout_seconds` before the child counts as hung and is killed (after a
// JUDGE line, the judging gets four times that, at least 60 s).
WatchedRun RunAnnouncingNodes(const std::vector<std::string>& args, const std::string& log,
                              bool outside_mps, int timeout_seconds,
                              const std::function<bool()>& out_of_time,
                              const std::map<std::string, std::string>& env = {});

// The repro.py of a new hang or crash bucket `id`: `program` with the failing
// side (`failed_target`, "both" or "") run in a child process, so the script
// itself neither hangs nor dies.
void WriteFailureReproPy(store::FindingsStore& store, const std::string& id,
                         const graph::Program& program, const store::FindingHit& hit,
                         const std::string& targets, int node, const std::string& failed_target,
                         int timeout_seconds);

struct ArtifactContext {
  std::string crashes_dir;   // where libFuzzer writes artifacts
  std::string findings_dir;  // the findings store
  std::string targets;       // "cpu,cuda"
  int timeout_seconds = 20;  // a replay running longer is a hang
  int variants = 1;          // the workers' value variants (fuzz/harness/harness.h): replayed too
  // The workers share an MPS server: replays run away from it, so that one
  // fault neither reaches the workers nor is blamed on another replay.
  bool outside_mps = false;
  // True once the campaign's closing deadline has passed: a replay still
  // running then is stopped, and its artifact (with every one not yet
  // replayed) is left out of `seen` for the next pass, a resumed campaign's,
  // instead of holding the campaign past its budget (a hang's confirmation
  // takes five timeouts). Called from the triage thread.
  std::function<bool()> out_of_time = [] { return false; };
};

// Handles every artifact not in `seen` (and adds it), up to the context's
// deadline; returns how many became findings. Progress goes to stdout.
// Ops of reproduced hangs and crashes are added to `quarantine`.
int RecordNewArtifacts(const ArtifactContext& context, std::set<std::string>* seen,
                       std::set<std::string>* quarantine);


// Killer and slow-unit artifacts in crashes_dir that are not in `seen`.
int UnhandledArtifacts(const std::string& crashes_dir, const std::set<std::string>& seen);


}  // namespace divfuzz::fuzz
