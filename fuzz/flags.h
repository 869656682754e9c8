// The command-line flags, one for each DIVFUZZ_FLAG and DIVFUZZ_SETTING line
// of fuzz/settings.def (defined in flags.cc from the same lines).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "fuzz/settings.h"

#define DIVFUZZ_FLAG(type, name, default_value, help) ABSL_DECLARE_FLAG(type, name);
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  ABSL_DECLARE_FLAG(type, name);
#include "fuzz/settings.def"

namespace divfuzz::fuzz {

// Every DIVFUZZ_SETTING of the campaign from its flag, as given on the
// command line (the campaign then resolves targets and paths, and derives the
// records).
void CampaignSettingsFromFlags(CampaignConfig* config);

}  // namespace divfuzz::fuzz
