#include "report/groups.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"

namespace divfuzz::report {

std::vector<Group> GroupBuckets(std::vector<Bucket> buckets) {
  SortBySeverity(&buckets);
  std::vector<Group> groups;
  std::map<std::string, size_t> by_id;
  for (Bucket& b : buckets) {
    auto [it, added] = by_id.emplace(b.group, groups.size());
    if (added) {
      Group g;
      g.id = b.group;
      g.label = b.group_label;
      g.tier = b.tier;
      g.severity = b.severity;  // buckets come most severe first
      groups.push_back(std::move(g));
    }
    Group& g = groups[it->second];
    g.hits += b.count;
    g.members.push_back(std::move(b));
  }
  for (Group& g : groups) {
    for (size_t i = 0; i < g.members.size(); ++i) {
      const int64_t size = g.members[i].minimized_bytes;
      const int64_t best = g.members[g.representative].minimized_bytes;
      if (size >= 0 && (best < 0 || size < best)) g.representative = i;
    }
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    const int sa = SeverityOrder(a.severity), sb = SeverityOrder(b.severity);
    if (sa != sb) return sa < sb;
    if (a.hits != b.hits) return a.hits > b.hits;
    return a.id < b.id;
  });
  return groups;
}

std::string GroupsText(const std::vector<Group>& groups) {
  std::string out;
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    const Bucket& rep = g.members[g.representative];
    absl::StrAppend(&out, "group ", i + 1, "/", groups.size(), ": ", g.label, "\n  key ", g.id,
                    "; tier ", g.tier, ", severity ", g.severity, ", ", g.members.size(),
                    g.members.size() == 1 ? " bucket, " : " buckets, ", g.hits,
                    g.hits == 1 ? " hit" : " hits", "\n  representative ", rep.id);
    if (rep.minimized_bytes >= 0) {
      absl::StrAppend(&out, " (", rep.minimized, ", ", rep.minimized_bytes, " bytes)");
    } else {
      absl::StrAppend(&out, " (not minimized)");
    }
    absl::StrAppend(&out, "\n  members");
    for (size_t m = 0; m < g.members.size(); ++m) {
      absl::StrAppend(&out, m == 0 ? " " : ", ", g.members[m].id, " (", g.members[m].count, ")");
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace divfuzz::report
