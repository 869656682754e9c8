// Helpers shared by the suites that run real libtorch.
#pragma once

#include <string>

#include "graph/parser.h"
#include "gtest/gtest.h"
#include "ops/infer.h"
#include "store/findings_store.h"

namespace divfuzz::testing {

inline graph::Program MustParse(const std::string& text) {
  absl::StatusOr<graph::Program> p = graph::ParseProgram(text, "test.dfz");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : graph::Program{};
}

inline ops::TypeEnv MustInfer(const graph::Program& p) {
  absl::StatusOr<ops::TypeEnv> t = ops::InferProgram(p, "test.dfz");
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : ops::TypeEnv{};
}

// A whole file's bytes ("" when it cannot be read), and a write of one
// (a failed write fails the test).
std::string ReadTextFile(const std::string& path);
void WriteTextFile(const std::string& path, const std::string& text);

// A fresh empty folder under the test's temporary directory, removed when the
// test passes (kept when it fails, or always with DIVFUZZ_KEEP_TEST_DIRS set).
std::string TempDir(const std::string& name);

struct CommandRun {
  int exit_code = -1;  // 128 + signal when the command was killed
  std::string output;  // stdout and stderr
};

// Runs a shell command, capturing stdout and stderr together.
CommandRun RunShell(const std::string& command);

// The Python that runs emitted repro.py scripts: $DIVFUZZ_PYTHON or python3.
// A findings-store hit for `signature` ("op|dtype|class|wrong side"), its
// fields taken from the signature.
store::FindingHit HitFor(const std::string& signature, const std::string& targets,
                         const std::string& tier = "divergence");

std::string Python();

}  // namespace divfuzz::testing
