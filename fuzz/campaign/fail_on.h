// campaign --fail_on=SEVERITY: which buckets make a campaign exit 1. A bucket
// counts when it was hit in this run: new, or its count grew since the start.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "store/baseline.h"

namespace divfuzz::fuzz {

struct FailOn {
  std::string name = "none";  // the flag's value
  // Buckets whose report::SeverityOrder is at most this fail the run; -1: none.
  int max_order = -1;
};

// "crash", "hang", "bug", "divergence", "any" or "none"; anything else is an
// error naming the accepted values.
absl::StatusOr<FailOn> ParseFailOn(const std::string& value);

// id -> count of every bucket in the store's index (empty when there is none).
std::map<std::string, int64_t> BucketCounts(const std::string& findings_dir);

// The index entries at or above `fail_on` that are new since `before` or whose
// count grew, most severe first. With a `baseline`, the buckets it knows (by
// id or root-cause group) do not count: they go to `known_hit` instead.
std::vector<nlohmann::json> BucketsHitAtOrAbove(const FailOn& fail_on,
                                                const std::map<std::string, int64_t>& before,
                                                const std::string& findings_dir,
                                                const store::Baseline* baseline = nullptr,
                                                std::vector<nlohmann::json>* known_hit = nullptr);

}  // namespace divfuzz::fuzz
