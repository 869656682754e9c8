// Root-cause groups of a campaign's buckets (keys: store/root_cause_group.h),
// for the HTML report, the campaign summary and campaign/groups.txt: a reader
// starts from the groups, most severe first, instead of every bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "report/report.h"

namespace divfuzz::report {

struct Group {
  std::string id;     // store::RootCauseKey::Id()
  std::string label;  // store::RootCauseKey::Label()
  std::string tier;
  std::string severity;         // the most severe member's
  int64_t hits = 0;             // the members' counts added up
  std::vector<Bucket> members;  // by severity, then count (descending), then id
  // Index into members: the one with a minimized program and the smallest
  // min.dfz (the first such on a tie), else the first member.
  size_t representative = 0;
};

// The buckets' groups, most severe first (then more hits, then id).
std::vector<Group> GroupBuckets(std::vector<Bucket> buckets);

// The groups as text, one block a group, for the summary and groups.txt:
//   group 1/2: add: tolerance (bug), cuda wrong, witness cpu-f64, ordinary inputs
//     key add|tolerance|bug|cuda|witness:cpu-f64|ordinary; tier bug, severity bug-tolerance,
//       2 buckets, 17 hits  (one line)
//     representative add-f16-tolerance-0a1b2c3d (min.dfz, 212 bytes)
//     members add-f16-tolerance-0a1b2c3d (12), add-bf16-tolerance-4e5f6a7b (5)
std::string GroupsText(const std::vector<Group>& groups);

}  // namespace divfuzz::report
