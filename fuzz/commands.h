// The divfuzz tool's subcommands; each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace divfuzz::fuzz {

// A libFuzzer worker: argv is passed to LLVMFuzzerRunDriver as is.
int RunFuzzWorker(int argc, char** argv);
// The same for argv that is libFuzzer's entirely (its -merge/-fork children).
int RunLibFuzzer(int argc, char** argv);
int RunCampaign(const std::vector<std::string>& args);
int RunReplay(const std::vector<std::string>& args);
int RunOps(const std::vector<std::string>& args);
int RunLocate(const std::vector<std::string>& args);
int RunMinimize(const std::vector<std::string>& args);
int RunRepro(const std::vector<std::string>& args);
int RunSeeds(const std::vector<std::string>& args);
int RunReport(const std::vector<std::string>& args);

// "cpu,cuda" where CUDA is available, else "cpu,cpu-f64"; a --targets value wins.
std::string ResolveTargets(const std::string& flag_value);

}  // namespace divfuzz::fuzz
