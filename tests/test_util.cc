#include "tests/test_util.h"

#include <filesystem>

namespace divfuzz::testing {

std::string TempDir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path p = std::filesystem::path(::testing::TempDir()) / "divfuzz" /
                            (std::string(info->test_suite_name()) + "." + info->name() + "." + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

}  // namespace divfuzz::testing
