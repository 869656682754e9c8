// --baseline's known bugs, checked: each known bug-tier bucket's regression
// program (store/baseline.h: an id file's program, a store baseline's entry's
// "regression" link, min.dfz or program.dfz) is replayed on the bucket's
// target pair; one whose root divergence (op, dtype, class, bug tier) no longer
// shows is "gone" (fixed upstream?). The programs run in `divfuzz replay`
// children, one a target pair (a libtorch start each, not each program);
// a child that crashes or hangs has its unfinished programs replayed one a
// child. Only known bug buckets are replayed, so it is cheap: run at the end
// of a campaign and by `report --baseline`, with a progress line each.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "store/baseline.h"

namespace divfuzz::fuzz {

struct KnownBugCheck {
  std::string id;
  std::string program;  // the regression program replayed
  std::string targets;  // "cpu,cpu-f64"
  std::string outcome;  // "reproduces", "gone" or "not checked"
  std::string why;      // what the replay showed, or why it was not checked
  std::string note;     // the id file's comment (the upstream issue)
};

// Replays every known bug with a program. `current`: the current store's
// entries (they name a bucket's op, dtype, class and targets; else the
// baseline's entry does). `default_targets`: for an id without either.
std::vector<KnownBugCheck> ReplayKnownBugs(const store::Baseline& baseline,
                                           const std::vector<nlohmann::json>& current,
                                           const std::string& default_targets, int timeout_seconds,
                                           const std::string& log_dir, std::ostream& progress);

// work/baseline_check.json: {"baseline": path, "checked": UTC, "bugs": [...]}
// (what `divfuzz report` shows).
absl::Status WriteKnownBugChecks(const std::string& path, const std::string& baseline_path,
                                 const std::vector<KnownBugCheck>& checks);

// One line for the summary: "known bugs replayed: N (R reproduce, G gone, U not checked)"
// and a line per gone bug.
std::string KnownBugChecksText(const std::vector<KnownBugCheck>& checks);

}  // namespace divfuzz::fuzz
