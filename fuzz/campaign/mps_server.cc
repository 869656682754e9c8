#include "fuzz/campaign/mps_server.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace divfuzz::fuzz {
namespace fs = std::filesystem;
namespace {

constexpr char kControl[] = "nvidia-cuda-mps-control";

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "", ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs the control program as a client: `command` on its stdin (one line),
// with the daemon found through `pipe_dir`. Returns its exit status (-1: it
// could not run or did not finish within `seconds`).
int ControlCommand(const std::string& control, const std::string& pipe_dir,
                   const std::string& command, int seconds) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(fds[0], STDIN_FILENO);
    close(fds[0]);
    close(fds[1]);
    // Its replies ("Cannot find MPS control daemon process" once the daemon
    // is gone) are not the campaign's output.
    if (FILE* null = std::fopen("/dev/null", "w")) {
      dup2(fileno(null), STDOUT_FILENO);
      dup2(fileno(null), STDERR_FILENO);
    }
    setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir.c_str(), 1);
    execl(control.c_str(), control.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[0]);
  const std::string line = command + "\n";
  (void)!write(fds[1], line.data(), line.size());
  close(fds[1]);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string l; std::getline(in, l);) all.push_back(l);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    absl::StrAppend(&out, "\n  ", all[i]);
  }
  return out;
}

}  // namespace

std::string MpsPipeDirFor(const std::string& work, const std::string& gpu) {
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(work, ec), ec);
  return absl::StrFormat("/tmp/divfuzz-mps-%d-%016x%s", getuid(),
                         std::hash<std::string>{}(abs.string()),
                         gpu.empty() ? "" : absl::StrCat("-gpu", gpu));
}

absl::StatusOr<MpsServer> MpsServer::Start(const std::string& mode, const std::string& work,
                                           bool uses_cuda, const std::string& gpu) {
  MpsServer s;
  if (mode != "auto" && mode != "on" && mode != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("--mps must be auto, on or off, not \"", mode, "\""));
  }
  if (mode == "off") {
    s.description_ = "MPS off (--mps=off): the workers time-slice the GPU";
    return s;
  }
  if (!uses_cuda) {
    if (mode == "on") return absl::InvalidArgumentError("--mps=on needs a cuda target");
    return s;  // nothing to share
  }
  if (const char* theirs = std::getenv("CUDA_MPS_PIPE_DIRECTORY"); theirs && *theirs) {
    s.description_ = absl::StrCat("MPS: the environment's server (CUDA_MPS_PIPE_DIRECTORY=",
                                  theirs, ")");
    return s;
  }
  s.control_ = FindOnPath(kControl);
  if (s.control_.empty()) {
    if (mode == "on") {
      return absl::FailedPreconditionError(absl::StrCat(
          "--mps=on: ", kControl, " is not on PATH (it comes with the NVIDIA driver)"));
    }
    s.description_ = absl::StrCat("MPS unavailable (", kControl,
                                  " not on PATH): the workers time-slice the GPU");
    return s;
  }
  s.pipe_dir_ = MpsPipeDirFor(work, gpu);
  s.log_dir_ = (fs::path(work) / "logs" / "mps").string();
  if (!gpu.empty()) s.log_dir_ = (fs::path(s.log_dir_) / ("gpu" + gpu)).string();
  std::error_code ec;
  fs::create_directories(s.pipe_dir_, ec);
  ::chmod(s.pipe_dir_.c_str(), 0700);
  fs::create_directories(s.log_dir_, ec);
  // A daemon a killed campaign left in this folder's pipe: stop it, so this
  // one starts with the campaign's own logs and dies with it.
  if (fs::exists(fs::path(s.pipe_dir_) / "control", ec)) {
    (void)ControlCommand(s.control_, s.pipe_dir_, "quit", 10);
    for (int i = 0; i < 50 && fs::exists(fs::path(s.pipe_dir_) / "control", ec); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  const std::string out = (fs::path(s.log_dir_) / "control.out").string();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed starting the MPS control daemon");
  if (pid == 0) {
    // Foreground mode, so it is our child and dies with the campaign, even
    // on kill -9 (it then stops its server as on quit).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    setsid();
    if (FILE* f = std::fopen(out.c_str(), "w")) {
      dup2(fileno(f), STDOUT_FILENO);
      dup2(fileno(f), STDERR_FILENO);
    }
    setenv("CUDA_MPS_PIPE_DIRECTORY", s.pipe_dir_.c_str(), 1);
    setenv("CUDA_MPS_LOG_DIRECTORY", s.log_dir_.c_str(), 1);
    if (!gpu.empty()) setenv("CUDA_VISIBLE_DEVICES", gpu.c_str(), 1);
    execl(s.control_.c_str(), s.control_.c_str(), "-f", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Ready once its control socket exists.
  bool ready = false;
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 100 && !ready; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    ready = fs::exists(fs::path(s.pipe_dir_) / "control", ec);
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!ready) {
    if (!exited) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    const std::string why = absl::StrCat(
        kControl, " -f did not start (", exited ? "it exited" : "no control socket in 10 s",
        "; its output, ", out, ":", Tail(out, 5), Tail((fs::path(s.log_dir_) / "control.log").string(), 5),
        ")");
    if (mode == "on") return absl::FailedPreconditionError(absl::StrCat("--mps=on: ", why));
    s.description_ = absl::StrCat("MPS unavailable: ", why, "; the workers time-slice the GPU");
    s.pipe_dir_.clear();
    return s;
  }
  s.daemon_ = pid;
  // Where a fault injection (scripts/gpu/multi_gpu.sh) finds this GPU's server.
  std::ofstream(fs::path(s.log_dir_) / "daemon.pid") << pid << "\n";
  s.description_ = absl::StrCat("MPS: a private server for this campaign's processes",
                                gpu.empty() ? "" : absl::StrCat(" on GPU ", gpu), " (pipe ",
                                s.pipe_dir_, ", logs ", s.log_dir_, "; --mps=off to go without)");
  return s;
}

MpsServer::MpsServer(MpsServer&& other) noexcept { *this = std::move(other); }

MpsServer& MpsServer::operator=(MpsServer&& other) noexcept {
  if (this != &other) {
    Stop();
    daemon_ = other.daemon_;
    control_ = std::move(other.control_);
    pipe_dir_ = std::move(other.pipe_dir_);
    log_dir_ = std::move(other.log_dir_);
    description_ = std::move(other.description_);
    other.daemon_ = -1;
  }
  return *this;
}

MpsServer::~MpsServer() { Stop(); }

void MpsServer::Stop(int seconds) {
  if (daemon_ <= 0) return;
  (void)ControlCommand(control_, pipe_dir_, "quit", seconds);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(daemon_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(daemon_, SIGKILL);
      waitpid(daemon_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  daemon_ = -1;
}

}  // namespace divfuzz::fuzz
