// The in-flight input record (fuzz/harness/inflight.h): what a worker was running
// survives the worker's death by SIGKILL, and a record read back is whole.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz/campaign/artifact_files.h"
#include "fuzz/harness/inflight.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace divfuzz::fuzz {
namespace {

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

TEST(Inflight, TheInputOfAProcessKilledMidRunIsReadBack) {
  const std::string path = testing::TempDir("inflight") + "/worker-0";
  const std::string input = "divfuzz v1\ninput %x: f32[2] = fill(1)\n%y = aten::log2(%x)\n";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto record = InflightRecord::Open(path, 1 << 20);
    if (!record.ok()) _exit(3);
    (*record)->Begin(Bytes("an earlier input"), 16);
    (*record)->End();
    (*record)->Begin(Bytes(input), input.size());
    raise(SIGKILL);  // no destructor, no handler, no flush
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_EQ(ReadInflight(path), input);
  ClearInflight(path);
  EXPECT_EQ(ReadInflight(path), std::nullopt);
}

TEST(Inflight, NoInputBetweenRunsAndNoneOverTheCapacity) {
  const std::string path = testing::TempDir("inflight") + "/worker-0";
  auto record = InflightRecord::Open(path, 8);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(ReadInflight(path), std::nullopt);
  (*record)->Begin(Bytes("12345678"), 8);
  EXPECT_EQ(ReadInflight(path), "12345678");
  (*record)->End();
  EXPECT_EQ(ReadInflight(path), std::nullopt);
  (*record)->Begin(Bytes("123456789"), 9);
  EXPECT_EQ(ReadInflight(path), std::nullopt);
}

TEST(Inflight, AMissingOrForeignFileHoldsNoInput) {
  const std::string dir = testing::TempDir("inflight");
  EXPECT_EQ(ReadInflight(dir + "/absent"), std::nullopt);
  testing::WriteTextFile(dir + "/foreign", std::string(200, '\xff'));
  EXPECT_EQ(ReadInflight(dir + "/foreign"), std::nullopt);
  ClearInflight(dir + "/absent");  // no file is made
  EXPECT_FALSE(std::ifstream(dir + "/absent").good());
  const auto made = InflightRecord::Open(dir + "/no/such/folder/worker-0", 64);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("/no/such/folder/worker-0"), std::string::npos)
      << made.status();
}

// A worker whose CUDA side carried switches (--cuda_variants) dies: its
// artifact's replay must run those targets (session 34's rotation: crashes
// under cuda+magma replayed on plain cuda "did not recur").
TEST(Inflight, ADeadWorkersSwitchesTravelWithItsArtifact) {
  const std::string dir = testing::TempDir("inflight_targets");
  const std::string crashes = dir + "/crashes";
  std::filesystem::create_directories(crashes);
  const std::string input = "divfuzz v1\ninput %x: f32[2,2] = fill(1)\n%y = aten::linalg_svd(%x)\n";
  auto record = InflightRecord::Open(dir + "/worker-1", 1 << 20);
  ASSERT_TRUE(record.ok()) << record.status();
  // libFuzzer wrote its own artifact of the input: the targets go beside it.
  testing::WriteTextFile(crashes + "/crash-0123", input);
  (*record)->Begin(Bytes(input), input.size());
  EXPECT_EQ(SaveInflightArtifact(dir + "/worker-1", crashes, "crash-", "cpu,cuda+magma"), "");
  EXPECT_EQ(ArtifactTargets(crashes + "/crash-0123"), "cpu,cuda+magma");
  // No artifact of these bytes: the in-flight one is saved, with its targets.
  const std::string other = input + "output %y\n";
  (*record)->Begin(Bytes(other), other.size());
  const std::string saved = SaveInflightArtifact(dir + "/worker-1", crashes, "crash-",
                                                 "cpu,cuda+tf32");
  ASSERT_FALSE(saved.empty());
  EXPECT_EQ(ReadBytes(saved), other);
  EXPECT_EQ(ArtifactTargets(saved), "cpu,cuda+tf32");
  // A worker without switches leaves none; a targets file is no artifact.
  EXPECT_EQ(ArtifactTargets(crashes + "/crash-none"), "");
  EXPECT_TRUE(KillerArtifact("crash-0123"));
  EXPECT_FALSE(KillerArtifact(std::string("crash-0123") + kTargetsSuffix));
}

}  // namespace
}  // namespace divfuzz::fuzz
