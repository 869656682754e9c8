#include "fuzz/campaign/spawn.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace divfuzz::fuzz {

pid_t SpawnSelf(const std::vector<std::string>& args, const SpawnOptions& options) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The campaign's stop handlers are no business of the child.
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (!options.log.empty()) {
    FILE* log = std::fopen(options.log.c_str(), options.append_log ? "a" : "w");
    if (log != nullptr) {
      dup2(fileno(log), STDOUT_FILENO);
      dup2(fileno(log), STDERR_FILENO);
    }
  }
  for (const std::string& k : options.unset) unsetenv(k.c_str());
  for (const auto& [k, v] : options.env) setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  std::perror("divfuzz: cannot re-execute /proc/self/exe");
  _exit(127);
}

std::vector<std::string> OwnCommandLine() {
  std::vector<std::string> args;
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  for (std::string a; std::getline(f, a, '\0');) args.push_back(a);
  return args;
}

}  // namespace divfuzz::fuzz
