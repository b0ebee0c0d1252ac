/* SPDX-License-Identifier: BSD-3-Clause */
/* shm_zero.c: all-zero values of a shared-memory segment from its
 * resident pages (see shm_zero.h). */
#include "shm_zero.h"

#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "la_shm_layout.h"

/* Pages asked of mincore at a time (its vector on the stack). */
#define LA__ZERO_CHUNK 4096u

/* Whether swap is off now: a page then is resident or a hole. */
static int la__no_swap(void) {
  struct sysinfo si;
  return sysinfo(&si) == 0 && si.totalswap == 0;
}

int la_shm_zero_unread(const double *v, uint64_t n) {
  if (n == 0) return 1;
  long ps = sysconf(_SC_PAGESIZE);
  if (ps <= 0 || (ps % (long)sizeof(double)) != 0 || !la__no_swap())
    return -1;
  uintptr_t page = (uintptr_t)ps, lo = (uintptr_t)v,
            hi = (uintptr_t)(v + n), p0 = lo & ~(page - 1);
  unsigned char vec[LA__ZERO_CHUNK];
  int zero = 1;
  for (uintptr_t p = p0; p < hi && zero;) {
    uintptr_t pages = (hi - p + page - 1) / page;
    if (pages > LA__ZERO_CHUNK) pages = LA__ZERO_CHUNK;
    if (mincore((void *)p, pages * page, vec) != 0) return -1;
    for (uintptr_t k = 0; k < pages && zero; k++) {
      if (!(vec[k] & 1)) continue; /* a hole: zeros */
      uintptr_t a = p + k * page, b = a + page;
      a = a < lo ? lo : a;
      b = b > hi ? hi : b;
      zero = la_shm_all_zero((const double *)a, (b - a) / sizeof(double));
    }
    p += pages * page;
  }
  /* swap turned on meanwhile: a page may have left unread */
  if (zero && !la__no_swap()) return -1;
  return zero;
}
