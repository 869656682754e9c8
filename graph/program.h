// The program IR: typed SSA values, inputs with exact payloads or seeded
// generators, op nodes naming ATen schemas, and outputs. See docs/FORMAT.md
// for the surface syntax and docs/DESIGN.md for why it is shaped so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dtype.h"

namespace divfuzz::graph {

struct SourceLoc {
  int line = 0;  // 1-based; 0 when the node was built in memory
  int col = 0;
};

struct TensorType {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // empty = 0-d scalar tensor
  // Product of the dims; -1 if a dim is negative, INT64_MAX if it overflows.
  int64_t Numel() const;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

// How an input's elements are produced. Generators are deterministic and
// implemented here (not with torch's RNG) so every target and every emitted
// repro sees the same bits.
struct Payload {
  enum class Kind {
    kFill,     // fill(v): every element v
    kValues,   // values(v0, v1, ...): exact, row-major; complex: re, im pairs
    kUniform,  // uniform(seed=, low=, high=)
    kNormal,   // normal(seed=, mean=, std=)
    kSpecial,  // special(seed=): mix of 0, -0, denormals, huge, inf, nan ...
    // What breaks numerics (graph/materialize.h says exactly how each is drawn).
    kLimits,   // limits(seed=): special's values plus near overflow/underflow, int limits
    kEdges,    // edges(seed=): function domain edges (0, +-1, +-pi/2, ...), some one ulp off
    kTies,     // ties(seed=, distinct=K): every element one of K values
    kDynamic,  // dynamic(seed=, decades=E): random signs, magnitudes across E decades
    kPlanted,  // planted(seed=): normal, limits planted in vector bodies and scalar tails
    // Matrix payloads: over the last two dims, batched over the leading ones.
    kSingular,        // singular(seed=): a row (or column) is a power-of-2 multiple of another
    kNearSingular,    // near_singular(seed=): singular, then one element a few ulps off
    kRankDeficient,   // rank_deficient(seed=, rank=K): X*Y with inner dimension K
    kIllConditioned,  // ill_conditioned(seed=, cond=C): U*diag(s)*V^T, s from 1 to 1/C
    kSpd,             // spd(seed=): B*B^T/n + I, symmetric positive definite
    kScaled,          // scaled(seed=, decades=E): diag(r)*N*diag(c), r and c span E decades
  };
  Kind kind = Kind::kFill;
  std::vector<double> values;  // kFill: one value; kValues: the elements
  uint64_t seed = 0;
  double a = 0;  // low (uniform), mean (normal), or the one parameter of a later kind
  double b = 1;  // high (uniform) or std (normal)

  bool operator==(const Payload& o) const;
  bool operator!=(const Payload& o) const { return !(*this == o); }
};

// A literal argument or a reference to a value (%name), or a list of either.
struct Literal {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kDType, kValue, kList };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // kString: the text; kValue: the value name without '%'
  DType dtype = DType::kF32;
  std::vector<Literal> list;

  static Literal None() { return {}; }
  static Literal Bool(bool v);
  static Literal Int(int64_t v);
  static Literal Float(double v);
  static Literal String(std::string v);
  static Literal OfDType(DType v);
  static Literal Value(std::string name);
  static Literal List(std::vector<Literal> items);
  bool operator==(const Literal& o) const;  // floats compared bitwise
  bool operator!=(const Literal& o) const { return !(*this == o); }
};

struct Argument {
  std::string name;  // empty = positional
  Literal value;
  bool operator==(const Argument& o) const { return name == o.name && value == o.value; }
};

// The payload names of the text format ("fill", "rank_deficient", ...), and
// the one named parameter a later kind takes ("rank", "cond", ...; empty for
// none) with its default. The table lives in program.cc.
std::string_view PayloadKindName(Payload::Kind kind);
std::optional<Payload::Kind> ParsePayloadKind(std::string_view name);
std::string_view PayloadParamName(Payload::Kind kind);
double PayloadParamDefault(Payload::Kind kind);
bool IsMatrixPayload(Payload::Kind kind);

// How an input's tensor is laid out in memory; the values are the same. Every
// target and repro builds the contiguous tensor, moves it to its device and
// dtype, then applies the layout (exec/ and minimize/emit_*.cc):
//   transposed:    t.transpose(-1,-2).contiguous().transpose(-1,-2) (rank >= 2)
//   strided:       the [..., 2n] zero tensor's [..., ::2] view, filled (rank >= 1)
//   channels_last: t.contiguous(memory_format=channels_last) (rank 4)
enum class Layout { kContiguous, kTransposed, kStrided, kChannelsLast };
std::string_view LayoutName(Layout layout);  // "contiguous", "transposed", ...
std::optional<Layout> ParseLayout(std::string_view name);

struct Input {
  std::string name;  // without '%'
  TensorType type;
  Layout layout = Layout::kContiguous;  // `layout=` in the text; omitted when contiguous
  Payload payload;
  SourceLoc loc;
  bool operator==(const Input& o) const;  // ignores loc
  bool operator!=(const Input& o) const { return !(*this == o); }
};

struct Node {
  std::vector<std::string> results;  // SSA names defined, without '%'
  std::string op;                    // "aten::add"
  std::string overload;              // "Scalar", or empty for the default
  std::vector<Argument> args;
  SourceLoc loc;
  std::string QualifiedName() const;     // "aten::add.Scalar"
  // The values it reads (value arguments and list items), each once, in order.
  std::vector<std::string> Uses() const;
  bool operator==(const Node& o) const;  // ignores loc
  bool operator!=(const Node& o) const { return !(*this == o); }
};

struct Program {
  int version = 1;
  std::vector<Input> inputs;
  std::vector<Node> nodes;
  std::vector<std::string> outputs;  // value names without '%'
  SourceLoc output_loc;              // of the `output` statement

  // Content equality, floats bitwise; source locations are ignored.
  bool operator==(const Program& o) const;
  bool operator!=(const Program& o) const { return !(*this == o); }
};

}  // namespace divfuzz::graph
