// What `divfuzz help`, `divfuzz help COMMAND` and `divfuzz COMMAND --help`
// print: the commands with their synopses, and each command's own flags (help
// text and default from the flag's single definition).
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace divfuzz::fuzz {

// One line of fuzz/cli/commands.def.
struct CommandInfo {
  absl::string_view name;
  absl::string_view synopsis;  // "campaign [flags]"
  absl::string_view summary;   // what it does, exit codes
  std::vector<absl::string_view> flags;
  // The entry point, called with the arguments after the flags; null for
  // the commands main() answers before parsing flags (fuzz, help).
  int (*run)(const std::vector<std::string>& args) = nullptr;
};

// Every command of fuzz/cli/commands.def, in the order `divfuzz help` lists them.
const std::vector<CommandInfo>& Commands();
const CommandInfo* FindCommand(absl::string_view name);

// The commands and their synopses.
std::string GlobalHelp();
// One command: synopsis, summary, and only its flags.
std::string CommandHelp(const CommandInfo& command);

// The reference of every command and flag as Markdown (docs/CLI.md): the
// same synopses, summaries, flags, defaults and help as the two above.
std::string MarkdownReference();

// Handles the help forms before Abseil parses the command line: `help`,
// `help COMMAND`, `help --markdown`, `--help`/`-help`/`-h` alone or after a
// command. Returns the exit code when argv asked for help (0, or 2 for an
// unknown command), else -1.
int MaybePrintHelp(int argc, char** argv);

}  // namespace divfuzz::fuzz
