// `divfuzz ops --cuda_variants=all`: per op, which CUDA switches change its
// result bit for bit on one fixed input on this host, since which library a
// switch reaches changes across PyTorch versions (MAGMA's role shrinks).
#pragma once

#include <string>

namespace divfuzz::fuzz {

// `list`: "all" (every switch alone) or a --cuda_variants list. With --json
// one JSON object per op and line, as each is measured. Exit codes:
// 0 measured, 2 no CUDA device here (named in the message) or a bad list.
int RunOpsVariants(const std::string& list);

}  // namespace divfuzz::fuzz
