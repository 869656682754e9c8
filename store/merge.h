// divfuzz merge: findings stores of several hosts into one. A bucket is the
// same bucket in every store (same signature; ids are stable per signature),
// so merging is a union:
//   count       summed over the stores that saw it, each store's own hits
//               counted once however often it is merged (the entry keeps
//               "merged_counts": origin store id -> that store's own hits,
//               and counts only ever grow, so a re-merge takes the larger of
//               two values, never the sum: merging is idempotent and
//               incremental, and A into C, B into C equals A+B into C)
//   first_seen  the earliest, last_seen the latest
//   program     the one DEST has, else the first source's
//   minimized   the smallest min.dfz, with the repro.py, repro_cpp/ and
//               report.md that came with it (a smaller source's set is
//               copied to <id>/merged-<origin>/ before the index names it)
//   group       recomputed (store/root_cause_group.h)
// Other fields are DEST's when it has the bucket, else the source's. The
// whole merge holds DEST's lock; files are copied atomically before the
// index is rewritten atomically, so a merge killed at any point leaves DEST
// as it was or merged, and running it again finishes it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/findings_store.h"

namespace divfuzz::store {

struct MergeStats {
  int new_buckets = 0;      // buckets DEST did not have
  int updated_buckets = 0;  // buckets whose count, dates or minimized program changed
  int smaller_programs = 0; // minimized programs taken from a source
  std::vector<std::string> warnings;  // corrupt source lines skipped, a source that is DEST
};

// Merges `src` into `dest`.
absl::StatusOr<MergeStats> MergeStore(FindingsStore& dest, FindingsStore& src);

}  // namespace divfuzz::store
