// Flags shared by several subcommands (each is defined once, in flags.cc).
#pragma once

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::string, targets);
ABSL_DECLARE_FLAG(std::string, findings);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(int, seconds);
ABSL_DECLARE_FLAG(std::string, fail_on);
ABSL_DECLARE_FLAG(int, minutes);
ABSL_DECLARE_FLAG(int, hours);
ABSL_DECLARE_FLAG(int, workers);
ABSL_DECLARE_FLAG(std::string, resume);
ABSL_DECLARE_FLAG(int64_t, seed);
ABSL_DECLARE_FLAG(bool, feedback);
ABSL_DECLARE_FLAG(double, feedback_cost);
ABSL_DECLARE_FLAG(int64_t, memory_budget_mb);
ABSL_DECLARE_FLAG(std::string, plugins);
ABSL_DECLARE_FLAG(std::string, corpus);
ABSL_DECLARE_FLAG(std::string, work);
ABSL_DECLARE_FLAG(int, timeout);
ABSL_DECLARE_FLAG(int, rss_limit_mb);
ABSL_DECLARE_FLAG(std::string, policy);
ABSL_DECLARE_FLAG(bool, tf32);
ABSL_DECLARE_FLAG(int, repro_seconds);
ABSL_DECLARE_FLAG(int, repro_jobs);
ABSL_DECLARE_FLAG(int, max_seconds);
ABSL_DECLARE_FLAG(std::string, hang_artifacts);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, signature);
ABSL_DECLARE_FLAG(std::string, passes);
ABSL_DECLARE_FLAG(bool, minimize);
ABSL_DECLARE_FLAG(int, per_family);
