// What a campaign keeps in its work folder so that `divfuzz campaign --resume
// DIR` can continue after any stop, kill -9 included:
//   campaign.json  the settings it was started with (written once; its
//                  fields are fuzz/settings.def's)
//   state.json     fuzzing time used, restarts, handled artifacts, quarantine
//                  (rewritten atomically every few seconds)
//   logs/stats-W-G.json  each worker generation's counters (the worker
//                  rewrites its own atomically), summed for the totals
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fuzz/settings.h"
#include "nlohmann/json.hpp"

namespace divfuzz::fuzz {

struct CampaignState {
  double elapsed_seconds = 0;  // fuzzing time used so far, over all runs
  int restarts = 0;
  int generations = 0;  // workers started so far (names their logs and stats)
  int resumes = 0;
  std::set<std::string> handled_artifacts;
  std::set<std::string> quarantine;

  nlohmann::json ToJson() const;
  static CampaignState FromJson(const nlohmann::json& j);
};

// The sum of every worker generation's stats file under work/logs/:
// executions, roots_by_tier, moved_by_rules, quarantined, over_budget,
// one_sided, batches, variant_cases, declined_by_op (nodes not run, per op).
nlohmann::json SumWorkerStats(const std::string& work);

// Executions per worker slot (stats-W-G.json summed over generations G),
// indexed by W.
std::vector<int64_t> ExecutionsPerWorker(const std::string& work, int workers);

// campaign.json, with findings, seeds and policy relative to `work` when they
// lie inside it or beside it (at most one "..": "../findings"), else absolute.
absl::Status SaveConfig(const std::string& work, const CampaignConfig& config);
// Relative paths in campaign.json are resolved against `work` (absolute ones,
// as older versions wrote them, are kept).
absl::StatusOr<CampaignConfig> LoadConfig(const std::string& work);
absl::Status SaveState(const std::string& work, const CampaignState& state);
// A missing state.json reads as a fresh state; a corrupt one is an error.
absl::StatusOr<CampaignState> LoadState(const std::string& work);

// state.json rebuilt from what the work folder still holds, for a campaign
// whose state.json was lost or corrupted: the fuzzing time from the last row
// of stats.csv, worker generations from logs/ (so new workers never overwrite
// an earlier generation's counters), restarts (generations beyond the first
// per slot), crash inputs already in crashes/ as handled, and as quarantine
// the ops of reproduced crash and hang findings in the store.
CampaignState RebuildState(const std::string& work, const CampaignConfig& config);

// A kill can leave stats.csv with a half-written last row: drop it.
void TrimPartialCsvRow(const std::string& path);

}  // namespace divfuzz::fuzz
