// --baseline=PATH: the buckets and root-cause groups already known, so that a
// campaign gates (--fail_on) and reports only what is new. PATH is
//   - an earlier findings store: its folder or its index.jsonl. Every bucket
//     id and every root-cause group key in it is known; a bug-tier bucket's
//     regression program is its min.dfz (else its program.dfz);
//   - a text file, one id a line: a bucket id ("sinh-f32-tolerance-1a2b3c4d")
//     or a root-cause group key (it has '|': "sinh|tolerance|bug|cpu|..."),
//     optionally followed by a regression program (a .dfz path, relative to
//     the file), then an optional "# comment" (the upstream issue). Blank
//     lines and whole-line comments are ignored. A bad line is an error naming
//     file:line and what was expected.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace divfuzz::store {

struct Baseline {
  std::string path;                  // as given; "" when there is none
  std::set<std::string> bucket_ids;  // known buckets
  std::set<std::string> group_keys;  // known root-cause groups
  // Known bug-tier buckets with a program to replay: id -> absolute path.
  std::map<std::string, std::string> regressions;
  // A store baseline's entries (id -> index entry), for what the program
  // replays need (targets, op, dtype, class) when the current store lacks them.
  std::map<std::string, nlohmann::json> entries;
  // Comments of the id file's lines (id or key -> text after '#').
  std::map<std::string, std::string> notes;

  bool empty() const { return path.empty(); }
  // Known: its id or its root-cause group is in the baseline.
  bool Knows(const nlohmann::json& entry) const;
  // "known", "known-group" (only its group is in the baseline) or "new";
  // "" without a baseline.
  std::string StatusOf(const nlohmann::json& entry) const;
};

// Reads PATH (see above). A missing path or a malformed line is
// InvalidArgument: "<file>:<line>: <what was expected>"; "" reads as no
// baseline.
absl::StatusOr<Baseline> LoadBaseline(const std::string& path);

// Parses an id file's text (`path` names it in errors, `base_dir` resolves
// regression programs).
absl::StatusOr<Baseline> ParseBaselineIds(const std::string& text, const std::string& path,
                                          const std::string& base_dir);

}  // namespace divfuzz::store
