#include "fuzz/campaign/reducer_child.h"

#include "graph/parser.h"

namespace divfuzz::fuzz {

absl::StatusOr<std::optional<graph::Program>> AttachToSupervisor(const ReproChild& child,
                                                                 const ReproResume* resume,
                                                                 const std::string& path,
                                                                 minimize::ReduceOptions* options) {
  options->on_run = [&child](const std::string& text) { child.Run(text); };
  options->on_keep = [&child](const std::string& text, const std::string& signature,
                              const std::string& tier) { child.Keep(text, signature, tier); };
  if (resume == nullptr) return std::nullopt;
  if (!resume->signature.empty()) options->signature = resume->signature;
  if (!resume->tier.empty()) options->tier = resume->tier;
  options->skip = resume->skip;
  if (resume->best.empty()) return std::nullopt;
  absl::StatusOr<graph::Program> best =
      graph::ParseProgram(resume->best, path + " (the reduction so far)");
  if (!best.ok()) return best.status();
  return std::optional<graph::Program>(*std::move(best));
}

}  // namespace divfuzz::fuzz
