// divfuzz locate FILE: replays an input that killed a worker (a libFuzzer
// crash/timeout artifact: raw bytes, parsed or generated exactly as the
// fuzzer did) in a fresh process, announcing each node before it runs, so the
// supervisor can tell which node crashed or hung.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "exec/executor.h"
#include "exec/index_precheck.h"
#include "fuzz/cli/backward_announcer.h"
#include "fuzz/cli/cli_common.h"
#include "fuzz/cli/commands.h"
#include "fuzz/flags.h"
#include "fuzz/harness/harness.h"
#include "mutators/value_variants.h"
#include "ops/infer.h"
#include "oracles/trigger.h"

namespace divfuzz::fuzz {

int RunLocate(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::cerr << "divfuzz locate: expected one input file\n";
    return 2;
  }
  // Kernel launches are asynchronous: a CUDA fault surfaces at some later
  // call. Synchronous launches make it surface in the node that caused it.
  setenv("CUDA_LAUNCH_BLOCKING", "1", /*overwrite=*/0);
  // The isolated lane's confirming replay runs what is declined elsewhere.
  if (absl::GetFlag(FLAGS_isolated)) exec::EnterIsolatedLane();
  std::ifstream in(args[0], std::ios::binary);
  if (!in) {
    std::cerr << args[0] << ": cannot read the file\n";
    return 2;
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string data = bytes.str();
  const graph::Program program =
      ProgramFromBytes(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  absl::StatusOr<ops::TypeEnv> types = ops::InferProgram(program);
  if (!types.ok()) {
    std::cerr << types.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<std::pair<exec::Target, exec::Target>> pair =
      TargetPairFromFlag(absl::GetFlag(FLAGS_targets));
  if (!pair.ok()) {
    std::cerr << pair.status().message() << "\n";
    return 2;
  }
  // Each target runs the program, announcing each node (and each backward
  // node inside a gradient statement); 3 on a CUDA fault.
  BackwardAnnouncer announce_backward;
  const auto locate = [&](const graph::Program& program, const ops::TypeEnv& types) {
    for (exec::Target t : {pair->first, pair->second}) {
      const exec::Target* target = &t;
      const std::string name(exec::TargetName(t));
      if (*target == exec::Target::kCpuScalar) {
        // Runs whole in its helper process: the side is known, the node is not.
        std::printf("RUN %s -1 <program>\n", name.c_str());
        std::fflush(stdout);
      }
      // Before each node: what is unusual about its inputs, so a crash or hang
      // on inf/NaN or near-maximum values can be judged by policy.
      const exec::InputInspector inspect = [&](int node, const std::vector<at::Tensor>& inputs) {
        const std::string trigger = oracles::TensorsTrigger(inputs);
        if (trigger != "ordinary") {
          std::printf("INPUTS %s %d %s\n", name.c_str(), node, trigger.c_str());
          std::fflush(stdout);
        }
      };
      const exec::RunResult r = exec::Run(program, types, *target, [&](int node) {
        // One line per node, flushed: the last one names the culprit.
        std::printf("RUN %s %d %s\n", name.c_str(), node,
                    program.nodes[node].QualifiedName().c_str());
        std::fflush(stdout);
        BackwardAnnouncer::At(name, node);
      }, inspect);
      // A CUDA fault is caught as an exception, not a signal; it killed the
      // worker all the same (its context was poisoned), so name the node.
      for (size_t i = 0; i < r.nodes.size(); ++i) {
        const auto& e = r.nodes[i].error;
        if (e && e->kind == exec::NodeError::Kind::kCudaFatal) {
          std::printf("CUDA_FATAL %s %zu %s\n", name.c_str(), i,
                      program.nodes[i].QualifiedName().c_str());
          std::printf("%s\n", e->message.c_str());
          return 3;
        }
      }
    }
    return 0;
  };
  if (const int code = locate(program, *types); code != 0) return code;
  // A campaign with value variants also ran them, batched, after the program
  // (fuzz/harness/harness.h): node numbers after BATCH are the batched program's.
  if (const int variants = absl::GetFlag(FLAGS_variants); variants > 1) {
    absl::StatusOr<mutators::VariantBatch> batch =
        mutators::BatchVariants(program, *types, variants - 1);
    if (batch.ok()) {
      std::printf("BATCH %d\n", batch->count);
      std::fflush(stdout);
      if (const int code = locate(batch->program, batch->types); code != 0) return code;
    }
  }
  std::printf("DONE\n");
  return 0;
}

}  // namespace divfuzz::fuzz
