// Turns the inputs that killed a libFuzzer worker (crash-*, timeout-*, oom-*
// files under the campaign's crashes/ folder) into `crash` and `hang`
// findings: each is replayed once in a fresh `divfuzz locate` process, which
// names the node (and target) it died in.
#pragma once

#include <set>
#include <string>

namespace divfuzz::fuzz {

struct ArtifactContext {
  std::string crashes_dir;   // where libFuzzer writes artifacts
  std::string findings_dir;  // the findings store
  std::string targets;       // "cpu,cuda"
  int timeout_seconds = 20;  // a replay running longer is a hang
};

// Handles every artifact not in `seen` (and adds it); returns how many became
// findings. Progress goes to stdout.
// Ops of reproduced hangs and crashes are added to `quarantine`.
int RecordNewArtifacts(const ArtifactContext& context, std::set<std::string>* seen,
                       std::set<std::string>* quarantine);

}  // namespace divfuzz::fuzz
