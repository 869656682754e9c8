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
#include <random>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
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
      "severity", "count",     "first_seen", "last_seen", "targets", "detail",     "group",
      "merged_counts"};
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
  std::string id, signature;  // of an ok line
  // A line the fast path vouched for is parsed only when it is changed: the
  // index of a long campaign is megabytes, and every worker reads it.
  bool parsed = false;
  bool dirty = false;  // entry changed: written from entry, else from raw
  ordered_json entry;
};

// The id and signature of a line as SerializeIndex writes it (compact, "id"
// then "signature" first, a complete object), read without parsing the
// whole line; false for any other line, which then gets a full parse.
bool FastFields(absl::string_view raw, std::string* id, std::string* signature) {
  constexpr absl::string_view kId = "{\"id\":\"";
  constexpr absl::string_view kSignature = "\",\"signature\":\"";
  if (!absl::StartsWith(raw, kId) || raw.back() != '}') return false;
  const size_t id_end = raw.find('"', kId.size());
  if (id_end == absl::string_view::npos) return false;
  const absl::string_view id_text = raw.substr(kId.size(), id_end - kId.size());
  if (id_text.empty() || id_text.find('\\') != absl::string_view::npos) return false;
  if (raw.substr(id_end, kSignature.size()) != kSignature) return false;
  const size_t open = id_end + kSignature.size() - 1;  // the signature's opening quote
  bool escaped = false;
  for (size_t i = open + 1; i < raw.size(); ++i) {
    if (raw[i] == '\\') {
      escaped = true;
      ++i;
    } else if (raw[i] == '"') {
      const absl::string_view token = raw.substr(open, i - open + 1);
      if (!escaped) {
        *signature = std::string(token.substr(1, token.size() - 2));
      } else {
        try {
          *signature = nlohmann::json::parse(token).get<std::string>();
        } catch (const nlohmann::json::exception&) {
          return false;
        }
      }
      *id = std::string(id_text);
      return true;
    }
  }
  return false;
}

// Parses one line in full, deciding whether it is a usable entry.
void ParseLine(IndexLine& line) {
  line.parsed = true;
  line.ok = false;
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
      line.id = line.entry["id"].get<std::string>();
      line.signature = line.entry["signature"].get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    line.error = e.what();
  }
}

// The line's entry, parsed on first use; false (and the line no longer ok)
// when the full parse disagrees with the fast one.
bool Materialize(IndexLine& line) {
  if (!line.parsed) ParseLine(line);
  return line.ok;
}

// Parses index text into lines; blank lines are ignored. `full` parses every
// line (readers that hand entries out); otherwise a line in the store's own
// format is only scanned for its id and signature (the read-modify-write
// paths, which touch a line or two).
std::vector<IndexLine> ParseIndex(const std::string& text, bool full) {
  std::vector<IndexLine> lines;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (raw.find_first_not_of(" \t") == std::string_view::npos) continue;
    IndexLine line;
    line.line = number;
    line.raw = std::string(raw);
    if (!full && FastFields(raw, &line.id, &line.signature)) {
      line.ok = true;
    } else {
      ParseLine(line);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

struct Index {
  std::vector<IndexLine> lines;
  bool ends_with_newline = true;  // false: a write was cut short (or no file)
  bool exists = false;
};

absl::StatusOr<Index> ReadIndex(const std::string& path, bool full) {
  absl::StatusOr<std::optional<std::string>> text = ReadFileIfExists(path);
  if (!text.ok()) return text.status();
  Index index;
  if (!text->has_value()) return index;
  index.exists = true;
  index.ends_with_newline = (*text)->empty() || (*text)->back() == '\n';
  index.lines = ParseIndex(**text, full);
  return index;
}

std::string SerializeIndex(const std::vector<IndexLine>& lines) {
  std::string out;
  for (const IndexLine& line : lines) {
    if (!line.ok) continue;
    absl::StrAppend(&out, line.dirty ? line.entry.dump() : line.raw, "\n");
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
    // A line from a store written before groups gets one on its way through.
    if (line.ok && !line.dirty && line.raw.find("\"group\":\"") == std::string::npos &&
        Materialize(line)) {
      line.dirty = true;
    }
    if (line.ok && line.dirty) SetGroup(&line.entry);
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
    if (line.ok && line.id == id) return &line;
  }
  return nullptr;
}

// Appends one entry to the index under the lock (a new bucket): a line and
// an fsync instead of rewriting megabytes. A line cut short by a kill is
// ended first, so it stays one corrupt line for the next rewrite to set aside.
// Writes all of `content` to `fd` (retrying short writes and EINTR), fsyncs
// and closes it, closing it on failure too; `path` names it in errors.
absl::Status WriteSyncClose(int fd, std::string_view content, const std::string& path) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status status = ErrnoError("cannot write", path);
      ::close(fd);
      return status;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    absl::Status status = ErrnoError("cannot fsync", path);
    ::close(fd);
    return status;
  }
  if (::close(fd) != 0) return ErrnoError("cannot close", path);
  return absl::OkStatus();
}

absl::Status AppendIndexLine(const std::string& dir, const Index& index, const std::string& line) {
  const std::string path = absl::StrCat(dir, "/", kIndexName);
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot open", path);
  const std::string text = absl::StrCat(index.ends_with_newline ? "" : "\n", line, "\n");
  if (absl::Status status = WriteSyncClose(fd, text, path); !status.ok()) return status;
  return index.exists ? absl::OkStatus() : FsyncDir(dir);
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, std::string_view content) {
  std::string tmp = absl::StrCat(path, kAtomicWriteInfix, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  if (absl::Status status = WriteSyncClose(fd, content, tmp); !status.ok()) {
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
  absl::StatusOr<Index> index = ReadIndex(IndexPath(), /*full=*/false);
  if (!index.ok()) return index.status();
  const std::string now = NowUtc();
  bool changed = false;
  for (IndexLine& line : index->lines) {
    if (!line.ok) continue;
    auto it = hits_by_signature.find(line.signature);
    if (it == hits_by_signature.end() || it->second <= 0 || !Materialize(line)) continue;
    line.entry["count"] = line.entry.value("count", int64_t{0}) + it->second;
    line.entry["last_seen"] = now;
    line.dirty = true;
    changed = true;
  }
  return changed ? RewriteIndex(dir_, index->lines) : absl::OkStatus();
}

absl::StatusOr<RecordResult> FindingsStore::Record(const FindingHit& hit,
                                                   std::string_view program_text) {
  if (hit.signature.empty()) return absl::InvalidArgumentError("finding without a signature");
  absl::StatusOr<std::unique_ptr<LockGuard>> lock = LockGuard::Acquire(dir_);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<Index> index = ReadIndex(IndexPath(), /*full=*/false);
  if (!index.ok()) return index.status();
  std::vector<IndexLine>* lines = &index->lines;
  std::string now = NowUtc();

  for (IndexLine& line : *lines) {
    if (!line.ok || line.signature != hit.signature || !Materialize(line)) continue;
    int64_t count = line.entry.value("count", int64_t{0}) + 1;
    line.entry["count"] = count;
    line.entry["last_seen"] = now;
    line.dirty = true;
    absl::Status status = RewriteIndex(dir_, *lines);
    if (!status.ok()) return status;
    return RecordResult{line.id, false, count};
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
  line.parsed = true;
  line.dirty = true;
  line.id = id;
  line.signature = hit.signature;
  // A clean index gets the line appended; one with corrupt lines is
  // rewritten, which sets them aside.
  bool clean = true;
  for (const IndexLine& l : *lines) clean = clean && l.ok;
  if (clean) {
    status = AppendIndexLine(dir_, *index, e.dump());
  } else {
    lines->push_back(std::move(line));
    status = RewriteIndex(dir_, *lines);
  }
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
  absl::StatusOr<Index> index = ReadIndex(IndexPath(), /*full=*/false);
  if (!index.ok()) return index.status();
  std::vector<IndexLine>* lines = &index->lines;
  IndexLine* line = FindById(*lines, id);
  if (line != nullptr && !Materialize(*line)) line = nullptr;
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
  line->dirty = true;
  return RewriteIndex(dir_, *lines);
}

absl::StatusOr<std::vector<std::string>> FindingsStore::SetAsideCorruptLines() {
  absl::StatusOr<std::unique_ptr<LockGuard>> lock = LockGuard::Acquire(dir_);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<Index> index = ReadIndex(IndexPath(), /*full=*/true);
  if (!index.ok()) return index.status();
  std::vector<IndexLine>* lines = &index->lines;
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

absl::StatusOr<std::set<std::string>> FindingsStore::Signatures() const {
  absl::StatusOr<Index> index = ReadIndex(IndexPath(), /*full=*/false);
  if (!index.ok()) return index.status();
  std::set<std::string> signatures;
  for (const IndexLine& line : index->lines) {
    if (line.ok) signatures.insert(line.signature);
  }
  return signatures;
}

absl::StatusOr<std::vector<nlohmann::json>> FindingsStore::Load() const {
  absl::StatusOr<Index> index = ReadIndex(IndexPath(), /*full=*/true);
  if (!index.ok()) return index.status();
  std::vector<IndexLine>* lines = &index->lines;
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

absl::StatusOr<std::vector<ordered_json>> FindingsStore::LoadOrdered(
    std::vector<std::string>* skipped) const {
  absl::StatusOr<Index> index = ReadIndex(IndexPath(), /*full=*/true);
  if (!index.ok()) return index.status();
  std::vector<ordered_json> entries;
  for (IndexLine& line : index->lines) {
    if (!line.ok) {
      if (skipped != nullptr) {
        skipped->push_back(absl::StrCat(IndexPath(), ":", line.line, ": ", line.error));
      }
      continue;
    }
    SetGroup(&line.entry);
    entries.push_back(std::move(line.entry));
  }
  return entries;
}

absl::Status FindingsStore::Update(
    const std::function<absl::Status(std::vector<ordered_json>*)>& fn) {
  absl::StatusOr<std::unique_ptr<LockGuard>> lock = LockGuard::Acquire(dir_);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<Index> index = ReadIndex(IndexPath(), /*full=*/true);
  if (!index.ok()) return index.status();
  std::vector<ordered_json> entries;
  std::vector<IndexLine> corrupt;
  for (IndexLine& line : index->lines) {
    if (line.ok) {
      entries.push_back(std::move(line.entry));
    } else {
      corrupt.push_back(std::move(line));
    }
  }
  if (absl::Status s = fn(&entries); !s.ok()) return s;
  std::vector<IndexLine> lines = std::move(corrupt);
  for (ordered_json& e : entries) {
    IndexLine line;
    line.ok = line.parsed = line.dirty = true;
    line.id = e.value("id", "");
    line.signature = e.value("signature", "");
    line.entry = std::move(e);
    lines.push_back(std::move(line));
  }
  return RewriteIndex(dir_, lines);
}

absl::Status FindingsStore::Annotate(const std::string& field,
                                     const std::map<std::string, std::string>& value_by_id) {
  if (ReservedFields().count(field) > 0 || field.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("index field \"", field, "\" is owned by the store"));
  }
  return Update([&](std::vector<ordered_json>* entries) {
    for (ordered_json& e : *entries) {
      auto it = value_by_id.find(e.value("id", ""));
      if (it != value_by_id.end()) e[field] = it->second;
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::string> FindingsStore::StoreId() {
  const std::string path = absl::StrCat(dir_, "/.store_id");
  absl::StatusOr<std::unique_ptr<LockGuard>> lock = LockGuard::Acquire(dir_);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::optional<std::string>> text = ReadFileIfExists(path);
  if (!text.ok()) return text.status();
  if (text->has_value()) {
    std::string id(absl::StripAsciiWhitespace(**text));
    if (!id.empty()) return id;
  }
  std::random_device device;
  std::seed_seq seq{device(), device(), static_cast<unsigned>(::getpid()),
                    static_cast<unsigned>(std::time(nullptr))};
  std::mt19937_64 rng(seq);
  const std::string id = absl::StrFormat("%016x", rng());
  if (absl::Status s = WriteFileAtomically(path, id + "\n"); !s.ok()) return s;
  return id;
}

}  // namespace divfuzz::store
