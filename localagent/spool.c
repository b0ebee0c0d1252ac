/* spool.c: file I/O of the LocalAgent's spool directory (format in spool.h).
 *
 * Creates, locks, lists, writes, reads, validates, deletes and quarantines
 * message files, and keeps the persisted sequence high-water mark. Every call
 * is synchronous POSIX I/O relative to one directory descriptor (openat and
 * friends, no path concatenation, no symlinks followed).
 *
 * It deliberately does not decide which message lives where, how many bytes
 * may be spooled, or in what order messages are sent: outq.c does. It never
 * logs by itself; it reports through the caller's note function.
 */
#include "spool.h"

#include "la_crc32.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "la.h"

#define SPOOL_MAGIC "LAQM"
#define SPOOL_VERSION 1u
#define SUFFIX ".lamsg"
#define LOCK_NAME "outq.lock"
#define SEQ_NAME "outq.nextseq"
#define SEQ_TMP_NAME "outq.nextseq.tmp"
#define SEQ_FILE_LEN 21 /* 20 digits and '\n' */


/* ------------------------------------------------------------ helpers -- */

static void set_why(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_why(char *why, size_t why_len, const char *fmt, ...) {
  va_list ap;
  if (why == NULL || why_len == 0) return;
  va_start(ap, fmt);
  vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
}

static void note(const la__spool_t *sp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(const la__spool_t *sp, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  if (sp->note == NULL) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  sp->note(sp->note_arg, msg);
}

static void put_be16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v) {
  put_be32(p, (uint32_t)(v >> 32));
  put_be32(p + 4, (uint32_t)v);
}

static uint16_t get_be16(const uint8_t *p) {
  return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t get_be32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
         ((uint32_t)p[2] << 8) | p[3];
}

static uint64_t get_be64(const uint8_t *p) {
  return ((uint64_t)get_be32(p) << 32) | get_be32(p + 4);
}

static void msg_name(char *buf, size_t cap, uint64_t seq) {
  snprintf(buf, cap, "%020" PRIu64 SUFFIX, seq);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* Parses 20 decimal digits into a value >= 1; 0 if they are not. */
static uint64_t parse_digits20(const char *s) {
  uint64_t v = 0;
  int i;
  for (i = 0; i < 20; i++) {
    unsigned d;
    if (s[i] < '0' || s[i] > '9') return 0;
    d = (unsigned)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return 0;
    v = v * 10 + d;
  }
  return v;
}

/* Parses "<20 digits>.lamsg" into a seq >= 1; 0 if the name is not one. */
static uint64_t parse_name(const char *name) {
  if (strlen(name) != LA__SPOOL_NAME_LEN || strcmp(name + 20, SUFFIX) != 0)
    return 0;
  return parse_digits20(name);
}

static int write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Reads exactly n bytes; returns 0, 1 on a short file, -1 on error. */
static int read_all(int fd, uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (r == 0) return 1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static int transient_errno(int e) {
  return e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS;
}

/* Renames name to name.bad and reports why. */
static void quarantine(la__spool_t *sp, const char *name, const char *what) {
  char bad[NAME_MAX + 8];
  if (snprintf(bad, sizeof bad, "%s.bad", name) >= (int)sizeof bad) {
    /* Cannot build a longer name: delete it instead, it is never valid. */
    unlinkat(sp->dirfd, name, 0);
    note(sp, "spool %s: %s: %s; deleted (name too long to rename)", sp->path,
         name, what);
    return;
  }
  if (renameat(sp->dirfd, name, sp->dirfd, bad) != 0) {
    note(sp, "spool %s: %s: %s; cannot rename to %s: %s", sp->path, name, what,
         bad, strerror(errno));
    return;
  }
  note(sp, "spool %s: %s: %s; moved to %s", sp->path, name, what, bad);
}

static void build_header(uint8_t *h, uint64_t seq, const uint8_t *payload,
                         uint32_t len) {
  memcpy(h, SPOOL_MAGIC, 4);
  put_be16(h + 4, SPOOL_VERSION);
  put_be16(h + 6, LA__SPOOL_HDR_LEN);
  put_be64(h + 8, seq);
  put_be32(h + 16, len);
  put_be32(h + 20, la_crc32(0, payload, len));
  put_be32(h + 24, la_crc32(0, h, 24));
  put_be32(h + 28, 0);
}

/* Checks a header read from the file of message seq, size bytes long.
 * Returns NULL and sets *len and *crc, or what is wrong. */
static const char *check_header(const uint8_t *h, uint64_t seq, uint64_t size,
                                uint32_t max_item, uint32_t *len,
                                uint32_t *crc) {
  if (memcmp(h, SPOOL_MAGIC, 4) != 0) return "bad magic";
  if (get_be32(h + 24) != la_crc32(0, h, 24))
    return "header checksum mismatch";
  if (get_be16(h + 4) != SPOOL_VERSION) return "unknown format version";
  if (get_be16(h + 6) != LA__SPOOL_HDR_LEN) return "bad header length";
  if (get_be64(h + 8) != seq) return "seq in header does not match name";
  if (get_be32(h + 28) != 0) return "reserved header bytes not zero";
  *len = get_be32(h + 16);
  *crc = get_be32(h + 20);
  if (*len == 0 || *len > max_item) return "bad payload length";
  if (size != (uint64_t)LA__SPOOL_HDR_LEN + *len)
    return "file size does not match header (torn write?)";
  return NULL;
}

/* ---------------------------------------------------------- open/close -- */

int la__spool_open(la__spool_t *sp, const char *dir, int fsync_writes,
                   la__spool_note_fn note_fn, void *note_arg, char *why,
                   size_t why_len) {
  struct stat st;
  memset(sp, 0, sizeof *sp);
  sp->dirfd = sp->lockfd = -1;
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    set_why(why, why_len, "spool %s: cannot create: %s", dir, strerror(errno));
    return LA_EIO;
  }
  sp->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (sp->dirfd < 0) {
    set_why(why, why_len, "spool %s: cannot open directory: %s", dir,
            strerror(errno));
    return LA_EIO;
  }
  if (fstat(sp->dirfd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    set_why(why, why_len, "spool %s: not a directory", dir);
    goto fail;
  }
  sp->lockfd = openat(sp->dirfd, LOCK_NAME,
                      O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (sp->lockfd < 0) {
    set_why(why, why_len, "spool %s: cannot create %s: %s", dir, LOCK_NAME,
            strerror(errno));
    goto fail;
  }
  if (flock(sp->lockfd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      set_why(why, why_len, "spool %s: in use by another process (%s)", dir,
              LOCK_NAME);
    else
      set_why(why, why_len, "spool %s: cannot lock %s: %s", dir, LOCK_NAME,
              strerror(errno));
    goto fail;
  }
  sp->path = strdup(dir);
  if (sp->path == NULL) {
    set_why(why, why_len, "out of memory");
    la__spool_close(sp);
    return LA_ENOMEM;
  }
  sp->fsync_writes = fsync_writes;
  sp->note = note_fn;
  sp->note_arg = note_arg;
  return 0;
fail:
  la__spool_close(sp);
  return LA_EIO;
}

void la__spool_close(la__spool_t *sp) {
  if (sp->lockfd >= 0) close(sp->lockfd); /* releases the flock */
  if (sp->dirfd >= 0) close(sp->dirfd);
  free(sp->path);
  sp->lockfd = sp->dirfd = -1;
  sp->path = NULL;
}

/* ---------------------------------------------------------------- scan -- */

static int cmp_entry(const void *a, const void *b) {
  const la__spool_entry_t *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Validates one directory entry. Returns 1 and fills *e when it is a good
 * message file, 0 when it was skipped or quarantined, or LA_EIO/LA_ENOMEM
 * when the spool cannot be read at all. */
static int scan_one(la__spool_t *sp, const char *name, uint32_t max_item,
                    la__spool_entry_t *e, uint64_t *bad, char *why,
                    size_t why_len) {
  struct stat st;
  uint8_t h[LA__SPOOL_HDR_LEN];
  const char *what;
  uint32_t len, crc;
  uint64_t seq;
  int fd, r;

  if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
      strcmp(name, LOCK_NAME) == 0 || strcmp(name, SEQ_NAME) == 0 ||
      ends_with(name, ".bad"))
    return 0;
  if (strcmp(name, SEQ_TMP_NAME) == 0) { /* an interrupted state update */
    unlinkat(sp->dirfd, name, 0);
    return 0;
  }
  if (fstatat(sp->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return 0;
    set_why(why, why_len, "spool %s: %s: %s", sp->path, name, strerror(errno));
    return LA_EIO;
  }
  (*bad)++;
  if (ends_with(name, ".tmp")) {
    quarantine(sp, name, "unfinished write (crash during a push?)");
    return 0;
  }
  if (!S_ISREG(st.st_mode)) {
    quarantine(sp, name, "not a regular file");
    return 0;
  }
  seq = parse_name(name);
  if (seq == 0) {
    quarantine(sp, name, "not a spool file name");
    return 0;
  }
  if (st.st_size == 0) {
    quarantine(sp, name, "empty file");
    return 0;
  }
  if ((uint64_t)st.st_size <= LA__SPOOL_HDR_LEN) {
    quarantine(sp, name, "truncated");
    return 0;
  }
  if ((uint64_t)st.st_size > (uint64_t)LA__SPOOL_HDR_LEN + max_item) {
    quarantine(sp, name, "larger than the maximum message size");
    return 0;
  }
  fd = openat(sp->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    (*bad)--;
    set_why(why, why_len, "spool %s: cannot open %s: %s", sp->path, name,
            strerror(errno));
    return transient_errno(errno) ? LA_ENOMEM : LA_EIO;
  }
  r = read_all(fd, h, sizeof h);
  close(fd);
  if (r != 0) {
    quarantine(sp, name, r > 0 ? "truncated" : "unreadable header");
    return 0;
  }
  what = check_header(h, seq, (uint64_t)st.st_size, max_item, &len, &crc);
  if (what != NULL) {
    quarantine(sp, name, what);
    return 0;
  }
  (*bad)--;
  e->seq = seq;
  e->len = len;
  return 1;
}

int la__spool_scan(la__spool_t *sp, uint32_t max_item, la__spool_entry_t **out,
                   size_t *n, uint64_t *bad, char *why, size_t why_len) {
  char **names = NULL;
  size_t nn = 0, cap = 0, i, ne = 0;
  la__spool_entry_t *ents = NULL;
  struct dirent *de;
  DIR *d;
  int fd, rc = 0;

  *out = NULL;
  *n = 0;
  /* Collect the names first: entries are renamed while validating, and
   * readdir is unspecified for entries changed during the listing. */
  fd = dup(sp->dirfd);
  if (fd < 0 || (d = fdopendir(fd)) == NULL) {
    if (fd >= 0) close(fd);
    set_why(why, why_len, "spool %s: cannot list: %s", sp->path,
            strerror(errno));
    return LA_EIO;
  }
  rewinddir(d);
  for (;;) {
    errno = 0;
    de = readdir(d);
    if (de == NULL) {
      if (errno != 0) {
        set_why(why, why_len, "spool %s: cannot list: %s", sp->path,
                strerror(errno));
        rc = LA_EIO;
      }
      break;
    }
    if (nn == cap) {
      size_t nc = cap ? cap * 2 : 64;
      char **nb = realloc(names, nc * sizeof *nb);
      if (nb == NULL) {
        rc = LA_ENOMEM;
        break;
      }
      names = nb;
      cap = nc;
    }
    if ((names[nn] = strdup(de->d_name)) == NULL) {
      rc = LA_ENOMEM;
      break;
    }
    nn++;
  }
  closedir(d);
  if (rc == 0 && nn > 0 && (ents = malloc(nn * sizeof *ents)) == NULL)
    rc = LA_ENOMEM;
  for (i = 0; rc == 0 && i < nn; i++) {
    int r = scan_one(sp, names[i], max_item, &ents[ne], bad, why, why_len);
    if (r < 0)
      rc = r;
    else
      ne += (size_t)r;
  }
  for (i = 0; i < nn; i++) free(names[i]);
  free(names);
  if (rc != 0) {
    if (rc == LA_ENOMEM) set_why(why, why_len, "out of memory listing spool");
    free(ents);
    return rc;
  }
  if (ne == 0) {
    free(ents);
    return 0;
  }
  qsort(ents, ne, sizeof *ents, cmp_entry);
  *out = ents;
  *n = ne;
  return 0;
}

/* --------------------------------------------------------------- write -- */

int la__spool_sync_dir(la__spool_t *sp) {
  if (!sp->fsync_writes) return 0;
  return fsync(sp->dirfd) == 0 ? 0 : LA_EIO;
}

/* Writes a then b to tmp, fsyncs if asked, renames to name. On failure
 * removes tmp and returns LA_EIO with errno from the failed step. */
static int write_file(la__spool_t *sp, const char *tmp, const char *name,
                      const uint8_t *a, size_t alen, const uint8_t *b,
                      size_t blen, int sync_dir) {
  int e,
      fd = openat(sp->dirfd, tmp,
                  O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return LA_EIO;
  if (write_all(fd, a, alen) != 0 || write_all(fd, b, blen) != 0 ||
      (sp->fsync_writes && fsync(fd) != 0)) {
    e = errno;
    close(fd);
    goto fail;
  }
  if (close(fd) != 0 || renameat(sp->dirfd, tmp, sp->dirfd, name) != 0) {
    e = errno;
    goto fail;
  }
  /* The file is in place; a failed directory sync only weakens durability
   * against power loss, and the caller cannot undo it: report it. */
  if (sync_dir && la__spool_sync_dir(sp) != 0) {
    note(sp, "spool %s: fsync of the directory failed: %s", sp->path,
         strerror(errno));
  }
  return 0;
fail:
  unlinkat(sp->dirfd, tmp, 0);
  errno = e;
  return LA_EIO;
}

int la__spool_write(la__spool_t *sp, uint64_t seq, const uint8_t *payload,
                    uint32_t len, int sync_dir) {
  char name[LA__SPOOL_NAME_LEN + 1], tmp[LA__SPOOL_NAME_LEN + 5];
  uint8_t h[LA__SPOOL_HDR_LEN];
  msg_name(name, sizeof name, seq);
  snprintf(tmp, sizeof tmp, "%s.tmp", name);
  build_header(h, seq, payload, len);
  if (write_file(sp, tmp, name, h, sizeof h, payload, len, sync_dir) != 0) {
    note(sp, "spool %s: cannot write %s: %s", sp->path, name, strerror(errno));
    return LA_EIO;
  }
  return 0;
}

/* ---------------------------------------------------------- read/remove -- */

int la__spool_read(la__spool_t *sp, uint64_t seq, uint32_t len, uint8_t *buf) {
  char name[LA__SPOOL_NAME_LEN + 1];
  uint8_t h[LA__SPOOL_HDR_LEN];
  const char *what = NULL;
  uint32_t hlen, crc;
  struct stat st;
  int fd, r;

  msg_name(name, sizeof name, seq);
  fd = openat(sp->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    int e = errno;
    if (transient_errno(e)) return LA_ENOMEM;
    if (e == ENOENT) {
      note(sp, "spool %s: %s: file missing; message lost", sp->path, name);
      return LA_EIO;
    }
    quarantine(sp, name, strerror(e));
    return LA_EIO;
  }
  if (fstat(fd, &st) != 0) {
    what = "cannot stat";
  } else if (!S_ISREG(st.st_mode)) {
    what = "not a regular file";
  } else if ((r = read_all(fd, h, sizeof h)) != 0) {
    what = r > 0 ? "truncated" : "read error";
  } else if ((what = check_header(h, seq, (uint64_t)st.st_size, len, &hlen,
                                  &crc)) != NULL) {
    /* what says it */
  } else if (hlen != len) {
    what = "payload length changed since it was queued";
  } else if ((r = read_all(fd, buf, len)) != 0) {
    what = r > 0 ? "truncated" : "read error";
  } else if (la_crc32(0, buf, len) != crc) {
    what = "payload checksum mismatch";
  }
  close(fd);
  if (what != NULL) {
    quarantine(sp, name, what);
    return LA_EIO;
  }
  return 0;
}

int la__spool_remove(la__spool_t *sp, uint64_t seq) {
  char name[LA__SPOOL_NAME_LEN + 1];
  msg_name(name, sizeof name, seq);
  if (unlinkat(sp->dirfd, name, 0) != 0 && errno != ENOENT) return LA_EIO;
  return 0;
}

/* ------------------------------------------------------------- nextseq -- */

int la__spool_load_nextseq(la__spool_t *sp, uint64_t *next, char *why,
                           size_t why_len) {
  char buf[SEQ_FILE_LEN + 1];
  uint64_t v = 0;
  ssize_t got = 0;
  int fd = openat(sp->dirfd, SEQ_NAME, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    set_why(why, why_len, "spool %s: cannot open %s: %s", sp->path, SEQ_NAME,
            strerror(errno));
    return LA_EIO;
  }
  while ((size_t)got < sizeof buf) {
    ssize_t r = read(fd, buf + got, sizeof buf - (size_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += r;
  }
  close(fd);
  if (got == SEQ_FILE_LEN && buf[20] == '\n') v = parse_digits20(buf);
  if (v == 0) {
    set_why(why, why_len,
            "spool %s: %s is malformed; it protects sequence numbers from "
            "reuse: restore it, or write the next seq (20 digits and a "
            "newline) by hand",
            sp->path, SEQ_NAME);
    return LA_EIO;
  }
  *next = v;
  return 1;
}

int la__spool_store_nextseq(la__spool_t *sp, uint64_t next) {
  char buf[SEQ_FILE_LEN + 1];
  snprintf(buf, sizeof buf, "%020" PRIu64 "\n", next);
  return write_file(sp, SEQ_TMP_NAME, SEQ_NAME, (const uint8_t *)buf,
                    SEQ_FILE_LEN, NULL, 0, 1);
}
