/* SPDX-License-Identifier: BSD-3-Clause */
/* takentab.c: the LocalAgent's mapped table of cycles taken and not yet
 * logged (contract and layout in takentab.h). */
#include "takentab.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "la_codec.h"
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
  int unreadable;   /* the file held something not a table (la__map) */
  int cut;          /* the file was cut under the map (a store faulted)
                       or replaced (la_takentab_sync): atomic */
  int dirfd;        /* the log directory (the caller's) */
  dev_t dev;        /* the file opened */
  ino_t ino;
};

/* A store into the map faults (SIGBUS) once another process has cut the
 * file under it (truncate(2) by the agent's user or root): the stores are
 * made with this thread's la__tt_jmp armed, and the handler returns there
 * instead of the agent dying; the table is then cut and takes no more
 * slots. A SIGBUS anywhere else goes to the handler there was before
 * (restored, the faulting instruction runs again). Installed at each
 * open unless it is the handler already (another may have been put in
 * its place since: a test framework's); SA_NODEFER: nothing stays blocked
 * after the jump. */
static _Thread_local sigjmp_buf *la__tt_jmp;
static struct sigaction la__tt_old;
static pthread_mutex_t la__tt_mu = PTHREAD_MUTEX_INITIALIZER;

static void la__tt_bus(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si, (void)uc;
  if (la__tt_jmp) siglongjmp(*la__tt_jmp, 1);
  sigaction(SIGBUS, &la__tt_old, NULL);
}

static void la__tt_install(void) {
  struct sigaction sa;
  pthread_mutex_lock(&la__tt_mu);
  if (sigaction(SIGBUS, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO) &&
      sa.sa_sigaction == la__tt_bus) {
    pthread_mutex_unlock(&la__tt_mu);
    return;
  }
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = la__tt_bus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &la__tt_old);
  pthread_mutex_unlock(&la__tt_mu);
}

/* Runs the stores of a call (the lines after it, until LA__TT_DISARM)
 * with the guard armed; a fault there marks t cut and runs on_cut. */
#define LA__TT_ARM(t, jb, on_cut) \
  do {                            \
    if (sigsetjmp(jb, 0)) {       \
      la__tt_jmp = NULL;          \
      __atomic_store_n(&(t)->cut, 1, __ATOMIC_RELEASE); \
      on_cut;                     \
    }                             \
    la__tt_jmp = &(jb);           \
  } while (0)
#define LA__TT_DISARM() (la__tt_jmp = NULL)

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

/* Maps size bytes of the file. */
static int la__mmap(la_takentab_t *t, size_t size) {
  void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
  if (m == MAP_FAILED) return LA_EIO;
  t->map = m;
  t->size = size;
  return 0;
}

/* Maps the file when its header is this layout's with 1..
 * LA_TAKENTAB_SLOTS slots and its size exactly theirs; any other file
 * holding bytes (cut, grown, another layout, a count it does not have) is
 * not mapped nor walked, and is unreadable. An empty file is a new one. */
static int la__map(la_takentab_t *t) {
  struct stat sb;
  uint8_t h[LA__TT_HDR];
  t->map = NULL;
  t->size = 0;
  t->n = 0;
  if (fstat(t->fd, &sb) != 0) return LA_EIO;
  t->unreadable = sb.st_size > 0;
  if (sb.st_size < (off_t)LA__TT_HDR) return 0;
  ssize_t r = pread(t->fd, h, sizeof h, 0);
  if (r < 0) return LA_EIO;
  uint32_t n = la__sl_get32(h + 8);
  if (r != (ssize_t)sizeof h || memcmp(h, "LATAKEN1", 8) != 0 ||
      la__sl_get32(h + 12) != LA__TT_SLOT || n == 0 ||
      n > LA_TAKENTAB_SLOTS ||
      sb.st_size != (off_t)(LA__TT_HDR + (size_t)n * LA__TT_SLOT))
    return 0;
  if (la__mmap(t, (size_t)sb.st_size) != 0) return LA_EIO;
  t->n = n;
  t->unreadable = 0;
  return 0;
}

/* What is wrong with the file for a table (NULL: nothing): a 0600 regular
 * file of the agent's user. */
static const char *la__refusal(const struct stat *sb, char *buf,
                               size_t len) {
  if (!S_ISREG(sb->st_mode)) {
    snprintf(buf, len, "not a regular file (%s)",
             S_ISFIFO(sb->st_mode)   ? "a FIFO"
             : S_ISDIR(sb->st_mode)  ? "a directory"
             : S_ISSOCK(sb->st_mode) ? "a socket"
             : S_ISCHR(sb->st_mode)  ? "a character device"
             : S_ISBLK(sb->st_mode)  ? "a block device"
                                     : "of another type");
  } else if (sb->st_uid != geteuid()) {
    snprintf(buf, len, "owned by uid %u, not the agent's (%u)",
             (unsigned)sb->st_uid, (unsigned)geteuid());
  } else if (sb->st_mode & 077) {
    snprintf(buf, len, "mode %03o, not 600",
             (unsigned)(sb->st_mode & 0777));
  } else {
    return NULL;
  }
  return buf;
}

int la_takentab_open(int dirfd, const char *dir, la_takentab_t **out,
                     char *why, size_t why_len) {
  *out = NULL;
  la__tt_install();
  la_takentab_t *t = calloc(1, sizeof *t);
  uint8_t *used = calloc(LA_TAKENTAB_SLOTS, 1);
  if (!t || !used) {
    free(t);
    free(used);
    if (why && why_len) snprintf(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  t->used = used;
  t->dirfd = dirfd;
  /* non-blocking: a FIFO or a device in its place is refused, never
   * waited on */
  t->fd = openat(dirfd, LA__TT_NAME,
                 O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
                     O_CLOEXEC,
                 0600);
  if (t->fd < 0) {
    int e = errno;
    free(used);
    free(t);
    if (e == ELOOP) { /* O_NOFOLLOW's answer */
      if (why && why_len)
        snprintf(why, why_len, "log %s: %s refused: a symbolic link", dir,
                 LA__TT_NAME);
      return LA_EIO;
    }
    errno = e;
    return la__fail(why, why_len, dir, "cannot open");
  }
  struct stat sb;
  char buf[80];
  const char *no = NULL;
  int rc = fstat(t->fd, &sb) == 0 ? 0 : LA_EIO;
  if (rc == 0 && (no = la__refusal(&sb, buf, sizeof buf)) != NULL) {
    if (why && why_len)
      snprintf(why, why_len, "log %s: %s refused: %s", dir, LA__TT_NAME, no);
    rc = LA_EIO;
  } else if (rc != 0 || (rc = la__map(t)) != 0) {
    rc = la__fail(why, why_len, dir, "cannot read");
  }
  t->dev = sb.st_dev;
  t->ino = sb.st_ino;
  if (rc != 0) {
    la_takentab_close(t);
    return rc;
  }
  *out = t;
  return 0;
}

/* An app id as la_takentab_put is given one (the wire's: 1..
 * LA_MAX_ID_LEN printable bytes, no space): a slot with another one,
 * its CRC right or not, was not written by an agent. */
static int la__app_ok(const uint8_t *app, uint16_t len) {
  if (len == 0 || len > LA_MAX_ID_LEN) return 0;
  for (uint16_t i = 0; i < len; i++)
    if (app[i] < 0x21 || app[i] > 0x7e) return 0;
  return 1;
}

int la_takentab_unreadable(const la_takentab_t *t) { return t->unreadable; }

int la_takentab_cut(const la_takentab_t *t) {
  return __atomic_load_n(&t->cut, __ATOMIC_ACQUIRE);
}

size_t la_takentab_each(la_takentab_t *t,
                        void (*cb)(void *arg, const char *app,
                                   uint16_t app_len, uint32_t rank,
                                   uint64_t cycle),
                        void *arg, uint64_t *bad) {
  size_t k = 0;
  uint64_t nbad = 0;
  for (uint32_t i = 0; i < t->n; i++) {
    const uint8_t *s = la__slot(t, i);
    uint32_t state = la__sl_get32(s);
    if (state == 0) continue;
    uint16_t len = la__sl_get16(s + 12);
    if (state != LA_TAKENTAB_MARK || len > LA__TT_MAX_APP ||
        la_crc32(0, s + 8, 16u + len) != la__sl_get32(s + 4) ||
        !la__app_ok(s + 24, len) || la__sl_get32(s + 8) >= LA_MAX_RANKS) {
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
  if (!t->map || t->size != want) {
    if (t->map) munmap(t->map, t->size);
    t->map = NULL;
    t->size = 0;
    t->n = 0;
    if (ftruncate(t->fd, (off_t)want) != 0 || la__mmap(t, want) != 0)
      return LA_EIO;
  }
  t->unreadable = 0;
  sigjmp_buf jb;
  LA__TT_ARM(t, jb, return LA_EIO);
  memset(t->map, 0, t->size);
  memcpy(t->map, "LATAKEN1", 8);
  la__sl_put32(t->map + 8, LA_TAKENTAB_SLOTS);
  la__sl_put32(t->map + 12, LA__TT_SLOT);
  la__sl_put64(t->map + 16, since);
  LA__TT_DISARM();
  __atomic_store_n(&t->cut, 0, __ATOMIC_RELEASE);
  t->n = LA_TAKENTAB_SLOTS;
  memset(t->used, 0, LA_TAKENTAB_SLOTS);
  t->hint = 0;
  __atomic_store_n(&t->dirty, 1, __ATOMIC_RELEASE);
  return 0;
}

int la_takentab_put(la_takentab_t *t, const char *app, uint16_t app_len,
                    uint32_t rank, uint64_t cycle) {
  if (__atomic_load_n(&t->cut, __ATOMIC_ACQUIRE) ||
      t->n != LA_TAKENTAB_SLOTS || app_len > LA__TT_MAX_APP)
    return -1;
  sigjmp_buf jb;
  LA__TT_ARM(t, jb, return -1);
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
    LA__TT_DISARM();
    t->used[i] = 1;
    t->hint = (i + 1) % LA_TAKENTAB_SLOTS;
    __atomic_store_n(&t->dirty, 1, __ATOMIC_RELEASE);
    return (int)i;
  }
  LA__TT_DISARM();
  return -1;
}

void la_takentab_free(la_takentab_t *t, int i) {
  if (i < 0 || (uint32_t)i >= LA_TAKENTAB_SLOTS || !t->used[i]) return;
  t->used[i] = 0;
  if (__atomic_load_n(&t->cut, __ATOMIC_ACQUIRE)) return;
  sigjmp_buf jb;
  LA__TT_ARM(t, jb, return);
  __atomic_store_n(la__state(t, (uint32_t)i), 0u, __ATOMIC_RELEASE);
  LA__TT_DISARM();
  __atomic_store_n(&t->dirty, 1, __ATOMIC_RELEASE);
}

int la_takentab_sync(la_takentab_t *t) {
  if (!t || !t->map || __atomic_load_n(&t->cut, __ATOMIC_ACQUIRE)) return 0;
  /* another file in its place (renamed over, removed): the slots written
   * from now on would be in a file no start reads */
  struct stat sb;
  if (fstatat(t->dirfd, LA__TT_NAME, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
      sb.st_dev != t->dev || sb.st_ino != t->ino) {
    __atomic_store_n(&t->cut, 1, __ATOMIC_RELEASE);
    return 0;
  }
  if (!__atomic_exchange_n(&t->dirty, 0, __ATOMIC_ACQ_REL)) return 0;
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
