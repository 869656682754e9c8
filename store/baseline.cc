#include "store/baseline.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "store/findings_store.h"
#include "store/root_cause_group.h"

namespace divfuzz::store {
namespace {

namespace fs = std::filesystem;

bool IsBucketId(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// A key as RootCauseKey::Id writes it: six fields, the first (the op) not empty.
bool IsGroupKey(absl::string_view s) {
  const std::vector<absl::string_view> parts = absl::StrSplit(s, '|');
  return parts.size() == 6 && !parts[0].empty();
}

// The program a known bug-tier bucket of a store baseline replays: the
// entry's "regression" link, else its minimized program, else its first.
std::string RegressionOf(const std::string& dir, const nlohmann::json& e) {
  for (const char* field : {"regression", "minimized", "program"}) {
    const std::string rel = e.value(field, "");
    if (rel.empty()) continue;
    const fs::path p = fs::path(rel).is_absolute() ? fs::path(rel) : fs::path(dir) / rel;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return fs::absolute(p, ec).lexically_normal().string();
  }
  return "";
}

absl::StatusOr<Baseline> LoadStoreBaseline(const std::string& path, const std::string& dir) {
  absl::StatusOr<std::unique_ptr<FindingsStore>> store = FindingsStore::Open(dir);
  if (!store.ok()) return store.status();
  absl::StatusOr<std::vector<nlohmann::json>> entries = (*store)->Load();
  if (!entries.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--baseline=", path, ": ", entries.status().message()));
  }
  Baseline b;
  b.path = path;
  for (const nlohmann::json& e : *entries) {
    const std::string id = e.value("id", "");
    b.bucket_ids.insert(id);
    b.group_keys.insert(e.value("group", ""));
    b.entries[id] = e;
    if (e.value("tier", "") == "bug") {
      if (std::string program = RegressionOf(dir, e); !program.empty()) b.regressions[id] = program;
    }
  }
  return b;
}

}  // namespace

bool Baseline::Knows(const nlohmann::json& entry) const {
  return bucket_ids.count(entry.value("id", "")) > 0 ||
         group_keys.count(entry.contains("group") ? entry.value("group", "")
                                                  : RootCauseKeyOf(entry).Id()) > 0;
}

std::string Baseline::StatusOf(const nlohmann::json& entry) const {
  if (empty()) return "";
  if (bucket_ids.count(entry.value("id", "")) > 0) return "known";
  return Knows(entry) ? "known-group" : "new";
}

absl::StatusOr<Baseline> ParseBaselineIds(const std::string& text, const std::string& path,
                                          const std::string& base_dir) {
  Baseline b;
  b.path = path;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    std::string note;
    if (const size_t hash = raw.find('#'); hash != absl::string_view::npos) {
      note = std::string(absl::StripAsciiWhitespace(raw.substr(hash + 1)));
      raw = raw.substr(0, hash);
    }
    const std::vector<absl::string_view> tokens =
        absl::StrSplit(raw, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (tokens.empty()) continue;
    const std::string where = absl::StrCat(path, ":", number, ": ");
    const std::string key(tokens[0]);
    const bool is_group = IsGroupKey(key);
    if (!is_group && !IsBucketId(key)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "expected a bucket id (letters, digits, '_' and '-', as in "
                 "sinh-f32-tolerance-1a2b3c4d) or a root-cause group key (six '|'-separated "
                 "fields, as in sinh|tolerance|bug|cpu|witness:cpu-f64|ordinary), got \"",
          key, "\""));
    }
    if (tokens.size() > 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "expected an id, an optional regression program and an optional # comment, "
                 "got more: \"", tokens[2], "\""));
    }
    (is_group ? b.group_keys : b.bucket_ids).insert(key);
    if (!note.empty()) b.notes[key] = note;
    if (tokens.size() == 2) {
      if (is_group) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "a regression program belongs to a bucket id, not to a group key"));
      }
      fs::path program{std::string(tokens[1])};
      if (!program.is_absolute()) program = fs::path(base_dir) / program;
      std::error_code ec;
      if (!absl::EndsWith(tokens[1], ".dfz") || !fs::is_regular_file(program, ec)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "expected a regression program (an existing .dfz file) after the id, got \"",
            tokens[1], "\""));
      }
      b.regressions[key] = fs::absolute(program, ec).lexically_normal().string();
    }
  }
  return b;
}

absl::StatusOr<Baseline> LoadBaseline(const std::string& path) {
  if (path.empty()) return Baseline{};
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(fs::path(path) / "index.jsonl", ec)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--baseline=", path, ": a folder without index.jsonl (expected a findings store, its "
          "index.jsonl or a file of bucket ids)"));
    }
    return LoadStoreBaseline(path, path);
  }
  if (!fs::is_regular_file(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--baseline=", path, ": no such file or folder (expected a findings store, its "
        "index.jsonl or a file of bucket ids)"));
  }
  if (fs::path(path).filename() == "index.jsonl") {
    const std::string dir = fs::path(path).parent_path().string();
    return LoadStoreBaseline(path, dir.empty() ? "." : dir);
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(absl::StrCat("--baseline=", path, ": cannot read the file"));
  }
  const std::string dir = fs::path(path).parent_path().string();
  return ParseBaselineIds(text.str(), path, dir.empty() ? "." : dir);
}

}  // namespace divfuzz::store
