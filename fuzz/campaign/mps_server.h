// One GPU shared by a campaign's processes through NVIDIA's Multi-Process
// Service. Without it the GPU time-slices between the processes' contexts,
// and every synchronization waits for a slice: on an H200, 8 workers did 210
// programs/s in all, 26 each, where one process alone does 1,900. With a
// private MPS server they did 780/s (issue 18). The campaign starts its own
// control daemon (nvidia-cuda-mps-control, from the driver) with a pipe
// folder of its own, so it needs no root and touches no other user's MPS;
// its children join it through CUDA_MPS_PIPE_DIRECTORY.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace divfuzz::fuzz {

class MpsServer {
 public:
  // `mode`: "auto" (start one where the targets use CUDA and the control
  // program is on PATH), "on" (the same, but an error where it cannot) or
  // "off". `work`: the campaign's folder (the server's logs go to
  // work/logs/mps; its pipe folder is named after it, under /tmp, since a
  // socket path has at most 107 characters). A server left by a campaign that
  // was killed -9 in the same folder is stopped first. `gpu` (a
  // CUDA_VISIBLE_DEVICES value): a server for that GPU alone (the daemon sees
  // only it, as NVIDIA's guide starts one a GPU; its clients then leave
  // CUDA_VISIBLE_DEVICES unset), with a pipe folder and logs/mps/gpu<gpu>/ of
  // its own, where daemon.pid names the control daemon; "": one for all.
  static absl::StatusOr<MpsServer> Start(const std::string& mode, const std::string& work,
                                         bool uses_cuda, const std::string& gpu = "");

  MpsServer() = default;
  MpsServer(MpsServer&& other) noexcept;
  MpsServer& operator=(MpsServer&& other) noexcept;
  MpsServer(const MpsServer&) = delete;
  MpsServer& operator=(const MpsServer&) = delete;
  ~MpsServer();

  bool running() const { return daemon_ > 0; }
  // Where clients find it (CUDA_MPS_PIPE_DIRECTORY); "" when not running.
  const std::string& pipe_dir() const { return pipe_dir_; }
  // A line for the campaign's header: what it started, or why not.
  const std::string& description() const { return description_; }

  // Tells the daemon to quit (it stops its server once the clients are gone)
  // and waits for it, at most `seconds`, then kills it.
  void Stop(int seconds = 10);

 private:
  pid_t daemon_ = -1;
  std::string control_;  // the control program's path
  std::string pipe_dir_, log_dir_;
  std::string description_;
};

// The pipe folder a campaign in `work` uses (absolute or not: it is resolved),
// for `gpu`'s server ("": the one for all GPUs).
std::string MpsPipeDirFor(const std::string& work, const std::string& gpu = "");

}  // namespace divfuzz::fuzz
