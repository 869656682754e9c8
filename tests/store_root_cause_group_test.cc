// Root-cause group keys (store/root_cause_group.h) and the "group" field the
// findings store keeps on every index entry, old stores included.
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/findings_store.h"
#include "store/root_cause_group.h"
#include "tests/test_util.h"

namespace divfuzz::store {
namespace {

// An index entry as the store writes it, with the oracle's trigger and
// witness in detail (either left out when empty).
nlohmann::json Entry(const std::string& op, const std::string& dtype, const std::string& trigger,
                     const std::string& witness = "cpu-f64") {
  nlohmann::json e = {{"id", op + "-" + dtype},
                      {"signature", op + "|" + dtype + "|tolerance|cuda"},
                      {"root_op", op},
                      {"dtype", dtype},
                      {"class", "tolerance"},
                      {"wrong_side", "cuda"},
                      {"tier", "bug"},
                      {"severity", "bug-tolerance"},
                      {"detail", {{"summary", "element 0"}, {"expected_rule", ""}}}};
  if (!trigger.empty()) e["detail"]["trigger"] = trigger;
  if (!witness.empty()) e["detail"]["witness"] = witness;
  return e;
}

TEST(RootCauseGroup, OverloadsAndDtypesOfOneOpShareAKey) {
  const RootCauseKey tensor = RootCauseKeyOf(Entry("aten::add.Tensor", "f16", "ordinary"));
  const RootCauseKey scalar = RootCauseKeyOf(Entry("aten::add.Scalar", "bf16", "ordinary"));
  const RootCauseKey inplace = RootCauseKeyOf(Entry("aten::add_", "f32", "ordinary"));
  EXPECT_EQ(tensor.Id(), "add|tolerance|bug|cuda|witness:cpu-f64|ordinary");
  EXPECT_EQ(scalar.Id(), tensor.Id());
  EXPECT_EQ(inplace.Id(), tensor.Id());
  EXPECT_EQ(tensor.Label(), "add: tolerance (bug), cuda wrong, witness cpu-f64, ordinary inputs");

  // Another trigger, witness, side or class is another mechanism.
  EXPECT_NE(RootCauseKeyOf(Entry("aten::add.Scalar", "bf16", "nan")).Id(), tensor.Id());
  EXPECT_EQ(RootCauseKeyOf(Entry("aten::add.Scalar", "bf16", "nan")).Id(),
            "add|tolerance|bug|cuda|witness:cpu-f64|nan");
  EXPECT_NE(RootCauseKeyOf(Entry("aten::add.Tensor", "f16", "ordinary", "cpu-scalar")).Id(),
            tensor.Id());
  nlohmann::json cpu = Entry("aten::add.Tensor", "f16", "ordinary");
  cpu["wrong_side"] = "cpu";
  EXPECT_NE(RootCauseKeyOf(cpu).Id(), tensor.Id());
  nlohmann::json split = Entry("aten::add.Tensor", "f16", "ordinary");
  split["class"] = "class_split";
  EXPECT_NE(RootCauseKeyOf(split).Id(), tensor.Id());
  nlohmann::json sub = Entry("aten::sub.Tensor", "f16", "ordinary");
  EXPECT_NE(RootCauseKeyOf(sub).Id(), tensor.Id());
}

TEST(RootCauseGroup, OpBaseNames) {
  EXPECT_EQ(OpBaseName("aten::add.Tensor"), "add");
  EXPECT_EQ(OpBaseName("aten::add_.Scalar"), "add");
  EXPECT_EQ(OpBaseName("aten::add"), "add");
  EXPECT_EQ(OpBaseName("aten::__and__.Tensor"), "__and__");
  EXPECT_EQ(OpBaseName("aten::special_bessel_j0"), "special_bessel_j0");
  EXPECT_EQ(OpBaseName("aten::linalg_matrix_exp"), "linalg_matrix_exp");
  EXPECT_EQ(OpBaseName("divfuzz_faulty::log2.default"), "divfuzz_faulty::log2");
  EXPECT_EQ(OpBaseName(""), "");
}

TEST(RootCauseGroup, OldEntriesAndPolicyRules) {
  // Before the oracle named triggers and witnesses: ordinary, no witness.
  nlohmann::json old = Entry("aten::logdet", "f32", "", "");
  old["detail"].erase("expected_rule");
  const RootCauseKey key = RootCauseKeyOf(old);
  EXPECT_EQ(key.trigger, "ordinary");
  EXPECT_EQ(key.decided_by, "");
  EXPECT_EQ(key.Id(), "logdet|tolerance|bug|cuda||ordinary");
  EXPECT_EQ(RootCauseKeyOf(nlohmann::json::object()).Id(), "|||||ordinary");
  // No detail at all, or not an object.
  old.erase("detail");
  EXPECT_EQ(RootCauseKeyOf(old).Id(), key.Id());
  old["detail"] = "text";
  EXPECT_EQ(RootCauseKeyOf(old).Id(), key.Id());

  // A policy rule decides over the witness.
  nlohmann::json ruled = Entry("aten::sum.dim_IntList", "f32", "ordinary");
  ruled["tier"] = "expected";
  ruled["wrong_side"] = "undecided";
  ruled["detail"]["expected_rule"] = "cancelling_reductions";
  EXPECT_EQ(RootCauseKeyOf(ruled).Id(),
            "sum|tolerance|expected|undecided|rule:cancelling_reductions|ordinary");
  EXPECT_EQ(RootCauseKeyOf(ruled).Label(),
            "sum: tolerance (expected), side undecided, rule cancelling_reductions, ordinary "
            "inputs");
}

TEST(RootCauseGroup, StoreKeepsTheGroupOnEveryEntry) {
  const std::string dir = divfuzz::testing::TempDir("store") + "/findings";
  auto store = FindingsStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  FindingHit hit =
      divfuzz::testing::HitFor("aten::add.Tensor|f16|tolerance|cuda", "cpu vs cuda", "bug");
  hit.detail = {{"trigger", "near_max"}, {"witness", "cuda-f64"}};
  auto r = (*store)->Record(hit, "divfuzz v1\n");
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string want = "add|tolerance|bug|cuda|witness:cuda-f64|near_max";
  EXPECT_NE(divfuzz::testing::ReadTextFile(dir + "/index.jsonl").find("\"group\":\"" + want),
            std::string::npos);
  // The store owns the field.
  EXPECT_FALSE((*store)->WriteArtifact(r->id, "x.txt", "x", "group").ok());

  // A line from a store written before groups: Load fills the group in, and
  // the next rewrite of the index stores it.
  const std::string old_line =
      R"({"id":"logdet-f32-class_split-1","signature":"aten::logdet|f32|class_split|cpu",)"
      R"("root_op":"aten::logdet","dtype":"f32","class":"class_split","wrong_side":"cpu",)"
      R"("tier":"bug","severity":"bug-split","count":3,"detail":{"summary":"x"}})";
  divfuzz::testing::WriteTextFile(
      dir + "/index.jsonl", divfuzz::testing::ReadTextFile(dir + "/index.jsonl") + old_line + "\n");
  auto entries = (*store)->Load();
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0]["group"], want);
  EXPECT_EQ((*entries)[1]["group"], "logdet|class_split|bug|cpu||ordinary");
  ASSERT_TRUE((*store)->AddHits({{hit.signature, 1}}).ok());
  const std::string text = divfuzz::testing::ReadTextFile(dir + "/index.jsonl");
  EXPECT_NE(text.find("\"group\":\"logdet|class_split|bug|cpu||ordinary\""), std::string::npos)
      << text;
}

}  // namespace
}  // namespace divfuzz::store
