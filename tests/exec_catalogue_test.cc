// Every catalogue entry, for every dtype it declares, runs on the CPU through
// the dispatcher with the arguments the generator makes, and produces exactly
// the types inference predicts.
#include <map>

#include "exec/dtype_convert.h"
#include "exec/executor.h"
#include "gtest/gtest.h"
#include "mutators/node_builder.h"
#include "ops/catalogue.h"

namespace divfuzz {
namespace {

// Curated entries; the generic ones are sampled in ops_generic_test.cc.
TEST(Catalogue, EveryOpRunsOnCpuWithInferredTypes) {
  std::map<std::string, int> ran, failed;
  for (const ops::OpSpec& spec : ops::Catalogue()) {
    if (spec.rule == ops::Rule::kGeneric) continue;
    for (graph::DType dtype : graph::kAllDTypes) {
      if (!ops::Has(spec.dtypes, dtype)) continue;
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        graph::Program p;
        ops::TypeEnv types;
        mutators::Random random(seed * 1000 + static_cast<uint64_t>(dtype));
        mutators::NodeBuilder builder(p, types, random);
        ASSERT_TRUE(builder.Append(spec, dtype)) << spec.Qualified();
        p.outputs = p.nodes.back().results;
        const exec::RunResult r = exec::Run(p, types, exec::Target::kCpu);
        ASSERT_EQ(r.nodes.size(), p.nodes.size());
        for (size_t i = 0; i < p.nodes.size(); ++i) {
          const exec::NodeResult& n = r.nodes[i];
          const std::string what = spec.Qualified() + " " + std::string(graph::DTypeName(dtype));
          if (n.error) {
            // Domain errors (a matrix that is not positive definite) are fine;
            // schema or dtype errors mean the catalogue is wrong.
            EXPECT_NE(n.error->kind, exec::NodeError::Kind::kBadArguments)
                << what << ": " << n.error->message;
            EXPECT_NE(n.error->kind, exec::NodeError::Kind::kNotImplemented)
                << what << ": " << n.error->message;
            ++failed[spec.Qualified()];
            continue;
          }
          ++ran[spec.Qualified()];
          for (size_t o = 0; o < n.outputs.size(); ++o) {
            const graph::TensorType& want = types.at(p.nodes[i].results[o]);
            EXPECT_EQ(n.outputs[o].scalar_type(), exec::ToScalarType(want.dtype)) << what;
            EXPECT_EQ(n.outputs[o].sizes().vec(), want.shape) << what;
          }
        }
      }
    }
  }
  // Every op must run at least once without raising.
  for (const ops::OpSpec& spec : ops::Catalogue()) {
    if (spec.rule == ops::Rule::kGeneric) continue;
    EXPECT_GT(ran[spec.Qualified()], 0) << spec.Qualified() << " never ran";
  }
}

}  // namespace
}  // namespace divfuzz
