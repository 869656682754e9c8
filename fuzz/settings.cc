#include "fuzz/settings.h"

#include <cstdlib>
#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace divfuzz::fuzz {
namespace {

// campaign.json's `key` into *value; a missing kDefault key leaves the default.
template <typename T>
void ReadKey(const nlohmann::json& j, const char* key, SettingIfMissing if_missing, T* value) {
  *value = if_missing == kRequired ? j.at(key).get<T>() : j.value(key, *value);
}

// A setting as its worker environment variable holds it.
std::string EnvText(const std::string& v) { return v; }
std::string EnvText(bool v) { return v ? "1" : "0"; }
std::string EnvText(int v) { return absl::StrCat(v); }
std::string EnvText(int64_t v) { return absl::StrCat(v); }
std::string EnvText(double v) { return absl::StrCat(v); }

// And back: `text` is non-empty.
absl::Status FromEnvText(const char*, absl::string_view text, std::string* v) {
  *v = std::string(text);
  return absl::OkStatus();
}
absl::Status FromEnvText(const char*, absl::string_view text, bool* v) {
  if (text == "1") *v = true;
  if (text == "0") *v = false;
  return absl::OkStatus();
}
template <typename T>
absl::Status FromEnvText(const char* var, absl::string_view text, T* v) {
  bool ok = false;
  if constexpr (std::is_floating_point_v<T>) {
    ok = absl::SimpleAtod(text, v);
  } else {
    ok = absl::SimpleAtoi(text, v);
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(var, ": expected ", std::is_floating_point_v<T> ? "a number" : "an integer",
                   ", got '", text, "'"));
}

}  // namespace

nlohmann::json CampaignConfig::ToJson() const {
  nlohmann::json j = {{"version", 1}};
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  j[json_key] = name;
#define DIVFUZZ_RECORD(type, name, default_value, json_key, if_missing, help) j[json_key] = name;
#include "fuzz/settings.def"
  return j;
}

absl::StatusOr<CampaignConfig> CampaignConfig::FromJson(const nlohmann::json& j,
                                                        const std::string& where) {
  CampaignConfig c;
  try {
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  ReadKey(j, json_key, if_missing, &c.name);
#define DIVFUZZ_RECORD(type, name, default_value, json_key, if_missing, help) \
  ReadKey(j, json_key, if_missing, &c.name);
#include "fuzz/settings.def"
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat(where, ": ", e.what()));
  }
  if (c.workers < 1 || c.budget_seconds < 1) {
    return absl::DataLossError(
        absl::StrCat(where, ": expected workers >= 1 and budget_seconds >= 1"));
  }
  return c;
}

std::map<std::string, std::string> WorkerEnvironment(const CampaignConfig& config) {
  std::map<std::string, std::string> env;
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env_var, help) \
  if (!absl::string_view(env_var).empty()) env[env_var] = EnvText(config.name);
#include "fuzz/settings.def"
  return env;
}

absl::StatusOr<CampaignConfig> ConfigFromWorkerEnvironment() {
  CampaignConfig c;
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env_var, help)       \
  if (const char* text = absl::string_view(env_var).empty() ? nullptr : std::getenv(env_var); \
      text != nullptr && *text != '\0') {                                                     \
    if (absl::Status s = FromEnvText(env_var, text, &c.name); !s.ok()) return s;              \
  }
#include "fuzz/settings.def"
  return c;
}

}  // namespace divfuzz::fuzz
