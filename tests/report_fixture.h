// A small campaign work folder and findings store on disk, for the report
// tests: real files, as a campaign leaves them.
#pragma once

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/test_util.h"

namespace divfuzz::testing {

inline void MakeFolder(const std::string& path) {
  ASSERT_TRUE(::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) << path;
}

struct FixtureBucket {
  std::string id, root_op, dtype, cls, wrong_side, tier, severity;
  int count;
  bool report_md, minimized;
};

// In severity order (the order the report's table must show).
inline std::vector<FixtureBucket> FixtureBuckets() {
  return {
      {"linalg_matrix_exp-f64-crash-0000aaaa", "aten::linalg_matrix_exp", "f64", "crash", "cuda",
       "bug", "crash", 2, false, false},
      {"gelu-bf16-class_split-1111bbbb", "aten::gelu", "bf16", "class_split", "cpu", "bug",
       "bug-split", 7, true, true},
      // Hostile text: must come out escaped, never as markup.
      {"weird-f16-tolerance-3333dddd", "aten::<script>alert(\"x\")</script>&amp", "f16",
       "tolerance", "cpu<b>", "divergence", "divergence", 5, false, false},
      {"logdet-f32-class_split-2222cccc", "aten::logdet", "f32", "class_split", "cpu", "expected",
       "expected", 300, true, false},
  };
}

// <root>/campaign/stats.csv (columns out of the usual order, an unknown one,
// workers and restarts) and <root>/findings/{index.jsonl,<id>/...}; the index
// lines are written in an order other than the severity order.
inline void MakeCampaignFixture(const std::string& root, int samples = 40) {
  MakeFolder(root + "/campaign");
  MakeFolder(root + "/campaign/corpus");
  MakeFolder(root + "/campaign/logs");
  std::string csv =
      "elapsed_s,executions,exec_per_s,corpus,buckets,bug,divergence,expected,dtype_gap,"
      "workers,restarts,future_column\n";
  int64_t executions = 0;
  for (int i = 1; i <= samples; ++i) {
    const double rate = 80 + 40 * std::sin(i / 4.0);
    executions += static_cast<int64_t>(rate * 5);
    const int bug = std::min(3, i / 8), divergence = std::min(5, i / 6), expected = i / 3;
    csv += absl::StrFormat("%d,%d,%.1f,%d,%d,%d,%d,%d,0,4,%d,x\n", i * 5, executions, rate,
                           100 + i * 3, bug + divergence + expected, bug, divergence, expected,
                           i / 20);
  }
  WriteTextFile(root + "/campaign/stats.csv", csv);

  const std::string findings = root + "/findings";
  MakeFolder(findings);
  std::string index;
  std::vector<FixtureBucket> buckets = FixtureBuckets();
  for (int k : {3, 1, 0, 2}) {
    const FixtureBucket& b = buckets[k];
    MakeFolder(findings + "/" + b.id);
    WriteTextFile(findings + "/" + b.id + "/program.dfz", "# program\n");
    WriteTextFile(findings + "/" + b.id + "/repro.py", "print('repro')\n");
    nlohmann::ordered_json e;
    e["id"] = b.id;
    e["signature"] = absl::StrCat(b.root_op, "|", b.dtype, "|", b.cls, "|", b.wrong_side);
    e["root_op"] = b.root_op;
    e["dtype"] = b.dtype;
    e["class"] = b.cls;
    e["wrong_side"] = b.wrong_side;
    e["tier"] = b.tier;
    e["severity"] = b.severity;
    e["count"] = b.count;
    e["first_seen"] = absl::StrFormat("2026-11-21T15:51:%02dZ", 10 + k);
    e["last_seen"] = "2026-11-21T15:55:00Z";
    e["targets"] = "cpu vs cpu-f64";
    e["detail"] = {{"summary", "element 0: 1.0 vs <nan>"}};
    e["program"] = b.id + "/program.dfz";
    e["minimized"] = "";
    e["repro_py"] = b.id + "/repro.py";
    e["repro_cpp"] = "";
    e["report_md"] = "";
    if (b.minimized) {
      WriteTextFile(findings + "/" + b.id + "/min.dfz", "# min\n");
      e["minimized"] = b.id + "/min.dfz";
    }
    if (b.report_md) {
      MakeFolder(findings + "/" + b.id + "/repro_cpp");
      WriteTextFile(findings + "/" + b.id + "/repro_cpp/main.cpp", "int main() {}\n");
      WriteTextFile(findings + "/" + b.id + "/report.md", "# report\n");
      e["report_md"] = b.id + "/report.md";
    }
    index += e.dump() + "\n";
  }
  WriteTextFile(findings + "/index.jsonl", index);
}

}  // namespace divfuzz::testing
