// values: simpler numbers. Per input: the whole payload as fill(0), fill(1)
// or a fill of its first element; then runs of elements set to 0 (then runs
// of the elements that are neither 0 nor 1 set to 1), halves first, down to
// single elements; then every element rounded to the fewest significant
// digits that keep the divergence. 0 is simpler than 1, 1 than the rest, so
// the pass never undoes itself.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "graph/dtype.h"
#include "minimize/pass.h"
#include "minimize/program_edit.h"

namespace divfuzz::minimize {
namespace {

using graph::Payload;

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

graph::Program WithPayload(const graph::Program& p, size_t i, Payload payload) {
  graph::Program out = p;
  out.inputs[i].payload = std::move(payload);
  return out;
}

Payload Fill(double v) {
  Payload p;
  p.kind = Payload::Kind::kFill;
  p.values = {v};
  return p;
}

bool TryFills(ReductionContext& ctx, size_t i) {
  const graph::Input& in = ctx.program().inputs[i];
  std::vector<double> fills = {0.0, 1.0};
  if (in.payload.kind == Payload::Kind::kValues && !in.payload.values.empty()) {
    fills.push_back(in.payload.values[0]);
  }
  if (in.payload.kind == Payload::Kind::kFill) {
    for (int digits = 1; digits <= 6; ++digits) {
      fills.push_back(RoundDigits(in.payload.values[0], digits, in.type.dtype));
    }
  }
  for (double v : fills) {
    if (in.payload.kind == Payload::Kind::kFill && SameBits(v, in.payload.values[0])) return false;
    if (ctx.Try(WithPayload(ctx.program(), i, Fill(v)))) return true;
    if (ctx.OutOfTime()) return false;
  }
  return false;
}

void SetRuns(ReductionContext& ctx, size_t i, double to) {
  const size_t n = ctx.program().inputs[i].payload.values.size();
  const size_t smallest = n > 256 ? n / 64 : 1;
  for (size_t chunk = std::max<size_t>(1, n / 2);; chunk /= 2) {
    for (size_t start = 0; start < n && !ctx.OutOfTime(); start += chunk) {
      const graph::Input& in = ctx.program().inputs[i];
      if (in.payload.kind != Payload::Kind::kValues) return;
      Payload p = in.payload;
      bool changed = false;
      for (size_t k = start; k < std::min(n, start + chunk); ++k) {
        if (!SameBits(p.values[k], to) && !SameBits(p.values[k], 0.0)) {
          p.values[k] = to;
          changed = true;
        }
      }
      if (changed) ctx.Try(WithPayload(ctx.program(), i, std::move(p)));
    }
    if (chunk <= smallest || ctx.OutOfTime()) return;
  }
}

void RoundAll(ReductionContext& ctx, size_t i) {
  const graph::DType dtype = ctx.program().inputs[i].type.dtype;
  if (!graph::IsFloating(dtype) && !graph::IsComplex(dtype)) return;
  for (int digits = 1; digits <= 16 && !ctx.OutOfTime(); ++digits) {
    const graph::Input& in = ctx.program().inputs[i];
    Payload p = in.payload;
    bool changed = false;
    for (double& v : p.values) {
      const double r = RoundDigits(v, digits, dtype);
      if (!SameBits(r, v)) {
        v = r;
        changed = true;
      }
    }
    if (!changed) return;  // already that short
    if (ctx.Try(WithPayload(ctx.program(), i, std::move(p)))) return;
  }
}

}  // namespace

void ValuesPass(ReductionContext& ctx) {
  for (size_t i = 0; i < ctx.program().inputs.size() && !ctx.OutOfTime(); ++i) {
    if (TryFills(ctx, i)) continue;
    if (ctx.program().inputs[i].payload.kind != Payload::Kind::kValues) continue;
    SetRuns(ctx, i, 0.0);
    SetRuns(ctx, i, 1.0);
    RoundAll(ctx, i);
  }
}

}  // namespace divfuzz::minimize
