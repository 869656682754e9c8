#include "tests/test_util.h"

#include <stdlib.h>

#include <vector>

namespace divfuzz::testing {

std::string TempDir(const std::string& name) {
  // mkdtemp rather than std::filesystem::remove_all: libtorch.so exports its
  // own copy of std::filesystem symbols, and that remove_all crashes here.
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string pattern = ::testing::TempDir() + "divfuzz-" + info->name() + "-" + name + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed for " << pattern;
    return "/tmp";
  }
  return std::string(buf.data());
}

}  // namespace divfuzz::testing
