// A campaign's settings, generated from fuzz/settings.def: the struct, its
// campaign.json form, and the environment that hands them to each worker.
// Adding a setting is one line there; nothing here names one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace divfuzz::fuzz {

// What a campaign.json lacking a key does (settings.def's `if_missing`).
enum SettingIfMissing { kRequired, kDefault };

struct CampaignConfig {
  // findings, seeds and policy are absolute paths in memory; campaign.json
  // holds them relative to the work folder where they lie beside it
  // (SaveConfig), so a copied or moved work folder with its store beside it
  // resumes into that store, not the original's.
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  type name = default_value;
#define DIVFUZZ_RECORD(type, name, default_value, json_key, if_missing, help) \
  type name = default_value;
#include "fuzz/settings.def"

  // Every setting and record under its json_key, and "version": 1.
  nlohmann::json ToJson() const;
  // `where` names the file in errors: a missing kRequired key, a value of the
  // wrong type, workers or budget_seconds below 1.
  static absl::StatusOr<CampaignConfig> FromJson(const nlohmann::json& j, const std::string& where);
};

// The environment a worker gets for `config`: every setting with an `env`
// variable, each present (empty strings included); booleans as "1" or "0".
std::map<std::string, std::string> WorkerEnvironment(const CampaignConfig& config);

// The settings a worker reads back from its environment (the inverse of
// WorkerEnvironment): an unset or empty variable leaves the setting at its
// default, a boolean is true for "1" and false for "0" (anything else: the
// default); a number that does not parse is an error naming the variable.
// Settings without a variable keep their defaults.
absl::StatusOr<CampaignConfig> ConfigFromWorkerEnvironment();

}  // namespace divfuzz::fuzz
