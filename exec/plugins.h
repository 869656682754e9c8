// Shared libraries loaded into divfuzz before it runs anything: custom-op
// libraries whose TORCH_LIBRARY / TORCH_LIBRARY_IMPL registrations add or
// replace kernels, so a campaign fuzzes those kernels. The deliberately faulty
// ops of the reliability tests are loaded this way too.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace divfuzz::exec {

// Loads each library of a comma-separated list (dlopen, RTLD_NOW|RTLD_GLOBAL);
// a library that is missing or fails to load is an error naming it.
absl::Status LoadPlugins(const std::string& comma_separated_paths);

}  // namespace divfuzz::exec
