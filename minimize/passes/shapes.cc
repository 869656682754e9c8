// shapes: fewer and smaller dims. Candidates, biggest cut first: drop a dim of
// an input (keeping index 0 of it); shrink a size everywhere it occurs at once
// (so square matrices stay square and matmul's inner dims keep matching) to
// 1, 2, half or one less; then the same per input and dim, keeping the
// leading or the trailing window (and, down to size 1 of a dim of at most 16,
// each single index). values() payloads are sliced consistently; generators
// draw for the new shape, or failing that are sliced too.
// Dependents are re-typed by the interestingness test (ops::InferProgram).
#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include "minimize/pass.h"
#include "minimize/program_edit.h"

namespace divfuzz::minimize {
namespace {

struct NewShape {
  std::vector<int> kept;         // old dims kept, ascending
  std::vector<int64_t> sizes;    // one per kept dim
  std::vector<int64_t> offsets;  // one per old dim (empty: all 0)
};

// New shapes for some inputs, by input index.
struct Resize {
  std::map<size_t, NewShape> inputs;
};

std::vector<int> AllDims(size_t rank) {
  std::vector<int> dims(rank);
  for (size_t i = 0; i < rank; ++i) dims[i] = static_cast<int>(i);
  return dims;
}

std::vector<int64_t> SmallerSizes(int64_t v) {
  std::vector<int64_t> out;
  for (int64_t t : {int64_t{1}, int64_t{2}, v / 2, v - 1}) {
    if (t >= 1 && t < v && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

std::vector<Resize> Proposals(const graph::Program& p) {
  std::vector<Resize> out;
  // Drop a dim of one input.
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const std::vector<int64_t>& shape = p.inputs[i].type.shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      for (int64_t at : {int64_t{0}, shape[d] - 1}) {
        Resize r;
        NewShape& n = r.inputs[i];
        for (size_t k = 0; k < shape.size(); ++k) {
          if (k == d) continue;
          n.kept.push_back(static_cast<int>(k));
          n.sizes.push_back(shape[k]);
        }
        n.offsets.assign(shape.size(), 0);
        n.offsets[d] = at;
        out.push_back(std::move(r));
        if (shape[d] <= 1) break;
      }
    }
  }
  // One size, everywhere it occurs.
  std::set<int64_t, std::greater<>> sizes;
  for (const graph::Input& in : p.inputs) {
    for (int64_t s : in.type.shape) {
      if (s > 1) sizes.insert(s);
    }
  }
  for (int64_t v : sizes) {
    for (int64_t t : SmallerSizes(v)) {
      Resize r;
      for (size_t i = 0; i < p.inputs.size(); ++i) {
        std::vector<int64_t> shape = p.inputs[i].type.shape;
        bool hit = false;
        for (int64_t& s : shape) {
          if (s == v) {
            s = t;
            hit = true;
          }
        }
        if (hit) r.inputs[i] = {AllDims(shape.size()), shape, {}};
      }
      out.push_back(std::move(r));
    }
  }
  // One dim of one input.
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const std::vector<int64_t>& shape = p.inputs[i].type.shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t v = shape[d];
      for (int64_t t : SmallerSizes(v)) {
        std::vector<int64_t> starts = {0, v - t};
        if (t == 1 && v <= 16) {
          for (int64_t k = 1; k < v - 1; ++k) starts.push_back(k);
        }
        for (size_t k = 0; k < starts.size(); ++k) {
          if (k == 1 && starts[1] == 0) continue;
          Resize r;
          std::vector<int64_t> s = shape;
          s[d] = t;
          std::vector<int64_t> offsets(shape.size(), 0);
          offsets[d] = starts[k];
          r.inputs[i] = {AllDims(s.size()), s, offsets};
          out.push_back(std::move(r));
        }
      }
    }
  }
  return out;
}

graph::Program Apply(const graph::Program& p, const Resize& r, bool slice_generators) {
  graph::Program out = p;
  for (const auto& [i, resize] : r.inputs) {
    out.inputs[i] =
        ResizeInput(p.inputs[i], resize.kept, resize.sizes, resize.offsets, slice_generators);
  }
  return out;
}

bool HasGenerator(const graph::Program& p, const Resize& r) {
  for (const auto& [i, resize] : r.inputs) {
    const graph::Payload::Kind k = p.inputs[i].payload.kind;
    if (k != graph::Payload::Kind::kFill && k != graph::Payload::Kind::kValues) return true;
  }
  return false;
}

}  // namespace

void ShapesPass(ReductionContext& ctx) {
  bool progress = true;
  while (progress && !ctx.OutOfTime()) {
    progress = false;
    const graph::Program& p = ctx.program();
    for (const Resize& r : Proposals(p)) {
      if (ctx.Try(Apply(p, r, false)) ||
          (HasGenerator(p, r) && ctx.Try(Apply(ctx.program(), r, true)))) {
        progress = true;
        break;
      }
      if (ctx.OutOfTime()) return;
    }
  }
}

}  // namespace divfuzz::minimize
