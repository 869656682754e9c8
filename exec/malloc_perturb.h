// Reruns that can see a kernel read memory it never wrote. glibc's M_PERTURB
// fills every block malloc hands out with ~byte (and freed ones with byte),
// so two runs under different bytes give such a kernel different garbage:
// CPU linalg_lstsq (gelsy) takes its pivots from an at::empty buffer
// (pytorch#187411) and its rank is 0 or right by that alone. A correct kernel
// cannot tell the difference. Without glibc this does nothing.
#pragma once

namespace divfuzz::exec {

// While alive, malloc fills new blocks with ~byte; restores "off" on exit.
class ScopedMallocPerturb {
 public:
  explicit ScopedMallocPerturb(int byte);
  ~ScopedMallocPerturb();
  ScopedMallocPerturb(const ScopedMallocPerturb&) = delete;
  ScopedMallocPerturb& operator=(const ScopedMallocPerturb&) = delete;
};

// The byte for run `run` (1, 2, ...) of a rerun check: odd runs get zeroed
// blocks (0xff), even runs blocks of 0xa5 (0x5a), so neighbouring runs differ.
int RerunPerturbByte(int run);

}  // namespace divfuzz::exec
