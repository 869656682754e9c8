// Child processes that re-execute this binary: campaign workers, reducer
// jobs, artifact replays and `divfuzz repro`'s reducer process.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace divfuzz::fuzz {

struct SpawnOptions {
  std::map<std::string, std::string> env;  // set in the child
  std::string log;                         // its stdout and stderr; empty: inherited
  bool append_log = false;                 // else the log is truncated
  std::vector<std::string> unset;          // variables removed in the child
};

// Forks and re-executes /proc/self/exe with `args` (args[0] is its name). The
// child dies with this process (PR_SET_PDEATHSIG), even on kill -9, so a
// killed supervisor leaves no orphans that would race a resumed one. Returns
// the child's pid, or -1 when fork failed.
pid_t SpawnSelf(const std::vector<std::string>& args, const SpawnOptions& options = {});

// This process's own command line (/proc/self/cmdline), for a supervisor
// that runs its work again in a child.
std::vector<std::string> OwnCommandLine();

}  // namespace divfuzz::fuzz
