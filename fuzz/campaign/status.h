// The campaign's live status line (every few seconds), its stats.csv series
// and the closing summary.
#pragma once

#include <cstdint>
#include <iostream>
#include <string>

#include "nlohmann/json.hpp"
#include "store/baseline.h"

namespace divfuzz::fuzz {

class StatusReporter {
 public:
  // Appends to work/stats.csv (creating it with a header).
  StatusReporter(std::string work, std::string findings);

  // One line on stdout and one row in stats.csv. `checked`: the executions
  // and the value variants they ran (--variants), each a case judged alone.
  void Report(double elapsed, int64_t executions, int64_t checked, int workers_alive,
              int restarts);

 private:
  std::string work_, findings_, csv_path_;
  double last_elapsed_ = -1;
  int64_t last_executions_ = 0, last_checked_ = 0;
};

// The closing summary on `out`: totals, then the root-cause groups, most
// severe first (report/groups.h; also written to work_dir/groups.txt), then
// every bucket. Ends with the buckets that have no minimized repro yet, listed
// one finding folder a line in work_dir/unminimized.txt, and the command that
// writes them. With a `baseline` (--baseline) the buckets say new or known and
// the new ones are counted; `known_bugs`: the lines about the known bugs'
// replays (fuzz/campaign/baseline_replay.h), printed as they are.
void PrintSummary(const std::string& findings_dir, const std::string& work_dir, int64_t executions,
                  double seconds, int restarts, const nlohmann::json& totals,
                  std::ostream& out = std::cout, const store::Baseline* baseline = nullptr,
                  const std::string& known_bugs = "");

}  // namespace divfuzz::fuzz
