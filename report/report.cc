#include "report/report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "report/groups.h"
#include "report/html.h"
#include "report/plot.h"
#include "store/findings_store.h"
#include "store/root_cause_group.h"

namespace divfuzz::report {
namespace {

// Fixed colours: the Chromium test finds the plots and the table by them, so
// nothing else on the page may use them.
constexpr char kExecColor[] = "#e6007e";
constexpr char kTableHeadColor[] = "#0b3d5c";

struct TierStyle {
  const char* column;  // stats.csv column and index tier
  const char* color;
};
// Bucket series in the plot, in legend order.
constexpr TierStyle kBucketSeries[] = {{"buckets", "#1f77b4"},    {"bug", "#d62728"},
                                       {"divergence", "#ff7f0e"}, {"expected", "#2ca02c"},
                                       {"dtype_gap", "#9467bd"},  {"crash", "#111111"},
                                       {"hang", "#8c564b"}};

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Str(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string Join(const std::string& dir, const std::string& rel) {
  if (!rel.empty() && rel[0] == '/') return rel;
  return absl::StrCat(dir, "/", rel);
}

// First candidate (relative to the findings folder) that is a file there.
std::string FirstExisting(const std::string& findings, const std::vector<std::string>& rels) {
  for (const std::string& rel : rels) {
    if (!rel.empty() && IsFile(Join(findings, rel))) return rel;
  }
  return "";
}

std::string Num(double v) {
  if (!std::isfinite(v)) return "?";
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15) {
    // Thousands separators for counts.
    std::string digits = absl::StrFormat("%.0f", std::fabs(v));
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
      out += digits[i];
    }
    return v < 0 ? "-" + out : out;
  }
  return absl::StrFormat("%.1f", v);
}

std::string Duration(double s) {
  if (!std::isfinite(s)) return "?";
  const int64_t t = static_cast<int64_t>(std::llround(s));
  if (t >= 3600) return absl::StrFormat("%dh %02dmin %02ds", t / 3600, t / 60 % 60, t % 60);
  if (t >= 60) return absl::StrFormat("%dmin %02ds", t / 60, t % 60);
  return absl::StrFormat("%d s", t);
}

std::string TierClass(const std::string& tier) {
  std::string out = "tier";
  for (const char* known : {"bug", "divergence", "expected", "dtype_gap"}) {
    if (tier == known) absl::StrAppend(&out, " t-", tier);
  }
  return out;
}

constexpr char kStyle[] = R"css(
body{font-family:sans-serif;margin:16px 20px;color:#222;background:#fff;max-width:1160px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:18px 0 8px}
.sub{color:#555;font-size:13px;margin:0 0 10px;word-break:break-all}
.summary{display:flex;gap:28px;flex-wrap:wrap;align-items:flex-start;font-size:14px}
.summary table td,.summary table th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
.summary th{color:#555;font-weight:normal}
.plots{display:flex;gap:12px;flex-wrap:wrap}
.plot{border:1px solid #ddd}
.plot .grid{stroke:#eee;stroke-width:1}.plot .axis{stroke:#888;stroke-width:1}
.plot .tick{font-size:11px;fill:#555}.plot .ptitle{font-size:14px;font-weight:bold;fill:#222}
.plot .empty{font-size:14px;fill:#999}
#bucket-table{border-collapse:collapse;width:100%;font-size:13px}
#bucket-table thead th{background:$HEAD;color:#fff;text-align:left;padding:6px 8px}
#bucket-table td{padding:4px 8px;border-bottom:1px solid #e4e4e4;vertical-align:top}
#bucket-table tbody tr:nth-child(even){background:#f7f7f7}
#bucket-table td.n{text-align:right}
#group-table{border-collapse:collapse;width:100%;font-size:13px}
#group-table thead th{background:#5b6770;color:#fff;text-align:left;padding:6px 8px}
#group-table td{padding:4px 8px;border-bottom:1px solid #e4e4e4;vertical-align:top}
#group-table td.n{text-align:right}
.tier{padding:1px 6px;border-radius:3px;background:#eee}
.t-bug{background:#fbe3e4;color:#8a1c1c}.t-divergence{background:#fdf0dc;color:#7a4a00}
.t-expected{background:#e5f4e3;color:#225c1d}.t-dtype_gap{background:#efe8f6;color:#4d2f73}
.id{color:#777;font-size:11px}.none{color:#aaa}
.warnings{color:#8a1c1c;font-size:13px}
)css";

}  // namespace

int Stats::Column(std::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::pair<double, double>> Stats::Series(std::string_view name) const {
  std::vector<std::pair<double, double>> out;
  const int x = Column("elapsed_s"), y = Column(name);
  if (x < 0 || y < 0) return out;
  for (const std::vector<double>& row : rows) {
    if (std::isfinite(row[x]) && std::isfinite(row[y])) out.emplace_back(row[x], row[y]);
  }
  return out;
}

std::optional<double> Stats::Last(std::string_view name) const {
  const int c = Column(name);
  if (c < 0) return std::nullopt;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    if (std::isfinite((*it)[c])) return (*it)[c];
  }
  return std::nullopt;
}

absl::StatusOr<Stats> ParseStatsCsv(std::string_view text, const std::string& path,
                                    std::vector<std::string>* warnings) {
  Stats stats;
  std::vector<std::string> lines = absl::StrSplit(std::string(text), '\n');
  bool have_header = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line(absl::StripAsciiWhitespace(lines[i]));
    if (line.empty()) continue;
    std::vector<std::string> fields = absl::StrSplit(line, ',');
    for (std::string& f : fields) f = std::string(absl::StripAsciiWhitespace(f));
    if (!have_header) {
      stats.header = fields;
      have_header = true;
      continue;
    }
    if (fields.size() != stats.header.size()) {
      warnings->push_back(absl::StrFormat("%s:%d: skipped: expected %d fields, got %d", path, i + 1,
                                          stats.header.size(), fields.size()));
      continue;
    }
    std::vector<double> row;
    for (const std::string& f : fields) {
      double v;
      row.push_back(absl::SimpleAtod(f, &v) ? v : std::numeric_limits<double>::quiet_NaN());
    }
    stats.rows.push_back(std::move(row));
  }
  if (!have_header) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":1: expected a header line (elapsed_s,executions,...), got nothing"));
  }
  const int x = stats.Column("elapsed_s");
  if (x < 0) {
    warnings->push_back(absl::StrCat(path, ":1: no elapsed_s column: nothing to plot"));
  } else {
    // A clock that starts again (a resumed run counting from 0) continues
    // where the previous run ended, so the plots stay functions of time.
    double offset = 0, last = -std::numeric_limits<double>::infinity();
    for (std::vector<double>& row : stats.rows) {
      if (!std::isfinite(row[x])) continue;
      if (row[x] + offset < last) offset = last - row[x];
      row[x] += offset;
      last = row[x];
    }
  }
  return stats;
}

std::vector<nlohmann::json> ParseIndex(std::string_view text, const std::string& path,
                                       std::vector<std::string>* warnings) {
  std::vector<nlohmann::json> out;
  std::vector<std::string> lines = absl::StrSplit(std::string(text), '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (absl::StripAsciiWhitespace(lines[i]).empty()) continue;
    nlohmann::json e = nlohmann::json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    if (e.is_discarded() || !e.is_object()) {
      warnings->push_back(
          absl::StrFormat("%s:%d: skipped: expected one JSON object a line", path, i + 1));
      continue;
    }
    out.push_back(std::move(e));
  }
  return out;
}

Bucket BucketFromIndex(const nlohmann::json& e) {
  Bucket b;
  b.id = Str(e, "id");
  b.op = Str(e, "root_op");
  if (absl::StartsWith(b.op, "aten::")) b.op = b.op.substr(6);
  b.dtype = Str(e, "dtype");
  b.cls = Str(e, "class");
  b.wrong_side = Str(e, "wrong_side");
  b.tier = Str(e, "tier");
  b.severity = Str(e, "severity");
  b.first_seen = Str(e, "first_seen");
  b.last_seen = Str(e, "last_seen");
  b.targets = Str(e, "targets");
  b.baseline = Str(e, "baseline");
  auto count = e.find("count");
  if (count != e.end() && count->is_number()) b.count = count->get<int64_t>();
  auto detail = e.find("detail");
  if (detail != e.end() && detail->is_object()) {
    b.summary = Str(*detail, "summary");
    const std::string rule = Str(*detail, "expected_rule");
    if (!rule.empty()) b.summary = absl::StrCat("[", rule, "] ", b.summary);
  }
  const store::RootCauseKey key = store::RootCauseKeyOf(e);
  b.group = key.Id();
  b.group_label = key.Label();
  return b;
}

void FindMinimized(const std::string& findings_dir, const nlohmann::json& entry, Bucket* b) {
  b->minimized = FirstExisting(findings_dir, {Str(entry, "minimized"), b->id + "/min.dfz"});
  b->minimized_bytes = -1;
  struct stat st;
  if (!b->minimized.empty() && ::stat(Join(findings_dir, b->minimized).c_str(), &st) == 0) {
    b->minimized_bytes = static_cast<int64_t>(st.st_size);
  }
}

int SeverityOrder(const std::string& severity) {
  static const char* const kOrder[] = {"crash",      "hang",      "bug-split", "bug-tolerance",
                                       "divergence", "dtype-gap", "expected"};
  for (int i = 0; i < 7; ++i) {
    if (severity == kOrder[i]) return i;
  }
  return 7;
}

void SortBySeverity(std::vector<Bucket>* buckets) {
  std::stable_sort(buckets->begin(), buckets->end(), [](const Bucket& a, const Bucket& b) {
    const int sa = SeverityOrder(a.severity), sb = SeverityOrder(b.severity);
    if (sa != sb) return sa < sb;
    if (a.count != b.count) return a.count > b.count;
    return a.id < b.id;
  });
}

std::string RenderHtml(const ReportData& data) {
  const nlohmann::json& c = data.campaign;
  std::string html;
  const std::string title = absl::StrCat("divfuzz campaign report: ", data.work_dir);
  absl::StrAppend(&html, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
                  "<title>", HtmlEscape(title), "</title>\n<style>",
                  absl::StrReplaceAll(kStyle, {{"$HEAD", kTableHeadColor}}),
                  "</style></head>\n<body>\n");
  absl::StrAppend(&html, "<h1>divfuzz campaign report</h1>\n<p class=\"sub\">work folder <code>",
                  HtmlEscape(data.work_dir), "</code> &middot; findings <code>",
                  HtmlEscape(data.findings_dir), "</code> &middot; generated ",
                  HtmlEscape(data.generated), "</p>\n");

  // Summary.
  std::string targets = Str(c, "targets");
  if (c.contains("targets") && c["targets"].is_array()) {
    std::vector<std::string> names;
    for (const nlohmann::json& t : c["targets"])
      names.push_back(t.is_string() ? t.get<std::string>() : t.dump());
    targets = absl::StrJoin(names, ",");
  }
  if (targets.empty()) {
    // Without campaign.json: the pairs the findings were recorded under.
    std::vector<std::string> seen;
    for (const Bucket& b : data.buckets) {
      if (!b.targets.empty() && std::find(seen.begin(), seen.end(), b.targets) == seen.end()) {
        seen.push_back(b.targets);
      }
    }
    targets = seen.empty() ? "unknown" : absl::StrJoin(seen, ", ");
  }
  const nlohmann::json& state = data.state;
  // state.json holds the fuzzing time over all runs of a resumed campaign.
  std::optional<double> elapsed = data.stats.Last("elapsed_s");
  if (state.contains("elapsed_seconds") && state["elapsed_seconds"].is_number()) {
    elapsed = state["elapsed_seconds"].get<double>();
  }
  const std::optional<double> executions = data.stats.Last("executions");
  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back("targets", targets);
  if (c.contains("gpus") && c["gpus"].is_array() && !c["gpus"].empty()) {
    std::vector<std::string> gpus;
    for (const nlohmann::json& g : c["gpus"])
      gpus.push_back(g.is_string() ? g.get<std::string>() : g.dump());
    rows.emplace_back("GPUs", absl::StrJoin(gpus, ", "));
  }
  if (!Str(c, "started").empty()) rows.emplace_back("started", Str(c, "started"));
  std::string duration = elapsed ? Duration(*elapsed) : "no samples";
  if (c.contains("budget_seconds") && c["budget_seconds"].is_number()) {
    absl::StrAppend(&duration, " of ", Duration(c["budget_seconds"].get<double>()), " budget");
  }
  rows.emplace_back("duration", duration);
  rows.emplace_back("executions", executions ? Num(*executions) : "?");
  if (executions && elapsed && *elapsed > 0) {
    std::string rate = absl::StrFormat("%.1f overall", *executions / *elapsed);
    if (std::optional<double> last = data.stats.Last("exec_per_s")) {
      absl::StrAppend(&rate, absl::StrFormat(", %.1f in the last sample", *last));
    }
    rows.emplace_back("exec/s", rate);
  }
  if (std::optional<double> corpus = data.stats.Last("corpus")) {
    rows.emplace_back("corpus", Num(*corpus));
  }
  for (const char* key : {"workers", "restarts", "resumes"}) {
    if (state.contains(key) && state[key].is_number()) {
      if (std::string(key) != "resumes" || state[key].get<double>() > 0) {
        rows.emplace_back(key, Num(state[key].get<double>()));
      }
    } else if (c.contains(key) && c[key].is_number()) {
      rows.emplace_back(key, Num(c[key].get<double>()));
    } else if (std::optional<double> v = data.stats.Last(key)) {
      rows.emplace_back(key, Num(*v));
    }
  }
  int64_t hits = 0;
  std::map<std::string, int> by_tier, by_class;
  for (const Bucket& b : data.buckets) {
    hits += b.count;
    by_tier[b.tier.empty() ? "?" : b.tier]++;
    by_class[b.cls.empty() ? "?" : b.cls]++;
  }
  rows.emplace_back("buckets", absl::StrCat(Num(data.buckets.size()), " (", Num(hits), " hits)"));
  const std::vector<Group> groups = GroupBuckets(data.buckets);
  rows.emplace_back("root-cause groups", Num(groups.size()));
  int marked = 0, known = 0;
  for (const Bucket& b : data.buckets) {
    marked += !b.baseline.empty();
    known += absl::StartsWith(b.baseline, "known");
  }
  if (marked > 0) {
    rows.emplace_back("against the baseline",
                      absl::StrCat(Num(marked - known), " new, ", Num(known), " known"));
  }

  absl::StrAppend(&html, "<section class=\"summary\" id=\"summary\">\n<table>\n");
  for (const auto& [k, v] : rows) {
    absl::StrAppend(&html, "<tr><th>", HtmlEscape(k), "</th><td>", HtmlEscape(v), "</td></tr>\n");
  }
  absl::StrAppend(&html, "</table>\n");
  for (const auto& [name, counts] :
       {std::pair<const char*, const std::map<std::string, int>&>{"tier", by_tier},
        std::pair<const char*, const std::map<std::string, int>&>{"class", by_class}}) {
    absl::StrAppend(&html, "<table class=\"by-", name, "\"><tr><th colspan=\"2\">buckets by ", name,
                    "</th></tr>\n");
    for (const auto& [k, n] : counts) {
      absl::StrAppend(&html, "<tr><td>", HtmlEscape(k), "</td><td>", n, "</td></tr>\n");
    }
    absl::StrAppend(&html, "</table>\n");
  }
  absl::StrAppend(&html, "</section>\n");

  // Plots.
  PlotSpec exec;
  exec.id = "plot-exec";
  exec.title = "executions per second";
  exec.y_label = "exec/s";
  exec.series.push_back({"exec/s", kExecColor, data.stats.Series("exec_per_s"), false});
  PlotSpec buckets;
  buckets.id = "plot-buckets";
  buckets.title = "buckets over time";
  buckets.y_label = "buckets";
  for (const TierStyle& t : kBucketSeries) {
    if (data.stats.Column(t.column) >= 0) {
      buckets.series.push_back({t.column, t.color, data.stats.Series(t.column), true});
    }
  }
  absl::StrAppend(&html, "<h2>Over time</h2>\n<section class=\"plots\" id=\"plots\">\n",
                  RenderLinePlot(exec), RenderLinePlot(buckets), "</section>\n");

  // Root-cause groups first, then every bucket.
  auto link = [](const std::string& href, const std::string& text) {
    if (href.empty()) return std::string("<span class=\"none\">&mdash;</span>");
    return absl::StrCat("<a href=\"", HtmlEscape(UrlPathEscape(href)), "\">", HtmlEscape(text),
                        "</a>");
  };
  absl::StrAppend(&html, "<h2>Root-cause groups (", groups.size(),
                  ")</h2>\n<table id=\"group-table\">\n<thead><tr><th>severity</th><th>tier</th>"
                  "<th>group</th><th>buckets</th><th>hits</th><th>representative</th>"
                  "<th>members</th></tr></thead>\n<tbody>\n");
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    const Bucket& rep = g.members[g.representative];
    absl::StrAppend(
        &html, "<tr class=\"group\" id=\"group-", i + 1, "\"><td>", HtmlEscape(g.severity),
        "</td><td><span class=\"", TierClass(g.tier), "\">", HtmlEscape(g.tier), "</span></td><td>",
        HtmlEscape(g.label), "<br><span class=\"id\">", HtmlEscape(g.id),
        "</span></td><td class=\"n\">", g.members.size(), "</td><td class=\"n\">", Num(g.hits),
        "</td><td>", "<a class=\"rep\" href=\"#bucket-", HtmlEscape(UrlPathEscape(rep.id)), "\">",
        HtmlEscape(rep.id), "</a><br>", link(rep.program, rep.program_name),
        rep.repro_py.empty() ? "" : absl::StrCat(" ", link(rep.repro_py, "repro.py")),
        rep.report_md.empty() ? "" : absl::StrCat(" ", link(rep.report_md, "report.md")),
        "</td><td>");
    for (size_t m = 0; m < g.members.size(); ++m) {
      const Bucket& b = g.members[m];
      absl::StrAppend(&html, m == 0 ? "" : ", ", "<a class=\"member\" href=\"#bucket-",
                      HtmlEscape(UrlPathEscape(b.id)), "\" title=\"", HtmlEscape(b.id), "\">",
                      HtmlEscape(b.op), " ", HtmlEscape(b.dtype), "</a> (", Num(b.count), ")");
    }
    absl::StrAppend(&html, "</td></tr>\n");
  }
  absl::StrAppend(&html, "</tbody></table>\n");

  // Buckets.
  absl::StrAppend(&html, "<h2>Buckets (", data.buckets.size(),
                  ")</h2>\n<table id=\"bucket-table\">\n<thead><tr><th>severity</th><th>tier</th>"
                  "<th>class</th><th>op</th><th>dtype</th><th>wrong side</th><th>count</th>"
                  "<th>first seen</th><th>report</th><th>repro</th><th>program</th>",
                  marked > 0 ? "<th>baseline</th>" : "", "</tr></thead>\n<tbody>\n");
  for (const Bucket& b : data.buckets) {
    absl::StrAppend(&html, "<tr class=\"bucket\" id=\"bucket-", HtmlEscape(b.id), "\" title=\"",
                    HtmlEscape(b.summary), "\">");
    absl::StrAppend(&html, "<td>", HtmlEscape(b.severity), "</td><td><span class=\"",
                    TierClass(b.tier), "\">", HtmlEscape(b.tier), "</span></td><td>",
                    HtmlEscape(b.cls), "</td><td>", HtmlEscape(b.op), "<br><span class=\"id\">",
                    HtmlEscape(b.id), "</span></td><td>", HtmlEscape(b.dtype), "</td><td>",
                    HtmlEscape(b.wrong_side), "</td><td class=\"n\">", Num(b.count), "</td><td>",
                    HtmlEscape(b.first_seen), "</td>");
    absl::StrAppend(&html, "<td>", link(b.report_md, "report.md"), "</td><td>",
                    link(b.repro_py, "repro.py"),
                    b.repro_cpp.empty() ? "" : absl::StrCat(" ", link(b.repro_cpp, "C++")),
                    "</td><td>", link(b.program, b.program_name), "</td>",
                    marked > 0 ? absl::StrCat("<td>", HtmlEscape(b.baseline), "</td>") : "",
                    "</tr>\n");
  }
  absl::StrAppend(&html, "</tbody></table>\n");
  if (data.buckets.empty()) absl::StrAppend(&html, "<p>No buckets yet.</p>\n");
  // The baseline's known bugs, replayed: which are gone (fixed upstream?).
  const nlohmann::json bugs = data.known_bugs.value("bugs", nlohmann::json::array());
  if (bugs.is_array() && !bugs.empty()) {
    absl::StrAppend(&html, "<h2>Known bugs of the baseline, replayed (", bugs.size(),
                    ")</h2>\n<p>", HtmlEscape(Str(data.known_bugs, "baseline")), ", checked ",
                    HtmlEscape(Str(data.known_bugs, "checked")),
                    "</p>\n<table id=\"known-bugs\">\n<thead><tr><th>bucket</th><th>outcome</th>"
                    "<th>program</th><th>note</th></tr></thead>\n<tbody>\n");
    for (const nlohmann::json& c : bugs) {
      const std::string outcome = Str(c, "outcome");
      absl::StrAppend(&html, "<tr class=\"known-bug\"><td>", HtmlEscape(Str(c, "id")), "</td><td>",
                      HtmlEscape(outcome == "gone" ? "gone (fixed upstream?)" : outcome),
                      Str(c, "why").empty() ? "" : "<br>" + HtmlEscape(Str(c, "why")), "</td><td>",
                      HtmlEscape(Str(c, "program")), "</td><td>", HtmlEscape(Str(c, "note")),
                      "</td></tr>\n");
    }
    absl::StrAppend(&html, "</tbody></table>\n");
  }
  if (!data.warnings.empty()) {
    absl::StrAppend(&html, "<h2>Warnings</h2>\n<ul class=\"warnings\">\n");
    for (const std::string& w : data.warnings) {
      absl::StrAppend(&html, "<li>", HtmlEscape(w), "</li>\n");
    }
    absl::StrAppend(&html, "</ul>\n");
  }
  absl::StrAppend(&html, "</body></html>\n");
  return html;
}

absl::StatusOr<ReportData> LoadReport(const ReportOptions& options) {
  ReportData data;
  std::string work = options.work_dir;
  while (work.size() > 1 && work.back() == '/') work.pop_back();
  data.work_dir = work;
  if (!IsDir(work)) return absl::NotFoundError(absl::StrCat("no campaign folder ", work));

  const std::string campaign_path = Join(work, "campaign.json");
  std::string text;
  if (IsFile(campaign_path)) {
    if (!ReadFile(campaign_path, &text)) {
      return absl::NotFoundError(absl::StrCat("cannot read ", campaign_path));
    }
    data.campaign = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (data.campaign.is_discarded() || !data.campaign.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(campaign_path, ":1: expected a JSON object (findings, targets, ...)"));
    }
  }

  // state.json (fuzzing time, restarts, resumes) is optional and only informs
  // the summary: a bad one is a warning.
  const std::string state_path = Join(work, "state.json");
  if (IsFile(state_path) && ReadFile(state_path, &text)) {
    nlohmann::json state = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (state.is_object()) {
      data.state = std::move(state);
    } else {
      data.warnings.push_back(absl::StrCat(state_path, ": not a JSON object; ignored"));
    }
  }

  const std::string check_path = Join(work, "baseline_check.json");
  if (IsFile(check_path) && ReadFile(check_path, &text)) {
    nlohmann::json check = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (check.is_object()) {
      data.known_bugs = std::move(check);
    } else {
      data.warnings.push_back(absl::StrCat(check_path, ": not a JSON object; ignored"));
    }
  }

  const std::string stats_path = Join(work, "stats.csv");
  if (!ReadFile(stats_path, &text)) {
    return absl::NotFoundError(absl::StrCat("no ", stats_path,
                                            ": expected a campaign work folder (divfuzz campaign "
                                            "--work=DIR writes stats.csv there)"));
  }
  absl::StatusOr<Stats> stats = ParseStatsCsv(text, stats_path, &data.warnings);
  if (!stats.ok()) return stats.status();
  data.stats = *std::move(stats);

  std::string findings = options.findings_dir;
  if (findings.empty()) {
    const std::string named = Str(data.campaign, "findings");
    findings = named.empty() ? Join(work, "../findings") : Join(work, named);
  }
  while (findings.size() > 1 && findings.back() == '/') findings.pop_back();
  data.findings_dir = findings;
  const std::string index_path = Join(findings, "index.jsonl");
  if (!ReadFile(index_path, &text)) {
    return absl::NotFoundError(absl::StrCat(
        "no ", index_path, ": expected the campaign's findings store (pass --findings=F)"));
  }

  // Links are relative to the page's folder, so the report, work and findings
  // folders can move together (or be served as they are).
  const std::string out = options.out.empty() ? Join(work, "report.html") : options.out;
  const size_t slash = out.rfind('/');
  const std::string out_dir = RealPath(slash == std::string::npos ? "." : out.substr(0, slash));
  if (out_dir.empty()) {
    return absl::NotFoundError(absl::StrCat("no folder for the report ", out));
  }
  const std::string findings_real = RealPath(findings);
  data.findings_dir = findings_real;  // "DIR/../findings" reads better resolved

  for (const nlohmann::json& e : ParseIndex(text, index_path, &data.warnings)) {
    Bucket b = BucketFromIndex(e);
    if (b.id.empty()) {
      data.warnings.push_back(absl::StrCat(index_path, ": an entry without an id was skipped"));
      continue;
    }
    const std::string& id = b.id;
    auto href = [&](const std::string& rel) {
      return rel.empty() ? "" : RelativePath(out_dir, Join(findings_real, rel));
    };
    b.report_md = href(FirstExisting(findings, {Str(e, "report_md"), id + "/report.md"}));
    b.repro_py = href(FirstExisting(findings, {Str(e, "repro_py"), id + "/repro.py"}));
    b.repro_cpp = href(FirstExisting(findings, {Str(e, "repro_cpp"), id + "/repro_cpp/main.cpp"}));
    FindMinimized(findings, e, &b);
    const std::string& min = b.minimized;
    const std::string program =
        min.empty() ? FirstExisting(findings, {Str(e, "program"), id + "/program.dfz"}) : min;
    b.program = href(program);
    b.program_name = min.empty() ? "program.dfz" : "min.dfz";
    data.buckets.push_back(std::move(b));
  }
  SortBySeverity(&data.buckets);
  data.generated = store::FindingsStore::NowUtc();
  return data;
}

absl::StatusOr<std::string> WriteReport(const ReportOptions& options) {
  absl::StatusOr<ReportData> data = LoadReport(options);
  if (!data.ok()) return data.status();
  const std::string out = options.out.empty() ? Join(data->work_dir, "report.html") : options.out;
  absl::Status status = store::WriteFileAtomically(out, RenderHtml(*data));
  if (!status.ok()) return status;
  return out;
}

}  // namespace divfuzz::report
