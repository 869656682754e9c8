#include "fuzz/crash_hang_triage.h"

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

}  // namespace
}  // namespace divfuzz::fuzz
