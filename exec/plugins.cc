#include "exec/plugins.h"

#include <dlfcn.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace divfuzz::exec {

absl::Status LoadPlugins(const std::string& comma_separated_paths) {
  for (absl::string_view part : absl::StrSplit(comma_separated_paths, ',', absl::SkipEmpty())) {
    const std::string path(part);
    // Loaded for good: kernels registered by the library must outlive every run.
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* why = dlerror();
      return absl::InvalidArgumentError(
          absl::StrCat("plugin ", path, ": cannot load it: ", why ? why : "unknown error"));
    }
  }
  return absl::OkStatus();
}

}  // namespace divfuzz::exec
