#include "fuzz/campaign/restart_corpus.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"

namespace divfuzz::fuzz {
namespace fs = std::filesystem;
namespace {

std::vector<fs::path> Files(const std::string& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());  // the same sample for the same seed
  return out;
}

bool LinkOrCopy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_hard_link(from, to, ec);
  if (!ec) return true;
  ec.clear();
  // A copy appears under a temporary name first: the worker reading the
  // folder never sees a partial input.
  const fs::path tmp = to.string() + ".tmp";
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(tmp, to, ec);
  return !ec;
}

}  // namespace

size_t CountFiles(const std::string& dir) { return Files(dir).size(); }

void RemoveCorpusFolder(const std::string& dir) {
  for (const fs::path& f : Files(dir)) ::unlink(f.c_str());
  ::rmdir(dir.c_str());
}

absl::StatusOr<size_t> SampleCorpus(const std::string& corpus, const std::string& dir,
                                    size_t count, uint64_t seed) {
  RemoveCorpusFolder(dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  std::vector<fs::path> files = Files(corpus);
  std::shuffle(files.begin(), files.end(), std::mt19937_64(seed));
  size_t linked = 0;
  for (size_t i = 0; i < files.size() && linked < count; ++i) {
    if (LinkOrCopy(files[i], fs::path(dir) / files[i].filename())) ++linked;
  }
  return linked;
}

size_t MergeInto(const std::string& from, const std::string& corpus) {
  size_t merged = 0;
  for (const fs::path& f : Files(from)) {
    const fs::path to = fs::path(corpus) / f.filename();
    std::error_code ec;
    if (fs::exists(to, ec) || f.extension() == ".tmp") continue;
    if (LinkOrCopy(f, to)) ++merged;
  }
  return merged;
}

}  // namespace divfuzz::fuzz
