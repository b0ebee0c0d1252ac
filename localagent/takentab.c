/* SPDX-License-Identifier: BSD-3-Clause */
/* takentab.c: the LocalAgent's mapped table of cycles taken and not yet
 * logged (contract and layout in takentab.h). */
#include "takentab.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "la_crc32.h"
#include "la_errcodes.h"
#include "seglog.h"

#define LA__TT_NAME "taken.tab"
#define LA__TT_HDR 24u
#define LA__TT_SLOT 288u /* 24 bytes and up to 255 of app id, padded */
#define LA__TT_MAX_APP 255u

struct la_takentab {
  int fd;
  uint8_t *map;
  size_t size;      /* mapped bytes: the file's */
  uint32_t n;       /* slots in the file */
  uint8_t *used;    /* LA_TAKENTAB_SLOTS flags: slot in use since clear */
  uint32_t hint;    /* where la_takentab_put looks first */
  int dirty;        /* a slot changed since the last msync (atomic) */
};

static uint8_t *la__slot(const la_takentab_t *t, uint32_t i) {
  return t->map + LA__TT_HDR + (size_t)i * LA__TT_SLOT;
}

static uint32_t *la__state(const la_takentab_t *t, uint32_t i) {
  return (uint32_t *)(void *)la__slot(t, i); /* 24 + 288 i: aligned */
}

static int la__fail(char *why, size_t len, const char *dir, const char *what) {
  if (why && len)
    snprintf(why, len, "log %s: %s %s: %s", dir, what, LA__TT_NAME,
             strerror(errno));
  return LA_EIO;
}

/* Maps the file at its size (n slots from the header when it is valid,
 * else none). */
static int la__map(la_takentab_t *t) {
  struct stat sb;
  if (fstat(t->fd, &sb) != 0) return LA_EIO;
  t->size = (size_t)sb.st_size;
  t->n = 0;
  t->map = NULL;
  if (t->size < LA__TT_HDR) return 0;
  void *m = mmap(NULL, t->size, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
  if (m == MAP_FAILED) return LA_EIO;
  t->map = m;
  uint32_t n = la__sl_get32(t->map + 8);
  if (memcmp(t->map, "LATAKEN1", 8) == 0 &&
      la__sl_get32(t->map + 12) == LA__TT_SLOT &&
      t->size == LA__TT_HDR + (size_t)n * LA__TT_SLOT)
    t->n = n;
  return 0;
}

int la_takentab_open(int dirfd, const char *dir, la_takentab_t **out,
                     char *why, size_t why_len) {
  *out = NULL;
  la_takentab_t *t = calloc(1, sizeof *t);
  uint8_t *used = calloc(LA_TAKENTAB_SLOTS, 1);
  if (!t || !used) {
    free(t);
    free(used);
    if (why && why_len) snprintf(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  t->used = used;
  t->fd = openat(dirfd, LA__TT_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                 0600);
  if (t->fd < 0) {
    free(used);
    free(t);
    return la__fail(why, why_len, dir, "cannot open");
  }
  struct stat sb;
  int rc = fstat(t->fd, &sb) == 0 ? 0 : LA_EIO;
  if (rc == 0 && (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
                  (sb.st_mode & 077))) {
    errno = EPERM;
    rc = la__fail(why, why_len, dir,
                  "refused (not a regular file of the agent's user, mode "
                  "600):");
  } else if (rc != 0 || (rc = la__map(t)) != 0) {
    rc = la__fail(why, why_len, dir, "cannot read");
  }
  if (rc != 0) {
    la_takentab_close(t);
    return rc;
  }
  *out = t;
  return 0;
}

size_t la_takentab_each(la_takentab_t *t,
                        void (*cb)(void *arg, const char *app,
                                   uint16_t app_len, uint32_t rank,
                                   uint64_t cycle),
                        void *arg, uint64_t *bad) {
  size_t k = 0;
  uint64_t nbad = 0;
  /* a file too short or of another layout cannot be read: damage */
  if (t->map && t->n == 0 && t->size > LA__TT_HDR) nbad++;
  for (uint32_t i = 0; i < t->n; i++) {
    const uint8_t *s = la__slot(t, i);
    uint32_t state = la__sl_get32(s);
    if (state == 0) continue;
    uint16_t len = la__sl_get16(s + 12);
    if (state != LA_TAKENTAB_MARK || len > LA__TT_MAX_APP ||
        la_crc32(0, s + 8, 16u + len) != la__sl_get32(s + 4)) {
      nbad++;
      continue;
    }
    if (cb)
      cb(arg, (const char *)s + 24, len, la__sl_get32(s + 8), la__sl_get64(s + 16));
    k++;
  }
  if (bad) *bad = nbad;
  return k;
}

uint64_t la_takentab_since(const la_takentab_t *t) {
  return t->n ? la__sl_get64(t->map + 16) : 0;
}

int la_takentab_clear(la_takentab_t *t, uint64_t since) {
  size_t want = LA__TT_HDR + (size_t)LA_TAKENTAB_SLOTS * LA__TT_SLOT;
  if (t->size != want) {
    if (t->map) munmap(t->map, t->size);
    t->map = NULL;
    t->n = 0;
    if (ftruncate(t->fd, (off_t)want) != 0 || la__map(t) != 0 || !t->map)
      return LA_EIO;
  }
  memset(t->map, 0, t->size);
  memcpy(t->map, "LATAKEN1", 8);
  la__sl_put32(t->map + 8, LA_TAKENTAB_SLOTS);
  la__sl_put32(t->map + 12, LA__TT_SLOT);
  la__sl_put64(t->map + 16, since);
  t->n = LA_TAKENTAB_SLOTS;
  memset(t->used, 0, LA_TAKENTAB_SLOTS);
  t->hint = 0;
  __atomic_store_n(&t->dirty, 1, __ATOMIC_RELEASE);
  return 0;
}

int la_takentab_put(la_takentab_t *t, const char *app, uint16_t app_len,
                    uint32_t rank, uint64_t cycle) {
  if (t->n != LA_TAKENTAB_SLOTS || app_len > LA__TT_MAX_APP) return -1;
  for (uint32_t k = 0; k < LA_TAKENTAB_SLOTS; k++) {
    uint32_t i = (t->hint + k) % LA_TAKENTAB_SLOTS;
    if (t->used[i]) continue;
    uint8_t *s = la__slot(t, i);
    la__sl_put32(s + 8, rank);
    la__sl_put16(s + 12, app_len);
    la__sl_put16(s + 14, 0);
    la__sl_put64(s + 16, cycle);
    memcpy(s + 24, app, app_len);
    la__sl_put32(s + 4, la_crc32(0, s + 8, 16u + app_len));
    /* the state last: a kill leaves the slot free or whole */
    __atomic_store_n(la__state(t, i), LA_TAKENTAB_MARK, __ATOMIC_RELEASE);
    t->used[i] = 1;
    t->hint = (i + 1) % LA_TAKENTAB_SLOTS;
    __atomic_store_n(&t->dirty, 1, __ATOMIC_RELEASE);
    return (int)i;
  }
  return -1;
}

void la_takentab_free(la_takentab_t *t, int i) {
  if (i < 0 || (uint32_t)i >= LA_TAKENTAB_SLOTS || !t->used[i]) return;
  __atomic_store_n(la__state(t, (uint32_t)i), 0u, __ATOMIC_RELEASE);
  t->used[i] = 0;
  __atomic_store_n(&t->dirty, 1, __ATOMIC_RELEASE);
}

int la_takentab_sync(la_takentab_t *t) {
  if (!t || !t->map || !__atomic_exchange_n(&t->dirty, 0, __ATOMIC_ACQ_REL))
    return 0;
  if (msync(t->map, t->size, MS_SYNC) != 0) {
    __atomic_store_n(&t->dirty, 1, __ATOMIC_RELEASE);
    return LA_EIO;
  }
  return 0;
}

void la_takentab_close(la_takentab_t *t) {
  if (!t) return;
  if (t->map) munmap(t->map, t->size);
  if (t->fd >= 0) close(t->fd);
  free(t->used);
  free(t);
}
