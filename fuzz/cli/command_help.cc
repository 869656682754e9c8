#include "fuzz/cli/command_help.h"

#include <algorithm>
#include <iostream>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "exec/cuda_variants.h"
#include "fuzz/cli/commands.h"

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

// What both the terminal help and the Markdown reference say, so the two
// cannot drift apart.
constexpr absl::string_view kTagline =
    "a differential fuzzer for libtorch (CPU vs CUDA, or CPU vs a float64 reference)";
constexpr absl::string_view kExitCodes =
    "Exit codes: 0 clean, 1 findings, 2 could not run, 3 (replay, repro) a node was declined, "
    "not run.";

// The command list's line: the summary's first sentence, or all of it when
// it has one sentence only.
absl::string_view FirstSentence(absl::string_view summary) {
  const size_t end = summary.find(". ");
  return end == absl::string_view::npos ? summary : summary.substr(0, end + 1);
}

// One flag as a command's help shows it.
struct FlagDoc {
  absl::string_view name;
  std::string default_value;  // "unset" when empty
  std::string help;           // without a leading "campaign: " when `own`
};

FlagDoc DocumentFlag(const absl::CommandLineFlag& flag, absl::string_view name, bool own) {
  const std::string def = flag.DefaultValue();
  const std::string help = flag.Help();
  return {name, def.empty() ? "unset" : def,
          own ? std::string(WithoutCommandPrefix(help)) : help};
}

// The flags `command` lists that exist (a misspelled name is left out).
std::vector<FlagDoc> CommandFlags(const CommandInfo& command) {
  std::vector<FlagDoc> docs;
  for (absl::string_view name : command.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag != nullptr) docs.push_back(DocumentFlag(*flag, name, /*own=*/true));
  }
  return docs;
}

// Every flag of settings.def that no command lists (e.g. --mps), in its order.
std::vector<FlagDoc> UnlistedFlags() {
  std::vector<absl::string_view> names;
#define DIVFUZZ_FLAG(type, name, default_value, help) names.push_back(#name);
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  names.push_back(#name);
#include "fuzz/settings.def"
  std::vector<FlagDoc> docs;
  for (absl::string_view name : names) {
    bool listed = false;
    for (const CommandInfo& c : Commands()) {
      listed = listed || std::find(c.flags.begin(), c.flags.end(), name) != c.flags.end();
    }
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (!listed && flag != nullptr) docs.push_back(DocumentFlag(*flag, name, /*own=*/false));
  }
  return docs;
}

// Text in Markdown (a table cell included) reads as written: backslash before
// the characters that would start markup. Not '_': GitHub leaves it alone
// inside a word, and flag names are full of it.
std::string MarkdownText(absl::string_view text) {
  std::string out;
  for (const char ch : text) {
    if (absl::string_view("\\`*[]<>|").find(ch) != absl::string_view::npos) out.push_back('\\');
    out.push_back(ch);
  }
  return out;
}

void AppendFlagTable(const std::vector<FlagDoc>& flags, std::string* out) {
  absl::StrAppend(out, "| flag | default | what it does |\n|---|---|---|\n");
  for (const FlagDoc& f : flags) {
    absl::StrAppend(out, "| `--", f.name, "` | `", f.default_value, "` | ", MarkdownText(f.help),
                    " |\n");
  }
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
#include "fuzz/cli/commands.def"
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
  std::string out = absl::StrCat("divfuzz: ", kTagline,
                                 "\n\nUsage: divfuzz COMMAND [args] [flags]\n\nCommands:\n");
  for (const CommandInfo& c : Commands()) {
    absl::StrAppend(&out, "  divfuzz ", c.synopsis, "\n");
    absl::StrAppend(&out, Wrap(FirstSentence(c.summary), 6));
  }
  absl::StrAppend(&out,
                  "\n'divfuzz help COMMAND' or 'divfuzz COMMAND --help' shows a command's flags;\n"
                  "'divfuzz --helpfull' lists every flag. ",
                  kExitCodes, "\n");
  return out;
}

std::string CommandHelp(const CommandInfo& command) {
  std::string out = absl::StrCat("Usage: divfuzz ", command.synopsis, "\n\n");
  absl::StrAppend(&out, Wrap(command.summary, 2));
  if (command.flags.empty()) return out;
  absl::StrAppend(&out, "\nFlags:\n");
  for (const FlagDoc& f : CommandFlags(command)) {
    absl::StrAppend(&out, "  --", f.name, " (default: ", f.default_value, ")\n");
    absl::StrAppend(&out, Wrap(f.help, 6));
  }
  return out;
}

std::string MarkdownReference() {
  std::string out = absl::StrCat(
      "# divfuzz command-line reference\n\n"
      "<!-- Generated by `divfuzz help --markdown` (scripts/gen_cli_md.sh) from "
      "fuzz/cli/commands.def and fuzz/settings.def; edit those and regenerate. "
      "tests/fuzz_cli_test.cc fails when this file differs. -->\n\n"
      "divfuzz: ",
      MarkdownText(kTagline),
      ".\n\nUsage: `divfuzz COMMAND [args] [flags]`. `divfuzz help COMMAND` or "
      "`divfuzz COMMAND --help` prints what a section below says; `divfuzz --helpfull` lists "
      "every flag, Abseil's included. ",
      kExitCodes, "\n\n## Commands\n\n| command | what it does |\n|---|---|\n");
  for (const CommandInfo& c : Commands()) {
    absl::StrAppend(&out, "| [`divfuzz ", c.synopsis, "`](#", c.name, ") | ",
                    MarkdownText(FirstSentence(c.summary)), " |\n");
  }
  for (const CommandInfo& c : Commands()) {
    absl::StrAppend(&out, "\n## ", c.name, "\n\n`divfuzz ", c.synopsis, "`\n\n",
                    MarkdownText(c.summary), "\n");
    const std::vector<FlagDoc> flags = CommandFlags(c);
    if (flags.empty()) continue;
    absl::StrAppend(&out, "\n");
    AppendFlagTable(flags, &out);
  }
  absl::StrAppend(&out, "\n## Targets\n\n`divfuzz help targets`\n\n",
                  exec::TargetsHelp(/*markdown=*/true));
  if (const std::vector<FlagDoc> other = UnlistedFlags(); !other.empty()) {
    absl::StrAppend(&out,
                    "\n## Other flags\n\nFlags no command's help lists; the text says "
                    "which commands read them.\n\n");
    AppendFlagTable(other, &out);
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
    if (first == "help" && argc == 3 && absl::string_view(argv[2]) == "--markdown") {
      std::cout << MarkdownReference();
      return 0;
    }
    if (first == "help" && argc == 3 && absl::string_view(argv[2]) == "targets") {
      std::cout << exec::TargetsHelp(/*markdown=*/false);
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
