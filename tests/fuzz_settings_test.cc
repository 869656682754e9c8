// fuzz/settings.def carries the campaign's settings: every one survives
// campaign.json and, where it has a variable, the worker's environment;
// campaign.json keeps the keys earlier versions wrote, so their campaigns
// resume; a worker left without its variables runs with the CLI's defaults.
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "fuzz/harness/harness.h"
#include "fuzz/settings.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace divfuzz::fuzz {
namespace {

// A value of each setting's type that is not its default.
std::string Changed(const std::string& v) { return v + "/changed"; }
bool Changed(bool v) { return !v; }
int Changed(int v) { return v + 7; }
int64_t Changed(int64_t v) { return v + 11; }
double Changed(double v) { return v + 0.25; }
std::vector<std::string> Changed(std::vector<std::string> v) {
  v.push_back("changed");
  return v;
}

// Every setting and record away from its default.
CampaignConfig EveryFieldChanged() {
  CampaignConfig c;
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  c.name = Changed(c.name);
#define DIVFUZZ_RECORD(type, name, default_value, json_key, if_missing, help) \
  c.name = Changed(c.name);
#include "fuzz/settings.def"
  return c;
}

// The names of the environment variables the table gives a worker.
std::vector<std::string> WorkerVariables() {
  std::vector<std::string> vars;
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  if (std::string(env).size() > 0) vars.push_back(env);
#include "fuzz/settings.def"
  return vars;
}

// Unsets the worker variables before and after a test.
struct CleanWorkerEnvironment {
  CleanWorkerEnvironment() { Clear(); }
  ~CleanWorkerEnvironment() { Clear(); }
  static void Clear() {
    for (const std::string& v : WorkerVariables()) unsetenv(v.c_str());
  }
};

TEST(Settings, EverySettingRoundTripsThroughCampaignJson) {
  const CampaignConfig changed = EveryFieldChanged();
  absl::StatusOr<CampaignConfig> back = CampaignConfig::FromJson(changed.ToJson(), "test");
  ASSERT_TRUE(back.ok()) << back.status();
  const CampaignConfig defaults;
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  EXPECT_NE(changed.name, defaults.name) << #name;                                  \
  EXPECT_EQ(back->name, changed.name) << #name;                                     \
  EXPECT_TRUE(changed.ToJson().contains(json_key)) << #name;
#define DIVFUZZ_RECORD(type, name, default_value, json_key, if_missing, help) \
  EXPECT_NE(changed.name, defaults.name) << #name;                            \
  EXPECT_EQ(back->name, changed.name) << #name;                               \
  EXPECT_TRUE(changed.ToJson().contains(json_key)) << #name;
#include "fuzz/settings.def"
}

// The keys campaign.json had before the table: a campaign started by an
// earlier version resumes, and one started now resumes in an earlier one.
TEST(Settings, CampaignJsonKeepsTheKeysEarlierVersionsWrote) {
  const std::set<std::string> earlier = {
      "version",  "targets",       "findings",      "seeds",  "budget_seconds",   "workers",
      "gpus",     "timeout",       "rss_limit_mb",  "policy", "memory_budget_mb", "tf32",
      "feedback", "feedback_cost", "repro_seconds", "seed",   "plugins",          "started",
      // Added by issue 18, read as their defaults where missing (kDefault).
      "deferred_transfers", "variants",
      // Issue 31's share of gradient programs, read as its default where missing.
      "grad_share",
      // Issue 34's known bugs and OSS-Fuzz mode, read as their defaults where missing.
      "baseline", "abort_on_bug",
      // Issue 32's isolated lane, read as its defaults where missing.
      "isolated_share", "isolated_timeout",
      // The CUDA backend variants, read as its default where missing.
      "cuda_variants"};
  const nlohmann::json written = CampaignConfig().ToJson();
  std::set<std::string> now;
  for (const auto& [key, value] : written.items()) now.insert(key);
  EXPECT_EQ(now, earlier);
  EXPECT_EQ(written["version"], 1);
}

TEST(Settings, AnEarlierCampaignJsonReadsAsItWasWritten) {
  const nlohmann::json earlier = nlohmann::json::parse(R"({
    "budget_seconds": 3600, "feedback": false, "feedback_cost": 2.5,
    "findings": "../findings", "gpus": ["0", "1"], "memory_budget_mb": 512,
    "plugins": "/p/libops.so", "policy": "", "repro_seconds": 0, "rss_limit_mb": 4096,
    "seed": 42, "seeds": ["/src/corpus/seed"], "started": "2026-11-20T10:00:00Z",
    "targets": "cpu,cuda", "tf32": true, "timeout": 5, "version": 1, "workers": 2})");
  absl::StatusOr<CampaignConfig> c = CampaignConfig::FromJson(earlier, "campaign.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->budget_seconds, 3600);
  EXPECT_FALSE(c->feedback);
  EXPECT_EQ(c->feedback_cost, 2.5);
  EXPECT_EQ(c->findings, "../findings");
  EXPECT_EQ(c->gpus, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(c->memory_budget_mb, 512);
  EXPECT_EQ(c->plugins, "/p/libops.so");
  EXPECT_EQ(c->repro_seconds, 0);
  EXPECT_EQ(c->rss_limit_mb, 4096);
  EXPECT_EQ(c->seed, 42);
  EXPECT_EQ(c->seeds, (std::vector<std::string>{"/src/corpus/seed"}));
  EXPECT_EQ(c->started, "2026-11-20T10:00:00Z");
  EXPECT_EQ(c->targets, "cpu,cuda");
  EXPECT_TRUE(c->tf32);
  EXPECT_EQ(c->timeout, 5);
  EXPECT_EQ(c->workers, 2);
  // Written again, it is the same object, with the later keys' defaults.
  nlohmann::json again = earlier;
  again["deferred_transfers"] = false;
  again["variants"] = 16;
  again["grad_share"] = 0.25;
  again["baseline"] = "";
  again["abort_on_bug"] = false;
  again["isolated_share"] = 0.02;
  again["isolated_timeout"] = 5;
  again["cuda_variants"] = "";
  EXPECT_EQ(c->ToJson(), again);
}

TEST(Settings, MissingKeysReadAsTheTableDefaultsAndRequiredOnesAreErrors) {
  const nlohmann::json oldest = {
      {"targets", "cpu,cpu-f64"}, {"findings", "/f"}, {"budget_seconds", 60}};
  absl::StatusOr<CampaignConfig> c = CampaignConfig::FromJson(oldest, "campaign.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->workers, 1);
  EXPECT_EQ(c->timeout, 20);
  EXPECT_EQ(c->rss_limit_mb, 8192);
  EXPECT_EQ(c->memory_budget_mb, 2048);  // --memory_budget_mb's default
  EXPECT_TRUE(c->feedback);
  EXPECT_EQ(c->feedback_cost, 3.0);
  EXPECT_EQ(c->repro_seconds, 30);
  EXPECT_TRUE(c->seeds.empty());
  for (const char* required : {"targets", "findings", "budget_seconds"}) {
    nlohmann::json without = oldest;
    without.erase(required);
    absl::StatusOr<CampaignConfig> bad = CampaignConfig::FromJson(without, "DIR/campaign.json");
    ASSERT_FALSE(bad.ok()) << required;
    EXPECT_NE(bad.status().message().find("DIR/campaign.json"), std::string::npos) << bad.status();
    EXPECT_NE(bad.status().message().find(required), std::string::npos) << bad.status();
  }
  nlohmann::json no_workers = oldest;
  no_workers["workers"] = 0;
  EXPECT_FALSE(CampaignConfig::FromJson(no_workers, "campaign.json").ok());
}

// The variables the campaign gave its workers before the table, no more.
TEST(Settings, WorkersGetTheVariablesTheyGotBefore) {
  const std::set<std::string> earlier = {
      "DIVFUZZ_TARGETS",  "DIVFUZZ_FINDINGS",      "DIVFUZZ_POLICY",           "DIVFUZZ_TF32",
      "DIVFUZZ_FEEDBACK", "DIVFUZZ_FEEDBACK_COST", "DIVFUZZ_MEMORY_BUDGET_MB", "DIVFUZZ_PLUGINS",
      // Issue 18's throughput settings.
      "DIVFUZZ_DEFERRED_TRANSFERS", "DIVFUZZ_VARIANTS",
      // Issue 31's share of gradient programs.
      "DIVFUZZ_GRAD_SHARE",
      // Issue 34's known bugs and OSS-Fuzz mode.
      "DIVFUZZ_BASELINE", "DIVFUZZ_ABORT_ON_BUG",
      // Issue 32's share of declined programs queued for the isolated lane.
      "DIVFUZZ_ISOLATED_SHARE"};
  const std::map<std::string, std::string> written = WorkerEnvironment(CampaignConfig());
  std::set<std::string> now;
  for (const auto& [var, value] : written) now.insert(var);
  EXPECT_EQ(now, earlier);
  const std::vector<std::string> vars = WorkerVariables();
  EXPECT_EQ(std::set<std::string>(vars.begin(), vars.end()), earlier);
  // As the campaign wrote them: booleans 1/0, numbers as absl::StrCat prints them.
  CampaignConfig c;
  c.feedback = false;
  c.tf32 = true;
  const std::map<std::string, std::string> env = WorkerEnvironment(c);
  EXPECT_EQ(env.at("DIVFUZZ_FEEDBACK"), "0");
  EXPECT_EQ(env.at("DIVFUZZ_TF32"), "1");
  EXPECT_EQ(env.at("DIVFUZZ_FEEDBACK_COST"), "3");
  EXPECT_EQ(env.at("DIVFUZZ_MEMORY_BUDGET_MB"), "2048");
  EXPECT_EQ(env.at("DIVFUZZ_POLICY"), "");
}

TEST(Settings, EveryWorkerSettingRoundTripsThroughTheEnvironment) {
  CleanWorkerEnvironment clean;
  const CampaignConfig changed = EveryFieldChanged();
  for (const auto& [var, value] : WorkerEnvironment(changed)) {
    setenv(var.c_str(), value.c_str(), 1);
  }
  absl::StatusOr<CampaignConfig> back = ConfigFromWorkerEnvironment();
  ASSERT_TRUE(back.ok()) << back.status();
  const CampaignConfig defaults;
  int carried = 0;
#define DIVFUZZ_SETTING(type, name, default_value, json_key, if_missing, env, help) \
  if (std::string(env).empty()) {                                                   \
    EXPECT_EQ(back->name, defaults.name) << #name << " has no variable";            \
  } else {                                                                          \
    EXPECT_EQ(back->name, changed.name) << #name << " through " << env;             \
    ++carried;                                                                      \
  }
#include "fuzz/settings.def"
  EXPECT_EQ(carried, 14);
}

TEST(Settings, AWorkerWithoutItsVariablesRunsWithTheCliDefaults) {
  CleanWorkerEnvironment clean;
  absl::StatusOr<CampaignConfig> read = ConfigFromWorkerEnvironment();
  ASSERT_TRUE(read.ok()) << read.status();
  const CampaignConfig defaults;
  EXPECT_EQ(read->ToJson(), defaults.ToJson());
  // HarnessConfig's own default feedback_cost is 0 (a harness built in code);
  // a worker's is the flag's.
  setenv("DIVFUZZ_TARGETS", "cpu,cpu-f64", 1);
  const HarnessConfig h = ConfigFromEnvironment();
  EXPECT_EQ(h.feedback_cost, 3.0);
  EXPECT_EQ(h.memory_budget_mb, 2048);
  EXPECT_EQ(h.findings_dir, "findings");
  EXPECT_FALSE(h.policy.cuda_tf32);
  EXPECT_EQ(h.variants, 16);
  EXPECT_EQ(h.grad_share, 0.25);
  EXPECT_FALSE(exec::DeferredTransfers());
  EXPECT_FALSE(h.on_mps);
  setenv("DIVFUZZ_ON_MPS", "1", 1);  // the campaign's workers on its MPS server
  EXPECT_TRUE(ConfigFromEnvironment().on_mps);
  unsetenv("DIVFUZZ_ON_MPS");
  setenv("DIVFUZZ_VARIANTS", "4", 1);
  setenv("DIVFUZZ_DEFERRED_TRANSFERS", "1", 1);
  EXPECT_EQ(ConfigFromEnvironment().variants, 4);
  EXPECT_TRUE(exec::DeferredTransfers());
  exec::SetDeferredTransfers(false);
}

TEST(Settings, WorkerVariablesParseAsBeforeAndBadNumbersAreErrors) {
  CleanWorkerEnvironment clean;
  // Booleans: "1" and "0"; anything else leaves the default (as before:
  // DIVFUZZ_TF32 was on only for "1", DIVFUZZ_FEEDBACK off only for "0").
  setenv("DIVFUZZ_TF32", "yes", 1);
  setenv("DIVFUZZ_FEEDBACK", "no", 1);
  absl::StatusOr<CampaignConfig> c = ConfigFromWorkerEnvironment();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->tf32);
  EXPECT_TRUE(c->feedback);
  setenv("DIVFUZZ_FEEDBACK_COST", "", 1);  // empty: unset
  c = ConfigFromWorkerEnvironment();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->feedback_cost, 3.0);
  setenv("DIVFUZZ_FEEDBACK_COST", "cheap", 1);
  c = ConfigFromWorkerEnvironment();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "DIVFUZZ_FEEDBACK_COST: expected a number, got 'cheap'");
  unsetenv("DIVFUZZ_FEEDBACK_COST");
  setenv("DIVFUZZ_MEMORY_BUDGET_MB", "2G", 1);
  c = ConfigFromWorkerEnvironment();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "DIVFUZZ_MEMORY_BUDGET_MB: expected an integer, got '2G'");
}

}  // namespace
}  // namespace divfuzz::fuzz
