#include "fuzz/command_help.h"

#include <iostream>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fuzz/commands.h"

namespace divfuzz::fuzz {
namespace {

// Wraps `text` at `width` columns, each line indented by `indent` spaces.
std::string Wrap(absl::string_view text, size_t indent, size_t width = 100) {
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == absl::string_view::npos) end = text.size();
    const absl::string_view word = text.substr(pos, end - pos);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      absl::StrAppend(&out, std::string(indent, ' '), line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
    pos = end + 1;
  }
  if (!line.empty()) absl::StrAppend(&out, std::string(indent, ' '), line, "\n");
  return out;
}

// Flag help in flags.cc starts with the commands it concerns ("campaign: ",
// "minimize, repro: "); in one command's help that prefix says nothing.
absl::string_view WithoutCommandPrefix(absl::string_view help) {
  const size_t colon = help.find(": ");
  if (colon == absl::string_view::npos || colon > 30) return help;
  const absl::string_view prefix = help.substr(0, colon);
  const size_t word_end = prefix.find_first_of(" ,");
  if (FindCommand(prefix.substr(0, word_end)) == nullptr) return help;
  if (prefix.find_first_not_of("abcdefghijklmnopqrstuvwxyz_ ,-") != absl::string_view::npos) {
    return help;
  }
  return help.substr(colon + 2);
}

}  // namespace

const std::vector<CommandInfo>& Commands() {
  static const auto* commands = [] {
    auto* all = new std::vector<CommandInfo>;
    auto flag_names = [](absl::string_view flags) {
      return std::vector<absl::string_view>(absl::StrSplit(flags, ' ', absl::SkipEmpty()));
    };
#define DIVFUZZ_COMMAND(name, Entry, synopsis, summary, flags) \
  all->push_back({#name, synopsis, summary, flag_names(flags), &Entry});
#define DIVFUZZ_EARLY_COMMAND(name, synopsis, summary) \
  all->push_back({#name, synopsis, summary, {}, nullptr});
#include "fuzz/commands.def"
    return all;
  }();
  return *commands;
}

const CommandInfo* FindCommand(absl::string_view name) {
  for (const CommandInfo& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string GlobalHelp() {
  std::string out =
      "divfuzz: a differential fuzzer for libtorch (CPU vs CUDA, or CPU vs a float64 "
      "reference)\n\nUsage: divfuzz COMMAND [args] [flags]\n\nCommands:\n";
  for (const CommandInfo& c : Commands()) {
    absl::StrAppend(&out, "  divfuzz ", c.synopsis, "\n");
    const absl::string_view summary = c.summary.substr(0, c.summary.find(". ") + 1);
    absl::StrAppend(&out, Wrap(summary, 6));
  }
  absl::StrAppend(&out,
                  "\n'divfuzz help COMMAND' or 'divfuzz COMMAND --help' shows a command's flags;\n"
                  "'divfuzz --helpfull' lists every flag. Exit codes: 0 clean, 1 findings, 2 "
                  "could not run.\n");
  return out;
}

std::string CommandHelp(const CommandInfo& command) {
  std::string out = absl::StrCat("Usage: divfuzz ", command.synopsis, "\n\n");
  absl::StrAppend(&out, Wrap(command.summary, 2));
  if (command.flags.empty()) return out;
  absl::StrAppend(&out, "\nFlags:\n");
  for (absl::string_view name : command.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    const std::string def = flag->DefaultValue();
    absl::StrAppend(&out, "  --", name, " (default: ", def.empty() ? "unset" : def, ")\n");
    absl::StrAppend(&out, Wrap(WithoutCommandPrefix(flag->Help()), 6));
  }
  return out;
}

int MaybePrintHelp(int argc, char** argv) {
  auto is_help_flag = [](absl::string_view a) {
    return a == "--help" || a == "-help" || a == "-h" || a == "--h";
  };
  if (argc < 2) return -1;
  const absl::string_view first = argv[1];
  if (first == "help" || is_help_flag(first)) {
    if (argc == 2) {
      std::cout << GlobalHelp();
      return 0;
    }
    const CommandInfo* c = FindCommand(argv[2]);
    if (c == nullptr) {
      std::cerr << "divfuzz help: unknown command '" << argv[2] << "'\n\n" << GlobalHelp();
      return 2;
    }
    std::cout << CommandHelp(*c);
    return 0;
  }
  const CommandInfo* c = FindCommand(first);
  if (c == nullptr || c->name == "fuzz") return -1;
  for (int i = 2; i < argc; ++i) {
    if (absl::string_view(argv[i]) == "--") break;
    if (is_help_flag(argv[i])) {
      std::cout << CommandHelp(*c);
      return 0;
    }
  }
  return -1;
}

}  // namespace divfuzz::fuzz
