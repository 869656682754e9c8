// divfuzz: a differential fuzzer for libtorch. See README.md.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "exec/plugins.h"
#include "fuzz/commands.h"
#include "fuzz/flags.h"

namespace {

constexpr char kUsage[] = R"(divfuzz COMMAND [flags] [args]

Commands:
  campaign            fuzz for a time budget (--hours/--minutes/--seconds) with --workers per GPU
                      (or on the CPU pair), write findings/ with repros, print a summary;
                      --resume=DIR continues a stopped or killed campaign
  replay FILE.dfz...  run programs on both targets, print every node's outputs and the verdict
                      (exit 1 when they diverge, 2 on a bad program)
  ops [--json]        list the op catalogue (--probe=N: acceptance from real runs;
                      --learn=N: relearn the generic ops' argument forms)
  locate FILE         replay a crash/timeout artifact node by node (campaign uses it to name
                      the node that crashed or hung)
  minimize FILE.dfz   reduce a diverging program to a minimal one with the same root divergence
                      [--max_seconds=60] [--targets=A,B] [--signature=S] [--out=FILE.min.dfz]
                      (exit 1 when the program does not diverge)
  repro FINDING       minimize a finding (findings/<id>/ or a .dfz) and write min.dfz, repro.py,
                      repro_cpp/ and report.md [--out=DIR] [--minimize=false] [--max_seconds=60]
                      (exit 1 when the divergence does not reproduce here)
  report DIR          a self-contained HTML report of a campaign's work folder DIR: summary,
                      plots of exec/s and buckets over time, buckets by severity with links
                      [--findings=F (default: campaign.json's, else DIR/../findings)]
                      [--out=FILE (default DIR/report.html)] (exit 2 without stats.csv/index)
  seeds --out=DIR     a seed corpus: --per_family=2 programs per op family, each checked to
                      run on the CPU (corpus/families/ is written this way)
  fuzz LIBFUZZER_ARGS a raw libFuzzer worker (what campaign runs); DIVFUZZ_TARGETS,
                      DIVFUZZ_FINDINGS and DIVFUZZ_STATS configure it

Run 'divfuzz --help' for every flag.)";

}  // namespace

int main(int argc, char** argv) {
  // Plugins register kernels, so they load before anything runs; workers and
  // helper processes inherit the variable.
  if (const char* plugins = std::getenv("DIVFUZZ_PLUGINS"); plugins != nullptr) {
    if (absl::Status s = divfuzz::exec::LoadPlugins(plugins); !s.ok()) {
      std::cerr << "divfuzz: DIVFUZZ_PLUGINS: " << s.message() << "\n";
      return 2;
    }
  }
  // libFuzzer parses its own -flags: hand them over before Abseil sees them.
  if (argc >= 2 && std::strcmp(argv[1], "fuzz") == 0) {
    // libFuzzer re-executes argv without "fuzz" for -merge and -fork
    // children; the variable marks those as workers too.
    setenv("DIVFUZZ_FUZZ_WORKER", "1", 1);
    return divfuzz::fuzz::RunFuzzWorker(argc, argv);
  }
  if (std::getenv("DIVFUZZ_FUZZ_WORKER") != nullptr) {
    return divfuzz::fuzz::RunLibFuzzer(argc, argv);
  }
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() < 2) {
    std::cerr << kUsage << "\n";
    return 2;
  }
  if (const std::string plugins = absl::GetFlag(FLAGS_plugins); !plugins.empty()) {
    if (absl::Status s = divfuzz::exec::LoadPlugins(plugins); !s.ok()) {
      std::cerr << "divfuzz: --plugins: " << s.message() << "\n";
      return 2;
    }
    setenv("DIVFUZZ_PLUGINS", plugins.c_str(), 1);
  }
  const std::string command = rest[1];
  const std::vector<std::string> args(rest.begin() + 2, rest.end());
  if (command == "campaign") return divfuzz::fuzz::RunCampaign(args);
  if (command == "replay") return divfuzz::fuzz::RunReplay(args);
  if (command == "ops") return divfuzz::fuzz::RunOps(args);
  if (command == "locate") return divfuzz::fuzz::RunLocate(args);
  if (command == "minimize") return divfuzz::fuzz::RunMinimize(args);
  if (command == "repro") return divfuzz::fuzz::RunRepro(args);
  if (command == "seeds") return divfuzz::fuzz::RunSeeds(args);
  if (command == "report") return divfuzz::fuzz::RunReport(args);
  std::cerr << "divfuzz: unknown command '" << command << "'\n\n" << kUsage << "\n";
  return 2;
}
