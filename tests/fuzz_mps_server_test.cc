// The campaign's private MPS server (fuzz/campaign/mps_server.h). No CI machine has a
// GPU or the driver's nvidia-cuda-mps-control, so these tests put a stand-in
// of that program first on PATH: a shell script that speaks its protocol
// (`-f` runs the daemon in the foreground with a control pipe in
// $CUDA_MPS_PIPE_DIRECTORY; without arguments it is a client passing its
// stdin's command to the daemon) and logs what it was given. The real daemon
// is exercised on the GPU host (issue 18's note).
#include "fuzz/campaign/mps_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

namespace fs = std::filesystem;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The stand-in control program in `bin`, logging to `log`. `daemon_body`
// replaces the daemon's loop (to make one that fails at start).
void WriteFakeControl(const std::string& bin, const std::string& log,
                      const std::string& daemon_body = "") {
  fs::create_directories(bin);
  const std::string loop =
      "mkfifo \"$P/control\"\n"
      "while true; do\n"
      "  read -r cmd < \"$P/control\" || continue\n"
      "  echo \"daemon got: $cmd\" >> " + log + "\n"
      "  if [ \"$cmd\" = quit ]; then rm -f \"$P/control\"; exit 0; fi\n"
      "done\n";
  testing::WriteTextFile(
      bin + "/nvidia-cuda-mps-control",
      "#!/bin/sh\n"
      "P=\"$CUDA_MPS_PIPE_DIRECTORY\"\n"
      "if [ \"$1\" = -f ]; then\n"
      "  echo \"daemon pipe=$P logs=$CUDA_MPS_LOG_DIRECTORY gpus=$CUDA_VISIBLE_DEVICES\" >> " + log +
          "\n" +
          (daemon_body.empty() ? loop : daemon_body) +
          "fi\n"
          "[ -p \"$P/control\" ] || exit 1\n"
          "cat > \"$P/control\"\n");
  fs::permissions(bin + "/nvidia-cuda-mps-control", fs::perms::owner_all);
}

// PATH and CUDA_MPS_PIPE_DIRECTORY as a test needs them, restored after.
class MpsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    if (const char* p = std::getenv("CUDA_MPS_PIPE_DIRECTORY")) old_pipe_ = p;
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
    dir_ = testing::TempDir("mps");
    bin_ = dir_ + "/bin";
    log_ = dir_ + "/control.log";
    work_ = dir_ + "/campaign";
    fs::create_directories(work_ + "/logs");
  }
  void TearDown() override {
    setenv("PATH", old_path_.c_str(), 1);
    if (!old_pipe_.empty()) setenv("CUDA_MPS_PIPE_DIRECTORY", old_pipe_.c_str(), 1);
  }
  void UseFake() { setenv("PATH", (bin_ + ":" + old_path_).c_str(), 1); }
  void HideControl() { setenv("PATH", bin_.c_str(), 1); }  // bin_ holds no control program

  std::string old_path_, old_pipe_, dir_, bin_, log_, work_;
};

TEST_F(MpsServerTest, StartsAPrivateDaemonInItsOwnPipeFolderAndStopsIt) {
  WriteFakeControl(bin_, log_);
  UseFake();
  absl::StatusOr<fuzz::MpsServer> s = fuzz::MpsServer::Start("auto", work_, /*uses_cuda=*/true);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->running()) << s->description();
  EXPECT_EQ(s->pipe_dir(), fuzz::MpsPipeDirFor(work_));
  EXPECT_LT(s->pipe_dir().size(), 100u);  // a socket path's limit is 107
  EXPECT_EQ(fuzz::MpsPipeDirFor(work_), fuzz::MpsPipeDirFor(work_ + "/../campaign"));
  EXPECT_NE(fuzz::MpsPipeDirFor(work_), fuzz::MpsPipeDirFor(dir_ + "/other"));
  EXPECT_TRUE(Contains(s->description(), s->pipe_dir())) << s->description();
  EXPECT_TRUE(fs::exists(s->pipe_dir() + "/control"));
  // The daemon got the pipe folder and the campaign's log folder.
  EXPECT_TRUE(Contains(ReadAll(log_), "daemon pipe=" + s->pipe_dir() + " logs=" + work_ +
                                          "/logs/mps"))
      << ReadAll(log_);
  s->Stop();
  EXPECT_FALSE(s->running());
  EXPECT_TRUE(Contains(ReadAll(log_), "daemon got: quit")) << ReadAll(log_);
  EXPECT_FALSE(fs::exists(fuzz::MpsPipeDirFor(work_) + "/control"));
}

// Several GPUs: one server a GPU, each daemon seeing its GPU alone, with a
// pipe folder, logs and daemon.pid of its own; stopping one leaves the other.
TEST_F(MpsServerTest, OneServerAGpuEachWithItsOwnPipeLogsAndDevice) {
  WriteFakeControl(bin_, log_);
  UseFake();
  setenv("CUDA_VISIBLE_DEVICES", "0,3", 1);  // the campaign's; the daemons get one each
  absl::StatusOr<fuzz::MpsServer> a = fuzz::MpsServer::Start("on", work_, true, "0");
  absl::StatusOr<fuzz::MpsServer> b = fuzz::MpsServer::Start("on", work_, true, "3");
  unsetenv("CUDA_VISIBLE_DEVICES");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->running() && b->running());
  EXPECT_EQ(a->pipe_dir(), fuzz::MpsPipeDirFor(work_) + "-gpu0");
  EXPECT_EQ(b->pipe_dir(), fuzz::MpsPipeDirFor(work_, "3"));
  EXPECT_NE(a->pipe_dir(), b->pipe_dir());
  const std::string log = ReadAll(log_);
  EXPECT_TRUE(Contains(log, "daemon pipe=" + a->pipe_dir() + " logs=" + work_ +
                                "/logs/mps/gpu0 gpus=0\n"))
      << log;
  EXPECT_TRUE(Contains(log, "daemon pipe=" + b->pipe_dir() + " logs=" + work_ +
                                "/logs/mps/gpu3 gpus=3\n"))
      << log;
  EXPECT_GT(std::atoi(ReadAll(work_ + "/logs/mps/gpu3/daemon.pid").c_str()), 0);
  EXPECT_TRUE(Contains(a->description(), "on GPU 0")) << a->description();
  a->Stop();
  EXPECT_FALSE(fs::exists(a->pipe_dir() + "/control"));
  EXPECT_TRUE(fs::exists(b->pipe_dir() + "/control"));  // GPU 3's goes on
  b->Stop();
}

TEST_F(MpsServerTest, ADaemonLeftByAKilledCampaignIsStoppedBeforeANewOneStarts) {
  WriteFakeControl(bin_, log_);
  UseFake();
  // A daemon that is not this process's child, as after kill -9.
  const std::string pipe = fuzz::MpsPipeDirFor(work_);
  fs::create_directories(pipe);
  const testing::CommandRun started = testing::RunShell(
      "CUDA_MPS_PIPE_DIRECTORY=" + pipe + " setsid " + bin_ +
      "/nvidia-cuda-mps-control -f >/dev/null 2>&1 & for i in $(seq 50); do [ -p " + pipe +
      "/control ] && exit 0; sleep 0.1; done; exit 1");
  ASSERT_EQ(started.exit_code, 0) << started.output;
  absl::StatusOr<fuzz::MpsServer> s = fuzz::MpsServer::Start("on", work_, true);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->running());
  const std::string log = ReadAll(log_);
  // The old one quit; then the new one started.
  const size_t quit = log.find("daemon got: quit");
  ASSERT_NE(quit, std::string::npos) << log;
  EXPECT_NE(log.find("daemon pipe=", quit), std::string::npos) << log;
  s->Stop();
}

TEST_F(MpsServerTest, WhereNoServerCanStartAutoGoesWithoutAndOnIsAnError) {
  // Not on PATH.
  HideControl();
  absl::StatusOr<fuzz::MpsServer> s = fuzz::MpsServer::Start("auto", work_, true);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->running());
  EXPECT_TRUE(Contains(s->description(), "not on PATH")) << s->description();
  absl::StatusOr<fuzz::MpsServer> on = fuzz::MpsServer::Start("on", work_, true);
  ASSERT_FALSE(on.ok());
  EXPECT_TRUE(Contains(std::string(on.status().message()), "nvidia-cuda-mps-control is not on PATH"))
      << on.status();

  // A daemon that fails at start: its output is in the reason.
  WriteFakeControl(bin_, log_, "echo 'cannot open the GPU' ; exit 1\n");
  UseFake();
  s = fuzz::MpsServer::Start("auto", work_, true);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->running());
  EXPECT_TRUE(Contains(s->description(), "cannot open the GPU")) << s->description();
  on = fuzz::MpsServer::Start("on", work_, true);
  ASSERT_FALSE(on.ok());
  EXPECT_TRUE(Contains(std::string(on.status().message()), "cannot open the GPU")) << on.status();

  // No cuda target: nothing to share; on asks for what cannot be.
  s = fuzz::MpsServer::Start("auto", work_, /*uses_cuda=*/false);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->running());
  EXPECT_EQ(s->description(), "");
  on = fuzz::MpsServer::Start("on", work_, false);
  ASSERT_FALSE(on.ok());
  EXPECT_TRUE(Contains(std::string(on.status().message()), "needs a cuda target"));

  // The user's own server is used as it is.
  setenv("CUDA_MPS_PIPE_DIRECTORY", "/tmp/their-mps", 1);
  s = fuzz::MpsServer::Start("on", work_, true);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->running());
  EXPECT_TRUE(Contains(s->description(), "CUDA_MPS_PIPE_DIRECTORY=/tmp/their-mps"));
  unsetenv("CUDA_MPS_PIPE_DIRECTORY");

  // off, and a value that is none of the three.
  s = fuzz::MpsServer::Start("off", work_, true);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->running());
  absl::StatusOr<fuzz::MpsServer> bad = fuzz::MpsServer::Start("yes", work_, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(std::string(bad.status().message()), "--mps must be auto, on or off"));
}

}  // namespace
}  // namespace divfuzz
