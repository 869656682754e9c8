// Regression: every program shipped in corpus/ parses, type-checks and runs on
// the CPU pair without argument errors.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "exec/executor.h"
#include "graph/parser.h"
#include "gtest/gtest.h"
#include "ops/infer.h"

namespace divfuzz {
namespace {

TEST(Corpus, EveryShippedProgramReplays) {
  int programs = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(DIVFUZZ_SOURCE_DIR) + "/corpus")) {
    // corpus/parser/ holds the parser fuzzer's syntax seeds, not runnable programs.
    if (entry.path().extension() != ".dfz" || entry.path().parent_path().filename() == "parser") {
      continue;
    }
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<graph::Program> p = graph::ParseProgram(text.str(), entry.path().string());
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(*p, entry.path().string());
    ASSERT_TRUE(types.ok()) << types.status();
    for (exec::Target t : {exec::Target::kCpu, exec::Target::kCpuF64}) {
      exec::RunResult r = exec::Run(*p, *types, t);
      ASSERT_TRUE(r.setup_error.empty()) << entry.path() << ": " << r.setup_error;
      for (const exec::NodeResult& n : r.nodes) {
        if (n.error) {
          EXPECT_NE(n.error->kind, exec::NodeError::Kind::kBadArguments)
              << entry.path() << ": " << n.error->message;
        }
      }
    }
    ++programs;
  }
  EXPECT_GE(programs, 5);
}

TEST(Corpus, SeedCaseHasTheReportedModel) {
  std::ifstream in(std::string(DIVFUZZ_SOURCE_DIR) + "/corpus/seed/seed_case_logdet.dfz");
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<graph::Program> p = graph::ParseProgram(text.str(), "seed_case_logdet.dfz");
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(*p);
  ASSERT_TRUE(types.ok());
  std::vector<std::string> ops;
  for (const graph::Node& n : p->nodes) ops.push_back(n.QualifiedName());
  EXPECT_EQ(ops, (std::vector<std::string>{"aten::linear", "aten::add.Scalar", "aten::arccosh",
                                           "aten::linear", "aten::logdet", "aten::reciprocal"}));
  EXPECT_EQ(types->at(p->nodes[3].results[0]).shape, (std::vector<int64_t>{4, 4}));
  // The CPU runs it (the value depends on the CPU, so it is not checked here).
  exec::RunResult r = exec::Run(*p, *types, exec::Target::kCpu);
  EXPECT_FALSE(r.nodes[4].error);
}

}  // namespace
}  // namespace divfuzz
