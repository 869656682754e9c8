// fuzz/cli/commands.def carries the subcommands: each one the table names has its
// help (synopsis, summary and every flag it lists, none misspelled) and
// reaches its entry point.
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace divfuzz {
namespace {

namespace fs = std::filesystem;

const std::string kTool = std::string(DIVFUZZ_BINARY_DIR) + "/fuzz/divfuzz";

struct Command {
  std::string name, synopsis, summary, flags;
  bool early;  // answered before flags are parsed (fuzz, help)
};

std::vector<Command> TableCommands() {
  std::vector<Command> all;
#define DIVFUZZ_COMMAND(name, Entry, synopsis, summary, flags) \
  all.push_back({#name, synopsis, summary, flags, false});
#define DIVFUZZ_EARLY_COMMAND(name, synopsis, summary) \
  all.push_back({#name, synopsis, summary, "", true});
#include "fuzz/cli/commands.def"
  return all;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Commands, EveryCommandInTheTableHasItsHelpWithEveryFlagItLists) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::vector<Command> commands = TableCommands();
  ASSERT_EQ(commands.size(), 13u);
  const testing::CommandRun global = testing::RunShell(kTool + " help");
  EXPECT_EQ(global.exit_code, 0) << global.output;
  for (const Command& c : commands) {
    EXPECT_EQ(c.synopsis.rfind(c.name, 0), 0u) << c.synopsis;
    EXPECT_TRUE(Contains(global.output, "  divfuzz " + c.synopsis + "\n")) << c.name;
    const testing::CommandRun run = testing::RunShell(kTool + " help " + c.name);
    EXPECT_EQ(run.exit_code, 0) << c.name << "\n" << run.output;
    EXPECT_EQ(run.output.rfind("Usage: divfuzz " + c.synopsis + "\n", 0), 0u) << run.output;
    EXPECT_FALSE(c.summary.empty()) << c.name;
    // Every flag the table lists exists (the help leaves out unknown names).
    size_t listed = 0;
    for (size_t pos = 0; pos < c.flags.size();) {
      size_t end = c.flags.find(' ', pos);
      if (end == std::string::npos) end = c.flags.size();
      const std::string flag = c.flags.substr(pos, end - pos);
      pos = end + 1;
      if (flag.empty()) continue;
      ++listed;
      EXPECT_TRUE(Contains(run.output, "  --" + flag + " (default: ")) << c.name << " --" << flag;
    }
    EXPECT_EQ(c.early, listed == 0) << c.name;
  }
}

// Each command reaches its own code: an argument it cannot use gets its own
// message (or, for ops, which takes none, its listing), never "unknown command".
TEST(Commands, EveryCommandInTheTableDispatches) {
  if (!fs::exists(kTool)) GTEST_SKIP() << "built without libFuzzer";
  const std::string dir = testing::TempDir("dispatch");
  for (const Command& c : TableCommands()) {
    if (c.early) continue;
    const testing::CommandRun run =
        testing::RunShell("cd " + dir + " && " + kTool + " " + c.name +
                          " /nonexistent/dispatch-probe --only=/nonexistent/dispatch-probe");
    EXPECT_FALSE(Contains(run.output, "unknown command")) << c.name << "\n" << run.output;
    EXPECT_FALSE(Contains(run.output, "Usage: divfuzz COMMAND")) << c.name << "\n" << run.output;
    EXPECT_TRUE(run.exit_code == 0 || run.exit_code == 2) << c.name << "\n" << run.output;
  }
  const testing::CommandRun unknown = testing::RunShell(kTool + " nosuch");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_TRUE(Contains(unknown.output, "unknown command 'nosuch'")) << unknown.output;
}

}  // namespace
}  // namespace divfuzz
