// What a campaign keeps in its work folder so that `divfuzz campaign --resume
// DIR` can continue after any stop, kill -9 included:
//   campaign.json  the settings it was started with (written once)
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
#include "fuzz/feedback.h"
#include "nlohmann/json.hpp"

namespace divfuzz::fuzz {

struct CampaignConfig {
  std::string targets;   // "cpu,cuda"
  std::string findings;  // absolute path of the findings store
  std::vector<std::string> seeds;
  int budget_seconds = 60;
  int workers = 1;                // in all (per GPU times GPUs, or CPU workers)
  std::vector<std::string> gpus;  // CUDA_VISIBLE_DEVICES value per worker slot; empty: none
  int timeout = 20;
  int rss_limit_mb = 8192;
  int64_t memory_budget_mb = 0;
  std::string policy;
  bool tf32 = false;
  bool feedback = true;
  double feedback_cost = kDefaultFeedbackCost;  // see --feedback_cost
  int repro_seconds = 30;
  int64_t seed = 0;  // libFuzzer -seed base; 0: libFuzzer picks
  std::string plugins;
  std::string started;  // UTC, ISO 8601

  nlohmann::json ToJson() const;
  // `where` names the file in errors.
  static absl::StatusOr<CampaignConfig> FromJson(const nlohmann::json& j, const std::string& where);
};

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
// executions, roots_by_tier, moved_by_rules, quarantined, over_budget.
nlohmann::json SumWorkerStats(const std::string& work);

// Executions per worker slot (stats-W-G.json summed over generations G),
// indexed by W.
std::vector<int64_t> ExecutionsPerWorker(const std::string& work, int workers);

absl::Status SaveConfig(const std::string& work, const CampaignConfig& config);
absl::StatusOr<CampaignConfig> LoadConfig(const std::string& work);
absl::Status SaveState(const std::string& work, const CampaignState& state);
// A missing state.json is a fresh state; a corrupt one is an error.
absl::StatusOr<CampaignState> LoadState(const std::string& work);

// A kill can leave stats.csv with a half-written last row: drop it.
void TrimPartialCsvRow(const std::string& path);

}  // namespace divfuzz::fuzz
