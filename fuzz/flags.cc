#include "fuzz/flags.h"

#include "absl/flags/flag.h"

#define DIVFUZZ_FLAG(type, name, default_value, help) ABSL_FLAG(type, name, default_value, help);
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  ABSL_FLAG(type, name, default_value, help);
#include "fuzz/settings.def"

namespace divfuzz::fuzz {

void CampaignSettingsFromFlags(CampaignConfig* config) {
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  config->name = absl::GetFlag(FLAGS_##name);
#include "fuzz/settings.def"
}

}  // namespace divfuzz::fuzz
