// The gradient statement: `%gx, %gw = autograd::grad(%y, [%x, %w], grad_outputs=%v)`,
// torch.autograd.grad(outputs, inputs, grad_outputs): the gradients of
// sum(v * y) with respect to the listed program inputs. `%y` may be a list
// with a list of cotangents. Torch-free: the parser's checks, type inference,
// the executor, the mutators and the emitters all read it through here.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/program.h"

namespace divfuzz::graph {

inline constexpr char kGradOp[] = "autograd::grad";
inline constexpr char kGradOutputsArg[] = "grad_outputs";

struct GradCall {
  std::vector<std::string> outputs;     // the differentiated values (y)
  std::vector<std::string> wrt;         // the program inputs differentiated against (x)
  std::vector<std::string> cotangents;  // one per output (v)
  bool listed_outputs = false;          // `[%y1, %y2]` rather than `%y`
};

bool IsGradNode(const Node& node);

// The call's parts, or a message saying what was expected (without a location).
// Structure only: whether `wrt` names program inputs is ValidateProgram's check.
struct GradCallOrError {
  std::optional<GradCall> call;
  std::string error;
};
GradCallOrError ParseGradCall(const Node& node);

// The node for a call (results named by the caller).
Node MakeGradNode(const GradCall& call, std::vector<std::string> results);

// A statement that a later one differentiates again keeps its first-order
// gradients dL1/dv (v on its path) as values of the run, named
// FirstOrderName(v, statement's first result): the later statement captures
// dL2/d(dL1/dv) for them, which is how the oracle reruns the backward steps
// inside the earlier statement. '@' is not an identifier character, so the
// names never meet a program's.
std::string FirstOrderName(const std::string& value, const std::string& statement);
// v for FirstOrderName(v, s); "" for any other name.
std::string FirstOrderBase(const std::string& name);

// The path of gradient statement g's output `out`: its input (wrt[out]) and
// every value of a node before g that depends on it, with those nodes. Only
// their backward kernels form that gradient. Empty when g is no statement or
// has no such output.
struct GradPath {
  std::set<std::string> values;
  std::set<int> nodes;
};
GradPath PathOfGradient(const Program& program, int g, int out);

// Whether any node of the program is a gradient statement.
bool HasGradients(const Program& program);
// The program inputs some gradient statement differentiates against.
std::vector<std::string> DifferentiatedInputs(const Program& program);

}  // namespace divfuzz::graph
