#include "exec/malloc_perturb.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace divfuzz::exec {

ScopedMallocPerturb::ScopedMallocPerturb(int byte) {
#if defined(__GLIBC__) && defined(M_PERTURB)
  mallopt(M_PERTURB, byte);
#else
  (void)byte;
#endif
}

ScopedMallocPerturb::~ScopedMallocPerturb() {
#if defined(__GLIBC__) && defined(M_PERTURB)
  mallopt(M_PERTURB, 0);
#endif
}

int RerunPerturbByte(int run) { return run % 2 ? 0xff : 0x5a; }

}  // namespace divfuzz::exec
