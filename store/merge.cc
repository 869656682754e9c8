#include "store/merge.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/stable_hash.h"

namespace divfuzz::store {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

// Index fields that link a file or folder of the bucket, "<id>/...".
constexpr const char* kLinkFields[] = {"program", "minimized", "repro_py", "repro_cpp",
                                       "report_md"};
// The fields that travel with a minimized program.
constexpr const char* kReproFields[] = {"minimized", "repro_py", "repro_cpp", "report_md"};

int64_t Count(const ordered_json& e) {
  const auto it = e.find("count");
  return it != e.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// origin store id -> hits, for an entry of the store `self`: its merged
// contributions plus its own hits (count minus those).
std::map<std::string, int64_t> Contributions(const ordered_json& e, const std::string& self) {
  std::map<std::string, int64_t> out;
  int64_t merged = 0;
  if (auto it = e.find("merged_counts"); it != e.end() && it->is_object()) {
    for (auto& [origin, n] : it->items()) {
      if (!n.is_number_integer() || origin == self) continue;
      out[origin] = n.get<int64_t>();
      merged += out[origin];
    }
  }
  out[self] = std::max<int64_t>(0, Count(e) - merged);
  return out;
}

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Copies a file or a folder's files (atomically each) from src to dest.
absl::Status CopyTree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (fs::is_directory(from, ec)) {
    for (const auto& e : fs::recursive_directory_iterator(from, ec)) {
      if (!e.is_regular_file() ||
          absl::StrContains(e.path().filename().string(), kAtomicWriteInfix)) {
        continue;
      }
      const fs::path target = to / fs::relative(e.path(), from);
      if (absl::Status s = CopyTree(e.path(), target); !s.ok()) return s;
    }
    return ec ? absl::InternalError(absl::StrCat("cannot list ", from.string(), ": ", ec.message()))
              : absl::OkStatus();
  }
  absl::StatusOr<std::string> text = ReadFile(from);
  if (!text.ok()) return text.status();
  fs::create_directories(to.parent_path(), ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", to.parent_path().string()));
  return WriteFileAtomically(to.string(), *text);
}

// Size of the entry's min.dfz in `dir`, -1 when it has none.
int64_t MinimizedBytes(const std::string& dir, const ordered_json& e) {
  const std::string rel = e.value("minimized", "");
  if (rel.empty()) return -1;
  std::error_code ec;
  const auto size = fs::file_size(fs::path(dir) / rel, ec);
  return ec ? -1 : static_cast<int64_t>(size);
}

// `rel` ("<src id>/x/y") moved under the destination bucket: "<id>/<sub>x/y".
std::string Relink(const std::string& rel, const std::string& src_id, const std::string& id,
                   const std::string& sub) {
  const std::string prefix = src_id + "/";
  const std::string tail = absl::StartsWith(rel, prefix) ? rel.substr(prefix.size()) : rel;
  return absl::StrCat(id, "/", sub, tail);
}

// Copies the files the entry's `fields` link from the source store into the
// destination bucket `id` (under `sub`), and points `out`'s fields at them.
absl::Status CopyLinked(const std::string& src_dir, const ordered_json& src_entry,
                        const std::string& dest_dir, const std::string& id, const std::string& sub,
                        const std::vector<const char*>& fields, ordered_json* out) {
  const std::string src_id = src_entry.value("id", "");
  for (const char* field : fields) {
    const std::string rel = src_entry.value(field, "");
    if (rel.empty()) {
      (*out)[field] = "";
      continue;
    }
    std::error_code ec;
    if (!fs::exists(fs::path(src_dir) / rel, ec)) {  // a link to nothing is dropped
      (*out)[field] = "";
      continue;
    }
    const std::string target = Relink(rel, src_id, id, sub);
    // repro_cpp names its main.cpp; its CMakeLists.txt goes along.
    const bool folder = std::string(field) == "repro_cpp";
    const fs::path from = fs::path(src_dir) / rel, to = fs::path(dest_dir) / target;
    if (absl::Status s = folder ? CopyTree(from.parent_path(), to.parent_path()) : CopyTree(from, to);
        !s.ok()) {
      return s;
    }
    (*out)[field] = target;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MergeStats> MergeStore(FindingsStore& dest, FindingsStore& src) {
  MergeStats stats;
  absl::StatusOr<std::string> dest_id = dest.StoreId();
  if (!dest_id.ok()) return dest_id.status();
  absl::StatusOr<std::string> src_id = src.StoreId();
  if (!src_id.ok()) {
    // A read-only source: its folder names it.
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(src.dir(), ec).string();
    src_id = absl::StrFormat("path-%016x", graph::Fnv1a64(canonical.data(), canonical.size()));
    stats.warnings.push_back(absl::StrCat(src.dir(), ": cannot write its .store_id (",
                                          src_id.status().message(), "); named by its path"));
  }
  if (*src_id == *dest_id) {
    stats.warnings.push_back(
        absl::StrCat(src.dir(), " is ", dest.dir(), " (the same store id): nothing to merge"));
    return stats;
  }
  absl::StatusOr<std::vector<ordered_json>> incoming = src.LoadOrdered(&stats.warnings);
  if (!incoming.ok()) return incoming.status();
  const std::string origin_tag = src_id->substr(0, 8);
  absl::Status status = dest.Update([&](std::vector<ordered_json>* entries) -> absl::Status {
    std::map<std::string, size_t> by_signature;
    std::set<std::string> ids;
    for (size_t i = 0; i < entries->size(); ++i) {
      by_signature[(*entries)[i].value("signature", "")] = i;
      ids.insert((*entries)[i].value("id", ""));
    }
    for (const ordered_json& s : *incoming) {
      const std::map<std::string, int64_t> from = Contributions(s, *src_id);
      auto found = by_signature.find(s.value("signature", ""));
      if (found == by_signature.end()) {
        // A new bucket: its folder first, then its line (in the rewrite).
        std::string id = s.value("id", "");
        for (int n = 2; ids.count(id) > 0; ++n) id = absl::StrCat(s.value("id", ""), "-", n);
        ordered_json e = s;
        e["id"] = id;
        if (absl::Status c = CopyLinked(src.dir(), s, dest.dir(), id, "",
                                        {std::begin(kLinkFields), std::end(kLinkFields)}, &e);
            !c.ok()) {
          return c;
        }
        ordered_json merged = ordered_json::object();
        int64_t count = 0;
        for (const auto& [origin, n] : from) {
          if (origin == *dest_id) continue;
          merged[origin] = n;
          count += n;
        }
        e["count"] = count;
        e["merged_counts"] = merged;
        ids.insert(id);
        by_signature[e.value("signature", "")] = entries->size();
        entries->push_back(std::move(e));
        ++stats.new_buckets;
        continue;
      }
      ordered_json& d = (*entries)[found->second];
      const ordered_json before = d;
      const std::map<std::string, int64_t> mine = Contributions(d, *dest_id);
      ordered_json merged = ordered_json::object();
      int64_t count = mine.at(*dest_id);
      std::map<std::string, int64_t> all(mine.begin(), mine.end());
      all.erase(*dest_id);
      for (const auto& [origin, n] : from) {
        if (origin != *dest_id) all[origin] = std::max(all[origin], n);
      }
      for (const auto& [origin, n] : all) {
        merged[origin] = n;
        count += n;
      }
      d["count"] = count;
      d["merged_counts"] = merged;
      for (const char* field : {"first_seen", "last_seen"}) {
        const std::string a = d.value(field, ""), b = s.value(field, "");
        // ISO 8601 in UTC orders as text.
        const bool take = a.empty() || (!b.empty() && (std::string(field) == "first_seen"
                                                           ? b < a
                                                           : b > a));
        if (take) d[field] = b;
      }
      if (d.value("program", "").empty() && !s.value("program", "").empty()) {
        if (absl::Status c =
                CopyLinked(src.dir(), s, dest.dir(), d.value("id", ""), "", {"program"}, &d);
            !c.ok()) {
          return c;
        }
      }
      const int64_t ours = MinimizedBytes(dest.dir(), d), theirs = MinimizedBytes(src.dir(), s);
      if (theirs >= 0 && (ours < 0 || theirs < ours)) {
        // Beside DEST's own set, which stays valid until the index names
        // this one.
        if (absl::Status c = CopyLinked(src.dir(), s, dest.dir(), d.value("id", ""),
                                        absl::StrCat("merged-", origin_tag, "/"),
                                        {std::begin(kReproFields), std::end(kReproFields)}, &d);
            !c.ok()) {
          return c;
        }
        ++stats.smaller_programs;
      }
      if (d != before) ++stats.updated_buckets;
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return stats;
}

}  // namespace divfuzz::store
