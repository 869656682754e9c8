#include "fuzz/flags.h"

#include "absl/flags/flag.h"
#include "fuzz/feedback.h"

ABSL_FLAG(std::string, targets, "",
          "target pair A,B from cpu, cuda, cpu-f64, cpu-scalar (default: cpu,cuda with a GPU, else "
          "cpu,cpu-f64); B is the expected side for tolerances");
ABSL_FLAG(std::string, findings, "findings",
          "findings store folder (report: default campaign.json's, else DIR/../findings)");
ABSL_FLAG(bool, json, false, "ops: print JSON instead of a table");
ABSL_FLAG(int, seconds, 0,
          "campaign: time budget in seconds, added to --minutes and --hours (all 0: 60 s; the sum "
          "at most 30 days); with --resume: that much more time");
ABSL_FLAG(std::string, fail_on, "none",
          "campaign: exit 1 when a bucket of this severity or a more severe one was hit in this "
          "run: crash, hang, bug (bug-tier splits and tolerance), divergence, any (every bucket, "
          "expected and dtype gaps too), or none (exit 0 whatever was found)");
ABSL_FLAG(int, minutes, 0,
          "campaign: time budget in minutes, added to --hours and --seconds (0 or more)");
ABSL_FLAG(int, hours, 0,
          "campaign: time budget in hours, added to --minutes and --seconds (0 or more)");
ABSL_FLAG(int, workers, 1,
          "campaign: libFuzzer workers per visible GPU (each pinned with CUDA_VISIBLE_DEVICES); "
          "without a GPU target, workers in all (1 to 256)");
ABSL_FLAG(std::string, resume, "",
          "campaign: continue the campaign in this work folder (after a stop or kill -9) with "
          "its settings, corpus, findings and statistics, for the rest of its time budget; "
          "--hours/--minutes/--seconds give it that much more time instead (so a finished "
          "campaign can be extended); its other settings cannot be changed");
ABSL_FLAG(int64_t, seed, 0,
          "campaign: libFuzzer seed of the first worker generation (later ones add their number); "
          "0: libFuzzer picks");
ABSL_FLAG(bool, feedback, true,
          "campaign: feed each root divergence's (op, dtype, class and size) back to libFuzzer "
          "as coverage; false mutates the seed corpus blindly (a baseline for benchmarks)");
ABSL_FLAG(double, feedback_cost, divfuzz::fuzz::kDefaultFeedbackCost,
          "campaign: a program that ran more than this many times the mean run time earns no "
          "feedback (libFuzzer does not keep it for its verdict), so the corpus favours cheap "
          "programs; 0 turns it off (0 or more)");
ABSL_FLAG(int64_t, memory_budget_mb, 2048,
          "largest tensor footprint a program may have (all inputs and results at float64 "
          "width, in MiB; 1 or more); larger programs are rejected before anything is allocated");
ABSL_FLAG(std::string, plugins, "",
          "comma-separated shared libraries to load first (custom-op libraries whose "
          "TORCH_LIBRARY registrations add or replace kernels to fuzz); also DIVFUZZ_PLUGINS");
ABSL_FLAG(std::string, corpus, "corpus/seed,corpus/families",
          "campaign: comma-separated seed corpus folders (read-only)");
ABSL_FLAG(std::string, work, "campaign",
          "campaign: working folder (its corpus/, crashes/, logs and statistics)");
ABSL_FLAG(int, timeout, 20,
          "campaign: seconds one input may run before it counts as a hang; repro, minimize: the "
          "same for one run of a reducer candidate (the reduction goes on without it); 1 or more");
ABSL_FLAG(int, rss_limit_mb, 8192,
          "campaign: memory limit of a worker in MiB (libFuzzer's -rss_limit_mb; 0: none)");
ABSL_FLAG(std::string, policy, "",
          "tolerance policy file (JSON; see oracles/default_policy.json); default: built in");
ABSL_FLAG(int, repro_seconds, 30,
          "campaign: reducer budget for each new bucket, minimized (with repro.py, repro_cpp and "
          "report.md) beside the fuzzing (0 or more; 0 turns it off)");
ABSL_FLAG(int, repro_jobs, 0,
          "campaign: reducer processes running at once beside the workers (0 or more; 0: one per "
          "8 cores, at least one)");
ABSL_FLAG(bool, tf32, false,
          "let CUDA use TF32 and reduced-precision reductions (off by default); their "
          "divergences are then reported as expected");
ABSL_FLAG(int, max_seconds, 60,
          "minimize, repro: time budget of the reducer in seconds (0 or more)");
ABSL_FLAG(std::string, hang_artifacts, "",
          "repro: when a kernel hangs or crashes the reducer, save the program it was running here "
          "as timeout-reduce-<hash> or crash-reduce-<hash> (a campaign's crashes/ folder: it "
          "becomes a hang or crash finding)");
ABSL_FLAG(std::string, out, "",
          "minimize: output program (default FILE.min.dfz; - for stdout); repro: output folder "
          "(default: the finding's folder, or FILE.repro/); report: the HTML file (default "
          "DIR/report.html)");
ABSL_FLAG(std::string, signature, "",
          "minimize, repro: the root divergence to keep, op|dtype|class|wrong_side (default: a "
          "finding's bucket, else the most severe root)");
ABSL_FLAG(std::string, passes, "",
          "minimize, repro: comma-separated reduction passes to run (default: all)");
ABSL_FLAG(bool, minimize, true, "repro: minimize before writing the repros");
ABSL_FLAG(int, per_family, 2, "seeds: programs to write for each op family (1 or more)");
