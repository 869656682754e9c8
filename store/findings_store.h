// The findings store: one folder per bucket (deduplicated by signature) and
// an index, shared by every fuzzer process of a campaign.
//
//   findings/index.jsonl   one JSON object a line, one line a bucket
//   findings/<id>/         program.dfz, min.dfz, repro.py, repro_cpp/..., report.md
//   findings/.lock         flock'ed around every read-modify-write
//
// Every file is written atomically (<path>.tmp.<pid>, fsync, rename); under
// an exclusive flock a new bucket's line is appended to the index and any
// other change rewrites it whole, so several processes (a campaign's workers
// and reducers) can share one store and a killed process loses no finding. No libtorch and no oracles dependency: callers
// pass strings.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace divfuzz::store {

// One observation of a finding, as the oracle describes it.
struct FindingHit {
  std::string signature;         // bucket key (oracles::Signature)
  std::string root_op;           // "aten::logdet"
  std::string dtype;             // "f32"
  std::string divergence_class;  // "tolerance", "class_split", ...
  std::string wrong_side = "undecided";
  std::string tier = "divergence";
  std::string severity;
  std::string targets;  // "cpu vs cpu-f64"
  nlohmann::json detail = nlohmann::json::object();
};

struct RecordResult {
  std::string id;
  bool is_new = false;
  int64_t count = 0;  // the bucket's count after this hit
};

class FindingsStore {
 public:
  // Opens (creating it and its parents when missing) the store folder.
  static absl::StatusOr<std::unique_ptr<FindingsStore>> Open(const std::string& dir);

  // A new signature gets a folder <id>/ with program.dfz and an index entry
  // with count 1; a known one gets count + 1 and a new last_seen (its folder
  // and first program are kept). Corrupt index lines are skipped (and moved to
  // index.jsonl.corrupt) so they never cost the other entries.
  absl::StatusOr<RecordResult> Record(const FindingHit& hit, std::string_view program_text);

  // Adds hits to known buckets in one locked rewrite of the index: counts
  // (signature -> hits) and last_seen. Signatures not in the index are
  // ignored. How a fuzzer batches repeat hits instead of rewriting the index
  // for each.
  absl::Status AddHits(const std::map<std::string, int64_t>& hits_by_signature);

  // Writes <id>/<relative_path> atomically (creating subfolders) and, when
  // index_field is not empty, sets that index field to "<id>/<relative_path>".
  // E.g. ("repro.py", "repro_py"), ("min.dfz", "minimized"),
  // ("repro_cpp/CMakeLists.txt", ""). Bookkeeping fields cannot be set.
  absl::Status WriteArtifact(const std::string& id, const std::string& relative_path,
                             std::string_view content, const std::string& index_field);

  // Every bucket's signature, read without the lock and without parsing
  // whole lines: how a fuzzer process learns which buckets others recorded,
  // so that it batches their hits instead of recording them one by one.
  absl::StatusOr<std::set<std::string>> Signatures() const;

  // Parses index.jsonl (an absent index is an empty store). A corrupt line is
  // an error naming <dir>/index.jsonl:<line>. Every entry's "group" is its
  // root-cause key (store/root_cause_group.h), also for entries written
  // before the store kept one.
  absl::StatusOr<std::vector<nlohmann::json>> Load() const;

  // Moves corrupt index lines (cut short by a kill, garbage) into
  // index.jsonl.corrupt under the lock, as Record does on its way, and returns
  // one description a line moved: "<dir>/index.jsonl:<line>: <why>; moved to
  // <dir>/index.jsonl.corrupt". Empty for a clean (or absent) index. Commands
  // that read the index call it first and print what it returns.
  absl::StatusOr<std::vector<std::string>> SetAsideCorruptLines();

  // Every entry in index order, fields in their order; a corrupt line is
  // skipped and described ("<dir>/index.jsonl:<line>: <why>") in `skipped`.
  // Read without the lock: the index only ever changes by an append or an
  // atomic rename. (Load's entries have sorted keys.)
  absl::StatusOr<std::vector<nlohmann::ordered_json>> LoadOrdered(
      std::vector<std::string>* skipped) const;

  // A read-modify-write of the whole index under the store's lock: `fn` gets
  // every entry and may change, add or drop them (and write files into the
  // store with WriteFileAtomically meanwhile); then the index is rewritten
  // atomically, each entry's group recomputed, corrupt lines set aside. When
  // `fn` fails nothing is rewritten. How `divfuzz merge` writes.
  absl::Status Update(const std::function<absl::Status(std::vector<nlohmann::ordered_json>*)>& fn);

  // Sets index field `field` (not one the store owns) of the buckets named,
  // in one locked rewrite; ids not in the index are ignored.
  absl::Status Annotate(const std::string& field,
                        const std::map<std::string, std::string>& value_by_id);

  // This store's identity: 16 hex digits in <dir>/.store_id, created on first
  // use. A merge (store/merge.h) counts each origin's hits once by it; a
  // copied folder is the same store.
  absl::StatusOr<std::string> StoreId();

  const std::string& dir() const { return dir_; }
  std::string IndexPath() const;

  // "<op without aten::>-<dtype>-<class>-<8 hex of a hash of the signature>",
  // restricted to [A-Za-z0-9_-]. Stable across runs, builds and hosts.
  static std::string MakeId(const FindingHit& hit);
  // Current UTC time as ISO-8601, e.g. "2025-11-21T14:26:03Z".
  static std::string NowUtc();

 private:
  explicit FindingsStore(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// Writes `content` to `path` atomically: <path><kAtomicWriteInfix><pid>,
// fsync, rename, then fsync of the folder.
absl::Status WriteFileAtomically(const std::string& path, std::string_view content);
// What names a write under way (folder scans skip such files).
inline constexpr char kAtomicWriteInfix[] = ".tmp.";

}  // namespace divfuzz::store
