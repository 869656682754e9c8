// `divfuzz report DIR`: one self-contained HTML page (inline CSS and SVG, no
// scripts, fonts or external files) about a campaign: a summary, plots of
// exec/s and buckets over time, the root-cause groups (report/groups.h) and
// the buckets by severity with relative links to each finding's report.md,
// repro.py and program.
//
// Inputs: DIR/stats.csv (columns found by header name; unknown ones are
// ignored, missing ones leave a gap), DIR/campaign.json when present
// (findings, targets, budget_seconds, started, workers, gpus), DIR/state.json
// when present (elapsed_seconds, restarts, resumes) and the findings store's
// index.jsonl and <id>/ folders.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace divfuzz::report {

// stats.csv as numbers, addressed by column name.
struct Stats {
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;  // NaN where a cell is empty or not a number

  int Column(std::string_view name) const;  // -1 when absent
  // (elapsed_s, name) for every row where both are numbers.
  std::vector<std::pair<double, double>> Series(std::string_view name) const;
  // The column's last numeric value.
  std::optional<double> Last(std::string_view name) const;
};

// A header line and numeric rows. Rows with another number of fields than
// the header (a line cut short by a kill) are skipped with a warning naming
// path:line; a file without a header is an error. An elapsed_s that goes
// back (a run resumed with its clock at 0) is shifted to continue.
absl::StatusOr<Stats> ParseStatsCsv(std::string_view text, const std::string& path,
                                    std::vector<std::string>* warnings);

// One line of index.jsonl, with the links resolved (relative to the report's
// folder, empty when the file is absent).
struct Bucket {
  std::string id, op, dtype, cls, wrong_side, tier, severity, first_seen, last_seen, summary;
  std::string targets;  // "cpu vs cuda"
  int64_t count = 0;
  std::string report_md, repro_py, program;  // hrefs, not yet URL-escaped
  std::string repro_cpp;                     // repro_cpp/main.cpp
  std::string program_name;                  // "min.dfz" or "program.dfz"
  std::string group, group_label;            // root-cause key (store/root_cause_group.h)
  std::string minimized;         // min.dfz relative to the findings folder, "" when none
  int64_t minimized_bytes = -1;  // its size, -1 when none
  std::string baseline;  // index field "baseline": new, known, known-group; "" without one
};

// JSON objects of index.jsonl; a corrupt line is skipped with a warning
// naming path:line.
std::vector<nlohmann::json> ParseIndex(std::string_view text, const std::string& path,
                                       std::vector<std::string>* warnings);

// The fields of an index entry (links and minimized left empty). Missing
// fields are empty; root_op loses its "aten::" prefix; group and group_label
// come from store::RootCauseKeyOf.
Bucket BucketFromIndex(const nlohmann::json& entry);

// Sets the bucket's minimized program and its size from the findings folder:
// the index field "minimized", else <id>/min.dfz, when it is a file there.
void FindMinimized(const std::string& findings_dir, const nlohmann::json& entry, Bucket* bucket);

// crash < hang < bug-split < bug-tolerance < divergence < dtype-gap <
// expected < anything else (oracles::SeverityRank's order).
int SeverityOrder(const std::string& severity);
// By severity, then count (descending), then id.
void SortBySeverity(std::vector<Bucket>* buckets);

struct ReportData {
  std::string work_dir;                                // as given, for the page's text
  std::string findings_dir;                            // resolved (realpath)
  std::string generated;                               // UTC time of writing
  nlohmann::json campaign = nlohmann::json::object();  // campaign.json, or {}
  nlohmann::json state = nlohmann::json::object();     // state.json, or {}
  Stats stats;
  std::vector<Bucket> buckets;  // sorted by severity
  // DIR/baseline_check.json when present (fuzz/campaign/baseline_replay.h):
  // the known bugs replayed and which are gone.
  nlohmann::json known_bugs = nlohmann::json::object();
  std::vector<std::string> warnings;
};

// The page. Every text from the inputs is HTML-escaped and every link
// URL-escaped; plot lines and the table header use fixed colours (see
// report.cc) that the Chromium test looks for.
std::string RenderHtml(const ReportData& data);

struct ReportOptions {
  std::string work_dir;
  // Empty: campaign.json's "findings" (relative to the work folder), else
  // <work_dir>/../findings.
  std::string findings_dir;
  std::string out;  // empty: <work_dir>/report.html
};

// Reads the work folder and the findings store. NotFound (naming the path)
// when the work folder has no stats.csv or the findings folder no
// index.jsonl; InvalidArgument for an unreadable campaign.json.
absl::StatusOr<ReportData> LoadReport(const ReportOptions& options);

// LoadReport, RenderHtml, then an atomic write (tmp + rename) of the page.
// Returns the path written.
absl::StatusOr<std::string> WriteReport(const ReportOptions& options);

}  // namespace divfuzz::report
