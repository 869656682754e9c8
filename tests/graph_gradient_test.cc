// The gradient statement in the text format: parse, print, errors.
#include "graph/gradient.h"

#include "graph/parser.h"
#include "graph/printer.h"
#include "gtest/gtest.h"

namespace divfuzz::graph {
namespace {

constexpr char kProgram[] = R"(divfuzz v1
input %x: f32[4] = values(0.5, -1.0, 2.0, 0.0)
input %w: f32[4] = normal(seed=3)
input %v: f32[4] = fill(1.0)
%y = aten::mul.Tensor(%x, %w)
%gx, %gw = autograd::grad(%y, [%x, %w], grad_outputs=%v)
%h = aten::sin(%gx)
%ggx = autograd::grad([%h], [%x], grad_outputs=[%v])
output %gx, %gw, %ggx
)";

TEST(GradientFormat, RoundTripsThroughThePrinter) {
  absl::StatusOr<Program> p = ParseProgram(kProgram, "g.dfz");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(IsGradNode(p->nodes[1]));
  GradCallOrError g = ParseGradCall(p->nodes[1]);
  ASSERT_TRUE(g.call.has_value()) << g.error;
  EXPECT_EQ(g.call->outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(g.call->wrt, (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(g.call->cotangents, std::vector<std::string>{"v"});
  EXPECT_TRUE(ParseGradCall(p->nodes[3]).call->listed_outputs);
  const std::string text = PrintProgram(*p);
  absl::StatusOr<Program> again = ParseProgram(text, "g2.dfz");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << text;
  EXPECT_EQ(*p, *again);
  EXPECT_EQ(DifferentiatedInputs(*p), (std::vector<std::string>{"x", "w"}));
  // The node MakeGradNode builds is the one the parser reads.
  EXPECT_EQ(MakeGradNode(*g.call, {"gx", "gw"}), p->nodes[1]);
}

TEST(GradientFormat, ErrorsNameTheLineAndWhatWasExpected) {
  const std::string not_an_input = R"(divfuzz v1
input %x: f32[2] = fill(1.0)
%y = aten::sin(%x)
%g = autograd::grad(%y, [%y], grad_outputs=%x)
output %g
)";
  absl::StatusOr<Program> p = ParseProgram(not_an_input, "bad.dfz");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("bad.dfz:4:"), std::string::npos) << p.status();
  EXPECT_NE(p.status().message().find("expected program inputs to differentiate against"),
            std::string::npos)
      << p.status();

  const std::string integer = R"(divfuzz v1
input %x: i32[2] = fill(1)
input %v: f32[2] = fill(1.0)
%y = aten::sin(%x)
%g = autograd::grad(%y, [%x], grad_outputs=%v)
output %g
)";
  p = ParseProgram(integer, "int.dfz");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("int.dfz:5:"), std::string::npos) << p.status();
  EXPECT_NE(p.status().message().find("floating or complex input"), std::string::npos);

  const std::string results = R"(divfuzz v1
input %x: f32[2] = fill(1.0)
%y = aten::sin(%x)
%g, %h = autograd::grad(%y, [%x], grad_outputs=%x)
output %g
)";
  p = ParseProgram(results, "n.dfz");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("expected one result per input (1), got 2"),
            std::string::npos)
      << p.status();
}

}  // namespace
}  // namespace divfuzz::graph
