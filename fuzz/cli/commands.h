// The divfuzz tool's subcommands; each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace divfuzz::fuzz {

// A libFuzzer worker: argv is passed to LLVMFuzzerRunDriver as is.
int RunFuzzWorker(int argc, char** argv);
// The same for argv that is libFuzzer's entirely (its -merge/-fork children).
int RunLibFuzzer(int argc, char** argv);
// Each subcommand of commands.def: `divfuzz NAME args... [flags]`.
#define DIVFUZZ_COMMAND(name, Entry, synopsis, summary, flags) \
  int Entry(const std::vector<std::string>& args);
#include "fuzz/cli/commands.def"

}  // namespace divfuzz::fuzz
