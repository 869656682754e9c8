// Issue 32: the campaign summary counts the nodes it declined to run, per op
// (never run, so never compared: a hang or crash on valid input stays unseen).
#include <sstream>
#include <string>

#include "fuzz/campaign/status.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/report_fixture.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

TEST(CampaignSummary, CountsDeclinesPerOp) {
  const std::string root = testing::TempDir("summary-declines");
  testing::MakeFolder(root + "/findings");
  testing::MakeFolder(root + "/campaign");
  std::ostringstream out;
  fuzz::PrintSummary(
      root + "/findings", root + "/campaign", 100, 10, 0,
      nlohmann::json{{"declined_by_op", {{"aten::linalg_svdvals", 4}, {"aten::linalg_eig", 1}}}},
      out);
  EXPECT_NE(out.str().find("nodes declined, not run (inputs the kernel does not survive): 5, by "
                           "op: aten::linalg_eig=1 aten::linalg_svdvals=4\n"),
            std::string::npos)
      << out.str();
  std::ostringstream none;
  fuzz::PrintSummary(root + "/findings", root + "/campaign", 100, 10, 0, nlohmann::json::object(),
                     none);
  EXPECT_NE(none.str().find("nodes declined, not run (inputs the kernel does not survive): 0\n"),
            std::string::npos)
      << none.str();
}

}  // namespace
}  // namespace divfuzz
