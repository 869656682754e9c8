#include "store/findings_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "graph/stable_hash.h"
#include "store/root_cause_group.h"

namespace divfuzz::store {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

constexpr char kIndexName[] = "index.jsonl";
constexpr char kCorruptName[] = "index.jsonl.corrupt";
constexpr char kLockName[] = ".lock";
constexpr char kProgramName[] = "program.dfz";

// Index fields the store owns; WriteArtifact may not set them.
const std::set<std::string>& ReservedFields() {
  static const auto* fields = new std::set<std::string>{
      "id",       "signature", "root_op",    "dtype",     "class",   "wrong_side", "tier",
      "severity", "count",     "first_seen", "last_seen", "targets", "detail",     "group"};
  return *fields;
}

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  int err = errno;
  std::string msg = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

// Exclusive flock on <dir>/.lock for the lifetime of the object. Each guard
// opens its own file description, so guards exclude each other across
// processes and across threads of one process alike.
class LockGuard {
 public:
  static absl::StatusOr<std::unique_ptr<LockGuard>> Acquire(const std::string& dir) {
    std::string path = absl::StrCat(dir, "/", kLockName);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError("cannot open lock file", path);
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      absl::Status status = ErrnoError("cannot lock", path);
      ::close(fd);
      return status;
    }
    return std::unique_ptr<LockGuard>(new LockGuard(fd));
  }
  ~LockGuard() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  explicit LockGuard(int fd) : fd_(fd) {}
  int fd_;
};

absl::Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open folder", dir);
  // Some file systems refuse fsync on folders; the rename is done either way.
  ::fsync(fd);
  ::close(fd);
  return absl::OkStatus();
}

// Reads a whole file; a missing file reads as nullopt.
absl::StatusOr<std::optional<std::string>> ReadFileIfExists(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::optional<std::string>();
    return absl::InternalError(absl::StrCat("cannot read ", path));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return absl::InternalError(absl::StrCat("cannot read ", path));
  return std::optional<std::string>(buf.str());
}

struct IndexLine {
  int line = 0;  // 1-based line number in index.jsonl
  std::string raw;
  bool ok = false;
  std::string error;  // when !ok
  ordered_json entry;
};

// Parses index text into lines; blank lines are ignored.
std::vector<IndexLine> ParseIndex(const std::string& text) {
  std::vector<IndexLine> lines;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (raw.find_first_not_of(" \t") == std::string_view::npos) continue;
    IndexLine line;
    line.line = number;
    line.raw = std::string(raw);
    try {
      line.entry = ordered_json::parse(line.raw);
      if (!line.entry.is_object()) {
        line.error = "not a JSON object";
      } else if (!line.entry.contains("id") || !line.entry["id"].is_string() ||
                 line.entry["id"].get<std::string>().empty()) {
        line.error = "missing string field \"id\"";
      } else if (!line.entry.contains("signature") || !line.entry["signature"].is_string()) {
        line.error = "missing string field \"signature\"";
      } else if (line.entry.contains("count") && !line.entry["count"].is_number_integer()) {
        line.error = "field \"count\" is not an integer";
      } else {
        line.ok = true;
      }
    } catch (const nlohmann::json::exception& e) {
      line.error = e.what();
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

absl::StatusOr<std::vector<IndexLine>> ReadIndex(const std::string& path) {
  absl::StatusOr<std::optional<std::string>> text = ReadFileIfExists(path);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return std::vector<IndexLine>();
  return ParseIndex(**text);
}

std::string SerializeIndex(const std::vector<IndexLine>& lines) {
  std::string out;
  for (const IndexLine& line : lines) {
    if (!line.ok) continue;
    absl::StrAppend(&out, line.entry.dump(), "\n");
  }
  return out;
}

// Moves corrupt lines out of the index into index.jsonl.corrupt (appended,
// atomically) so rewriting the index never silently destroys them.
absl::Status SetAsideCorrupt(const std::string& dir, const std::vector<IndexLine>& lines) {
  std::string add;
  for (const IndexLine& line : lines) {
    if (!line.ok) absl::StrAppend(&add, line.raw, "\n");
  }
  if (add.empty()) return absl::OkStatus();
  std::string path = absl::StrCat(dir, "/", kCorruptName);
  absl::StatusOr<std::optional<std::string>> old = ReadFileIfExists(path);
  if (!old.ok()) return old.status();
  return WriteFileAtomically(path, absl::StrCat(old->value_or(""), add));
}

// The entry's root-cause group (store/root_cause_group.h), derived from its
// other fields: set on every write, so stores from before groups get it too.
void SetGroup(ordered_json* entry) { (*entry)["group"] = RootCauseKeyOf(*entry).Id(); }

absl::Status RewriteIndex(const std::string& dir, std::vector<IndexLine>& lines) {
  for (IndexLine& line : lines) {
    if (line.ok) SetGroup(&line.entry);
  }
  absl::Status status = SetAsideCorrupt(dir, lines);
  if (!status.ok()) return status;
  return WriteFileAtomically(absl::StrCat(dir, "/", kIndexName), SerializeIndex(lines));
}

std::string Sanitize(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '-';
    out.push_back(keep ? c : '_');
  }
  return out.empty() ? "none" : out;
}

bool ValidRelativePath(const std::string& rel) {
  if (rel.empty() || rel.front() == '/' || rel.back() == '/') return false;
  for (absl::string_view part : absl::StrSplit(rel, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

IndexLine* FindById(std::vector<IndexLine>& lines, const std::string& id) {
  for (IndexLine& line : lines) {
    if (line.ok && line.entry["id"].get<std::string>() == id) return &line;
  }
  return nullptr;
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, std::string_view content) {
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status status = ErrnoError("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return status;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    absl::Status status = ErrnoError("cannot fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return status;
  }
  if (::close(fd) != 0) {
    absl::Status status = ErrnoError("cannot close", tmp);
    ::unlink(tmp.c_str());
    return status;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status status = ErrnoError("cannot rename to " + path + ":", tmp);
    ::unlink(tmp.c_str());
    return status;
  }
  std::string parent = fs::path(path).parent_path().string();
  return FsyncDir(parent.empty() ? "." : parent);
}

absl::StatusOr<std::unique_ptr<FindingsStore>> FindingsStore::Open(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("empty findings folder");
  std::string clean = dir;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  std::error_code ec;
  fs::create_directories(clean, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot create ", clean, ": ", ec.message()));
  }
  if (!fs::is_directory(clean, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(clean, " is not a folder"));
  }
  return std::unique_ptr<FindingsStore>(new FindingsStore(clean));
}

std::string FindingsStore::IndexPath() const { return absl::StrCat(dir_, "/", kIndexName); }

std::string FindingsStore::MakeId(const FindingHit& hit) {
  absl::string_view op = hit.root_op;
  if (absl::StartsWith(op, "aten::")) op.remove_prefix(6);
  uint64_t h = graph::Fnv1a64(hit.signature.data(), hit.signature.size());
  uint32_t folded = static_cast<uint32_t>(h >> 32) ^ static_cast<uint32_t>(h);
  return absl::StrCat(Sanitize(op), "-", Sanitize(hit.dtype), "-", Sanitize(hit.divergence_class),
                      "-", absl::StrFormat("%08x", folded));
}

std::string FindingsStore::NowUtc() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

absl::Status FindingsStore::AddHits(const std::map<std::string, int64_t>& hits_by_signature) {
  if (hits_by_signature.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<LockGuard>> lock = LockGuard::Acquire(dir_);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::vector<IndexLine>> lines = ReadIndex(IndexPath());
  if (!lines.ok()) return lines.status();
  const std::string now = NowUtc();
  bool changed = false;
  for (IndexLine& line : *lines) {
    if (!line.ok) continue;
    auto it = hits_by_signature.find(line.entry["signature"].get<std::string>());
    if (it == hits_by_signature.end() || it->second <= 0) continue;
    line.entry["count"] = line.entry.value("count", int64_t{0}) + it->second;
    line.entry["last_seen"] = now;
    changed = true;
  }
  return changed ? RewriteIndex(dir_, *lines) : absl::OkStatus();
}

absl::StatusOr<RecordResult> FindingsStore::Record(const FindingHit& hit,
                                                   std::string_view program_text) {
  if (hit.signature.empty()) return absl::InvalidArgumentError("finding without a signature");
  absl::StatusOr<std::unique_ptr<LockGuard>> lock = LockGuard::Acquire(dir_);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::vector<IndexLine>> lines = ReadIndex(IndexPath());
  if (!lines.ok()) return lines.status();
  std::string now = NowUtc();

  for (IndexLine& line : *lines) {
    if (!line.ok || line.entry["signature"].get<std::string>() != hit.signature) continue;
    int64_t count = line.entry.value("count", int64_t{0}) + 1;
    line.entry["count"] = count;
    line.entry["last_seen"] = now;
    absl::Status status = RewriteIndex(dir_, *lines);
    if (!status.ok()) return status;
    return RecordResult{line.entry["id"].get<std::string>(), false, count};
  }

  // A new bucket. Ids are stable per signature; a (very unlikely) clash of
  // two signatures on one id gets a numeric suffix.
  std::string base = MakeId(hit);
  std::string id = base;
  for (int n = 2; FindById(*lines, id) != nullptr; ++n) id = absl::StrCat(base, "-", n);

  // The folder and program first, then the index: a process killed in
  // between leaves a folder that the next hit of the signature reuses.
  std::string folder = absl::StrCat(dir_, "/", id);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", folder, ": ", ec.message()));
  absl::Status status = WriteFileAtomically(absl::StrCat(folder, "/", kProgramName), program_text);
  if (!status.ok()) return status;
  status = FsyncDir(dir_);
  if (!status.ok()) return status;

  IndexLine line;
  line.ok = true;
  ordered_json& e = line.entry;
  e["id"] = id;
  e["signature"] = hit.signature;
  e["root_op"] = hit.root_op;
  e["dtype"] = hit.dtype;
  e["class"] = hit.divergence_class;
  e["wrong_side"] = hit.wrong_side;
  e["tier"] = hit.tier;
  e["severity"] = hit.severity;
  e["count"] = int64_t{1};
  e["first_seen"] = now;
  e["last_seen"] = now;
  e["targets"] = hit.targets;
  e["detail"] = ordered_json::parse(hit.detail.is_null() ? "{}" : hit.detail.dump());
  e["program"] = absl::StrCat(id, "/", kProgramName);
  e["minimized"] = "";
  e["repro_py"] = "";
  e["repro_cpp"] = "";
  e["report_md"] = "";
  SetGroup(&e);
  lines->push_back(std::move(line));
  status = RewriteIndex(dir_, *lines);
  if (!status.ok()) return status;
  return RecordResult{id, true, 1};
}

absl::Status FindingsStore::WriteArtifact(const std::string& id, const std::string& relative_path,
                                          std::string_view content,
                                          const std::string& index_field) {
  if (!ValidRelativePath(relative_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact path must be relative, without '..': \"", relative_path, "\""));
  }
  if (ReservedFields().count(index_field) > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("index field \"", index_field, "\" is owned by the store"));
  }
  absl::StatusOr<std::unique_ptr<LockGuard>> lock = LockGuard::Acquire(dir_);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::vector<IndexLine>> lines = ReadIndex(IndexPath());
  if (!lines.ok()) return lines.status();
  IndexLine* line = FindById(*lines, id);
  if (line == nullptr) {
    return absl::NotFoundError(absl::StrCat("no finding \"", id, "\" in ", IndexPath()));
  }
  std::string rel = absl::StrCat(id, "/", relative_path);
  fs::path path = fs::path(dir_) / rel;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", path.parent_path().string(), ": ", ec.message()));
  }
  absl::Status status = WriteFileAtomically(path.string(), content);
  if (!status.ok() || index_field.empty()) return status;
  line->entry[index_field] = rel;
  return RewriteIndex(dir_, *lines);
}

absl::StatusOr<std::vector<std::string>> FindingsStore::SetAsideCorruptLines() {
  absl::StatusOr<std::unique_ptr<LockGuard>> lock = LockGuard::Acquire(dir_);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::vector<IndexLine>> lines = ReadIndex(IndexPath());
  if (!lines.ok()) return lines.status();
  std::vector<std::string> moved;
  for (const IndexLine& line : *lines) {
    if (line.ok) continue;
    moved.push_back(absl::StrCat(IndexPath(), ":", line.line, ": ", line.error, "; moved to ", dir_,
                                 "/", kCorruptName));
  }
  if (moved.empty()) return moved;
  absl::Status status = RewriteIndex(dir_, *lines);
  if (!status.ok()) return status;
  return moved;
}

absl::StatusOr<std::vector<nlohmann::json>> FindingsStore::Load() const {
  absl::StatusOr<std::vector<IndexLine>> lines = ReadIndex(IndexPath());
  if (!lines.ok()) return lines.status();
  std::vector<nlohmann::json> entries;
  for (IndexLine& line : *lines) {
    if (!line.ok) {
      return absl::DataLossError(
          absl::StrCat(IndexPath(), ":", line.line, ": corrupt index line: ", line.error));
    }
    SetGroup(&line.entry);  // an index written before groups, or by an older key
    entries.push_back(nlohmann::json::parse(line.entry.dump()));
  }
  return entries;
}

}  // namespace divfuzz::store
