#include "fuzz/cli/ops_variants.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "exec/cuda_variants.h"
#include "exec/executor.h"
#include "fuzz/flags.h"
#include "graph/stable_hash.h"
#include "mutators/mutator.h"
#include "mutators/node_builder.h"
#include "nlohmann/json.hpp"
#include "ops/catalogue.h"

namespace divfuzz::fuzz {
namespace {

// The last node's outputs, or its error, as bytes: equal texts are equal bits.
std::string Fingerprint(const exec::RunResult& r) {
  if (!r.setup_error.empty()) return "setup: " + r.setup_error;
  if (r.nodes.empty()) return "no nodes";
  const exec::NodeResult& n = r.nodes.back();
  if (n.error) return "raised: " + n.error->message;
  std::string out;
  for (const at::Tensor& t : n.outputs) {
    if (!t.defined()) {
      out += "|undefined";
      continue;
    }
    const at::Tensor c = t.contiguous();
    absl::StrAppend(&out, "|", c.toString(), c.sizes().vec().size(), ":");
    for (int64_t s : c.sizes()) absl::StrAppend(&out, s, ",");
    out.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
  }
  return out;
}

uint64_t Seed(const std::string& op) {
  return graph::Fnv1a64(op.data(), op.size(), graph::kFuzzHashBasis) ^ 0x5eedull;
}

}  // namespace

int RunOpsVariants(const std::string& list) {
  std::vector<exec::VariantSet> sets;
  if (list == "all") {
    for (const exec::CudaVariant& v : exec::CudaVariants()) sets.push_back(exec::VariantBit(v));
  } else {
    absl::StatusOr<std::vector<exec::VariantSet>> parsed = exec::ParseVariantList(list);
    if (!parsed.ok()) {
      std::cerr << "divfuzz ops: --cuda_variants: " << parsed.status().message() << "\n";
      return 2;
    }
    for (exec::VariantSet s : *parsed) {
      if (s != 0) sets.push_back(s);
    }
  }
  if (!exec::CudaAvailable()) {
    std::cerr << "divfuzz ops: --cuda_variants needs CUDA: no CUDA device is visible here, and "
                 "every variant (cuda+SWITCH) switches a CUDA library\n";
    return 2;
  }
  const bool json = absl::GetFlag(FLAGS_json);
  const std::string only = absl::GetFlag(FLAGS_only);
  // A kernel stuck on the GPU cannot be interrupted: the watchdog ends the
  // process naming the op, as the probe's does.
  const auto timeout = std::chrono::seconds(std::max(1, absl::GetFlag(FLAGS_probe_timeout)));
  // Static: the detached watchdog outlives this frame while the process exits.
  static std::atomic<int64_t> deadline{0};
  static std::string current;  // the op running, for the watchdog's message
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t d = deadline.load();
      const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count();
      if (d != 0 && now > d) {
        const std::string msg = "divfuzz ops: " + current + " ran past --probe_timeout; stopping\n";
        (void)!write(2, msg.data(), msg.size());
        _exit(3);
      }
    }
  }).detach();
  if (!json) {
    std::cout << absl::StrFormat("%-44s %-5s %-22s %-34s %s\n", "op", "dtype", "declared",
                                 "changed by (bitwise)", "raises under");
  }
  std::map<std::string, int> changed_count;
  for (const ops::OpSpec& spec : ops::Catalogue()) {
    const std::string name = spec.Qualified();
    if (!only.empty() && name.find(only) == std::string::npos) continue;
    graph::DType dtype = graph::DType::kF32;
    if (!ops::Has(spec.dtypes, dtype)) {
      bool found = false;
      for (graph::DType d : graph::kAllDTypes) {
        if (!found && ops::Has(spec.dtypes, d)) dtype = d, found = true;
      }
      if (!found) continue;
    }
    mutators::Random random(Seed(name));
    graph::Program p;
    ops::TypeEnv types;
    mutators::NodeBuilder builder(p, types, random);
    if (!builder.Append(spec, dtype) || p.nodes.back().QualifiedName() != name) continue;
    p.outputs = mutators::Leaves(p);
    current = name;
    deadline = std::chrono::duration_cast<std::chrono::milliseconds>(
                   (std::chrono::steady_clock::now() + timeout).time_since_epoch())
                   .count();
    const std::string base = Fingerprint(exec::Run(p, types, exec::Target::kCuda));
    const std::string again = Fingerprint(exec::Run(p, types, exec::Target::kCuda));
    std::vector<std::string> changed, raised;
    const bool nondeterministic = base != again;
    if (!nondeterministic && !absl::StartsWith(base, "raised")) {
      for (exec::VariantSet s : sets) {
        exec::RunResult r = exec::Run(p, types, exec::Target(exec::Target::kCuda, s));
        if (r.cuda_fatal) {
          std::cerr << "divfuzz ops: a CUDA fault poisoned the context in " << name
                    << " under cuda" << exec::VariantSuffix(s) << "; stopping\n";
          return 3;
        }
        const std::string f = Fingerprint(r);
        const std::string label = exec::VariantSuffix(s).substr(1);
        if (absl::StartsWith(f, "raised")) {
          raised.push_back(label);
        } else if (f != base) {
          changed.push_back(label);
          ++changed_count[label];
        }
      }
    }
    deadline = 0;
    const std::string declared = exec::CudaKernelNames(spec.cuda_kernels);
    const std::string status = absl::StartsWith(base, "raised") ? "raises on cuda"
                               : nondeterministic              ? "differs run to run"
                                                               : "";
    if (json) {
      // One line per op as it is measured: a run cut short keeps what it had.
      const nlohmann::json row = {{"op", name},         {"dtype", graph::DTypeName(dtype)},
                                  {"declared", declared}, {"changed", changed},
                                  {"raises", raised},     {"status", status}};
      std::cout << row.dump() << std::endl;
    } else if (!changed.empty() || !raised.empty() || !status.empty() || !only.empty()) {
      std::cout << absl::StrFormat("%-44s %-5s %-22s %-34s %s\n", name, graph::DTypeName(dtype),
                                   declared,
                                   status.empty() ? absl::StrJoin(changed, ",") : status,
                                   absl::StrJoin(raised, ","));
    }
  }
  if (!json) {
    std::cout << "ops each switch changes:";
    for (const auto& [label, n] : changed_count) std::cout << " " << label << "=" << n;
    std::cout << "\n";
  }
  return 0;
}

}  // namespace divfuzz::fuzz
