#include "tests/test_util.h"

#include <ftw.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "absl/strings/str_split.h"

namespace divfuzz::testing {

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  EXPECT_TRUE(out.good()) << path;
}

namespace {

int RemoveOne(const char* path, const struct stat*, int, struct FTW*) {
  ::remove(path);
  return 0;
}

// Removes the folders TempDir made for a test that passed (or was skipped);
// a failed test's are kept, and named, for inspection.
class TempDirCleaner : public ::testing::EmptyTestEventListener {
 public:
  void Add(const std::string& dir) { dirs_.push_back(dir); }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    const bool keep = info.result()->Failed() || std::getenv("DIVFUZZ_KEEP_TEST_DIRS") != nullptr;
    for (const std::string& dir : dirs_) {
      if (keep) {
        std::cerr << "kept " << dir << "\n";
      } else {
        // nftw rather than std::filesystem::remove_all (see TempDir).
        ::nftw(dir.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS);
      }
    }
    dirs_.clear();
  }

 private:
  std::vector<std::string> dirs_;
};

TempDirCleaner& Cleaner() {
  // gtest owns (and deletes) appended listeners.
  static TempDirCleaner* cleaner = [] {
    auto* c = new TempDirCleaner;
    ::testing::UnitTest::GetInstance()->listeners().Append(c);
    return c;
  }();
  return *cleaner;
}

}  // namespace

std::string TempDir(const std::string& name) {
  // mkdtemp rather than std::filesystem: libtorch.so exports its own copy of
  // std::filesystem symbols, and that remove_all crashes here.
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string pattern = ::testing::TempDir() + "divfuzz-" + info->name() + "-" + name + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed for " << pattern;
    return "/tmp";
  }
  Cleaner().Add(buf.data());
  return std::string(buf.data());
}

CommandRun RunShell(const std::string& command) {
  CommandRun run;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) run.output.append(buf, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

std::string Python() {
  const char* py = std::getenv("DIVFUZZ_PYTHON");
  return py != nullptr && *py != '\0' ? py : "python3";
}

store::FindingHit HitFor(const std::string& signature, const std::string& targets,
                         const std::string& tier) {
  const std::vector<std::string> f = absl::StrSplit(signature, '|');
  store::FindingHit hit;
  hit.signature = signature;
  hit.root_op = f.size() > 0 ? f[0] : "";
  hit.dtype = f.size() > 1 ? f[1] : "";
  hit.divergence_class = f.size() > 2 ? f[2] : "";
  hit.wrong_side = f.size() > 3 ? f[3] : "undecided";
  hit.tier = tier;
  hit.targets = targets;
  return hit;
}

}  // namespace divfuzz::testing
