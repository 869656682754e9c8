// divfuzz: a differential fuzzer for libtorch. See README.md.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "exec/plugins.h"
#include "fuzz/cli/command_help.h"
#include "fuzz/cli/commands.h"
#include "fuzz/exit_codes.h"
#include "fuzz/flags.h"
#include "fuzz/cli/given_flags.h"

int main(int argc, char** argv) {
  // Plugins register kernels, so they load before anything runs; workers and
  // helper processes inherit the variable.
  if (const char* plugins = std::getenv("DIVFUZZ_PLUGINS"); plugins != nullptr) {
    if (absl::Status s = divfuzz::exec::LoadPlugins(plugins); !s.ok()) {
      std::cerr << "divfuzz: DIVFUZZ_PLUGINS: " << s.message() << "\n";
      return 2;
    }
  }
  // libFuzzer parses its own -flags: hand them over before Abseil sees them.
  if (argc >= 2 && std::strcmp(argv[1], "fuzz") == 0) {
    // libFuzzer re-executes argv without "fuzz" for -merge and -fork
    // children; the variable marks those as workers too.
    setenv("DIVFUZZ_FUZZ_WORKER", "1", 1);
    return divfuzz::fuzz::RunFuzzWorker(argc, argv);
  }
  if (std::getenv("DIVFUZZ_FUZZ_WORKER") != nullptr) {
    return divfuzz::fuzz::RunLibFuzzer(argc, argv);
  }
  // Abseil's --help matches flags by file name and exits 1 ("No flags
  // matched"): divfuzz answers help itself, per command.
  if (const int rc = divfuzz::fuzz::MaybePrintHelp(argc, argv); rc >= 0) return rc;
  const std::string usage = divfuzz::fuzz::GlobalHelp();
  absl::SetProgramUsageMessage(usage);
  divfuzz::fuzz::NoteGivenFlags(argc, argv);
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() < 2) {
    std::cerr << usage;
    return divfuzz::fuzz::kExitCannotRun;
  }
  if (const std::string plugins = absl::GetFlag(FLAGS_plugins); !plugins.empty()) {
    if (absl::Status s = divfuzz::exec::LoadPlugins(plugins); !s.ok()) {
      std::cerr << "divfuzz: --plugins: " << s.message() << "\n";
      return 2;
    }
    setenv("DIVFUZZ_PLUGINS", plugins.c_str(), 1);
  }
  const std::string command = rest[1];
  const std::vector<std::string> args(rest.begin() + 2, rest.end());
  // fuzz/cli/commands.def: `fuzz` and `help` were answered above.
  if (const divfuzz::fuzz::CommandInfo* c = divfuzz::fuzz::FindCommand(command);
      c != nullptr && c->run != nullptr) {
    return c->run(args);
  }
  std::cerr << "divfuzz: unknown command '" << command << "'\n\n" << usage;
  return divfuzz::fuzz::kExitCannotRun;
}
