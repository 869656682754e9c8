#include "fuzz/campaign/fail_on.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "report/report.h"
#include "store/findings_store.h"

namespace divfuzz::fuzz {
namespace {

std::vector<nlohmann::json> LoadEntries(const std::string& findings_dir) {
  if (auto store = store::FindingsStore::Open(findings_dir); store.ok()) {
    if (auto index = (*store)->Load(); index.ok()) return *index;
  }
  return {};
}

}  // namespace

absl::StatusOr<FailOn> ParseFailOn(const std::string& value) {
  // report::SeverityOrder: crash 0, hang 1, bug-split 2, bug-tolerance 3,
  // divergence 4, dtype-gap 5, expected 6, anything else 7.
  static const std::pair<const char*, int> kLevels[] = {
      {"none", -1}, {"crash", 0}, {"hang", 1}, {"bug", 3}, {"divergence", 4}, {"any", 7}};
  for (const auto& [name, order] : kLevels) {
    if (value == name) return FailOn{value, order};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--fail_on=", value, ": expected crash, hang, bug, divergence, any or none"));
}

std::map<std::string, int64_t> BucketCounts(const std::string& findings_dir) {
  std::map<std::string, int64_t> counts;
  for (const nlohmann::json& e : LoadEntries(findings_dir)) {
    counts[e.value("id", "")] = e.value("count", int64_t{0});
  }
  return counts;
}

std::vector<nlohmann::json> BucketsHitAtOrAbove(const FailOn& fail_on,
                                                const std::map<std::string, int64_t>& before,
                                                const std::string& findings_dir,
                                                const store::Baseline* baseline,
                                                std::vector<nlohmann::json>* known_hit) {
  std::vector<nlohmann::json> hit;
  if (fail_on.max_order < 0) return hit;
  for (const nlohmann::json& e : LoadEntries(findings_dir)) {
    if (report::SeverityOrder(e.value("severity", "")) > fail_on.max_order) continue;
    const auto it = before.find(e.value("id", ""));
    if (it != before.end() && e.value("count", int64_t{0}) <= it->second) continue;
    if (baseline != nullptr && !baseline->empty() && baseline->Knows(e)) {
      if (known_hit != nullptr) known_hit->push_back(e);
      continue;
    }
    hit.push_back(e);
  }
  std::stable_sort(hit.begin(), hit.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return report::SeverityOrder(a.value("severity", "")) <
           report::SeverityOrder(b.value("severity", ""));
  });
  return hit;
}

}  // namespace divfuzz::fuzz
