#include "fuzz/harness/crash_hang_triage.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace divfuzz::fuzz {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// What the campaign makes of an artifact that replayed alone: a crash that
// did not recur stays a (divergence-tier) finding; a slow input, an input
// caught in another client's CUDA fault, and, on the MPS server, a timeout
// that ran to its end alone are none. Whatever failed again alone is one.
TEST(WhyNotAFinding, ArtifactsThatRanCleanlyAlone) {
  const std::string crashes = "campaign/crashes/";
  EXPECT_THAT(WhyNotAFinding(crashes + "crash-ab", false, false, true), IsEmpty());
  EXPECT_THAT(WhyNotAFinding(crashes + "slow-unit-ab", false, false, false),
              HasSubstr("ran to its end on replay"));
  EXPECT_THAT(WhyNotAFinding(crashes + "mps-fault-inflight-ab", false, false, true),
              HasSubstr("another client's CUDA fault"));
  EXPECT_THAT(WhyNotAFinding(crashes + "timeout-ab", false, false, true),
              HasSubstr("waited on another client's kernels"));
  // Without MPS a timeout that did not recur is still filed.
  EXPECT_THAT(WhyNotAFinding(crashes + "timeout-ab", false, false, false), IsEmpty());
  for (const char* name : {"timeout-ab", "mps-fault-inflight-ab", "slow-unit-ab", "crash-ab"}) {
    EXPECT_THAT(WhyNotAFinding(crashes + name, /*hung=*/true, false, true), IsEmpty()) << name;
    EXPECT_THAT(WhyNotAFinding(crashes + name, false, /*crashed=*/true, true), IsEmpty()) << name;
  }
}

// While the workers share the MPS server, only a hang on the GPU waits for
// `divfuzz repro` after the campaign; a CPU hang, a crash, and every bucket
// of a campaign without MPS are reduced as they come.
TEST(ReproWaitsForTheEnd, OnlyGpuHangsOnMps) {
  auto entry = [](const char* cls, const char* side) {
    return nlohmann::json{{"class", cls}, {"wrong_side", side}};
  };
  EXPECT_TRUE(ReproWaitsForTheEnd(entry("hang", "cuda"), true));
  EXPECT_TRUE(ReproWaitsForTheEnd(entry("hang", "both"), true));
  EXPECT_FALSE(ReproWaitsForTheEnd(entry("hang", "cpu"), true));
  EXPECT_FALSE(ReproWaitsForTheEnd(entry("crash", "cuda"), true));
  EXPECT_FALSE(ReproWaitsForTheEnd(entry("tolerance", "cuda"), true));
  EXPECT_FALSE(ReproWaitsForTheEnd(entry("hang", "cuda"), false));
}

}  // namespace
}  // namespace divfuzz::fuzz
