/* SPDX-License-Identifier: BSD-3-Clause */
/* seglog.c: segment files of the LocalAgent's log (format and contract in
 * seglog.h). File I/O only: no list of messages, no locking, no framing.
 */
#include "seglog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "la_crc32.h"
#include "la_errors.h"

#define LA__SL_MAGIC "LASEG001"
#define LA__SL_SUFFIX ".laseg"

void la__seglog_notef(la__seglog_note_fn note, void *arg, const char *fmt,
                      ...) {
  char msg[512];
  va_list ap;
  if (note == NULL) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  note(arg, msg);
}

static void la__seg_name(uint64_t id, char *buf, size_t len) {
  snprintf(buf, len, "%020llu" LA__SL_SUFFIX, (unsigned long long)id);
}

/* Writes all of iov at off; 0 or -1 (errno set). */
static int la__pwritev_all(int fd, struct iovec *iov, int n, off_t off) {
  while (n > 0) {
    ssize_t w = pwritev(fd, iov, n, off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (w == 0) {
      errno = EIO;
      return -1;
    }
    off += w;
    while (n > 0 && (size_t)w >= iov->iov_len) {
      w -= (ssize_t)iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (char *)iov->iov_base + w;
      iov->iov_len -= (size_t)w;
    }
  }
  return 0;
}

static int la__seg_add(la__seglog_t *sl, uint64_t id, int fd, uint64_t bytes) {
  if (sl->n_segs == sl->cap_segs) {
    size_t cap = sl->cap_segs ? sl->cap_segs * 2 : 16;
    la__sl_seg_t *n = realloc(sl->segs, cap * sizeof *n);
    if (n == NULL) return LA_ENOMEM;
    sl->segs = n;
    sl->cap_segs = cap;
  }
  sl->segs[sl->n_segs++] = (la__sl_seg_t){id, fd, bytes, 0};
  sl->total_bytes += bytes;
  return 0;
}

/* ------------------------------------------------------------- opening -- */

static int la__check_dir(const char *dir, char *why, size_t why_len) {
  struct stat st;
  if (lstat(dir, &st) != 0) {
    if (errno != ENOENT || mkdir(dir, 0700) != 0 || lstat(dir, &st) != 0) {
      la_errorf(why, why_len, 0, "log directory %s: %s", dir, strerror(errno));
      return LA_EIO;
    }
  }
  if (S_ISLNK(st.st_mode)) {
    la_errorf(why, why_len, 0, "log directory %s is a symbolic link: refused",
              dir);
    return LA_EIO;
  }
  if (!S_ISDIR(st.st_mode)) {
    la_errorf(why, why_len, 0, "log directory %s is not a directory", dir);
    return LA_EIO;
  }
  if (st.st_uid != geteuid()) {
    la_errorf(why, why_len, 0,
              "log directory %s is owned by uid %u, not by this agent's uid "
              "%u: refused",
              dir, (unsigned)st.st_uid, (unsigned)geteuid());
    return LA_EIO;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    la_errorf(why, why_len, 0,
              "log directory %s is writable by group or others (mode %03o): "
              "refused; chmod 700 it",
              dir, (unsigned)(st.st_mode & 0777));
    return LA_EIO;
  }
  return 0;
}

static int la__cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Lists the segment ids in the directory, sorted. */
static int la__list(la__seglog_t *sl, uint64_t **ids, size_t *n, char *why,
                    size_t why_len) {
  int fd = openat(sl->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  size_t cap = 0;
  *ids = NULL;
  *n = 0;
  if (d == NULL) {
    if (fd >= 0) close(fd);
    la_errorf(why, why_len, 0, "log directory %s: %s", sl->path,
              strerror(errno));
    return LA_EIO;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    char *end;
    if (len != 20 + strlen(LA__SL_SUFFIX) ||
        strcmp(e->d_name + 20, LA__SL_SUFFIX) != 0)
      continue;
    unsigned long long id = strtoull(e->d_name, &end, 10);
    if (end != e->d_name + 20) continue;
    if (*n == cap) {
      size_t c = cap ? cap * 2 : 16;
      uint64_t *v = realloc(*ids, c * sizeof *v);
      if (v == NULL) {
        closedir(d);
        la_errorf(why, why_len, 0, "out of memory listing the log");
        return LA_ENOMEM;
      }
      *ids = v;
      cap = c;
    }
    (*ids)[(*n)++] = id;
  }
  closedir(d);
  if (*n > 1) qsort(*ids, *n, sizeof **ids, la__cmp_u64);
  return 0;
}

int la__seglog_open(la__seglog_t *sl, const char *dir, uint64_t seg_bytes,
                    uint32_t max_item, la__seglog_note_fn note, void *note_arg,
                    char *why, size_t why_len) {
  uint64_t *ids = NULL;
  size_t n = 0;
  int rc;
  memset(sl, 0, sizeof *sl);
  sl->dirfd = sl->lockfd = -1;
  sl->note = note;
  sl->note_arg = note_arg;
  sl->seg_bytes = seg_bytes < 4096 ? 4096 : seg_bytes;
  sl->max_item = max_item;
  if ((rc = la__check_dir(dir, why, why_len)) != 0) return rc;
  sl->path = strdup(dir);
  if (sl->path == NULL) {
    la_errorf(why, why_len, 0, "out of memory");
    return LA_ENOMEM;
  }
  sl->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sl->dirfd < 0) {
    la_errorf(why, why_len, 0, "log directory %s: %s", dir, strerror(errno));
    goto fail_io;
  }
  sl->lockfd = openat(sl->dirfd, "seglog.lock",
                      O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (sl->lockfd < 0 || flock(sl->lockfd, LOCK_EX | LOCK_NB) != 0) {
    la_errorf(why, why_len, 0, "log directory %s: %s", dir,
              errno == EWOULDBLOCK ? "in use by another LocalAgent"
                                   : strerror(errno));
    goto fail_io;
  }
  if ((rc = la__list(sl, &ids, &n, why, why_len)) != 0) goto fail;
  for (size_t i = 0; i < n; i++) {
    char name[64];
    struct stat st;
    la__seg_name(ids[i], name, sizeof name);
    int fd = openat(sl->dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      la_errorf(why, why_len, 0, "log segment %s/%s: %s", dir, name,
                fd < 0 ? strerror(errno) : "not a regular file");
      if (fd >= 0) close(fd);
      goto fail_io;
    }
    if ((rc = la__seg_add(sl, ids[i], fd, (uint64_t)st.st_size)) != 0) {
      close(fd);
      la_errorf(why, why_len, 0, "out of memory");
      goto fail;
    }
  }
  free(ids);
  return 0;
fail_io:
  rc = LA_EIO;
fail:
  free(ids);
  la__seglog_close(sl);
  return rc;
}

/* --------------------------------------------------------------- scan -- */

/* The longest body a record may have. */
static uint64_t la__max_body(const la__seglog_t *sl) {
  return LA__SL_REC_HDR - 8 + LA__SL_MAX_APP + (uint64_t)sl->max_item;
}

/* Parses one record at p (avail bytes). Returns its size, 0 when it is cut
 * short or corrupt. strict (resynchronising) also wants a known kind and
 * known flags, so that fewer offsets get as far as the checksum. */
static uint64_t la__parse(const la__seglog_t *sl, const uint8_t *p,
                          uint64_t avail, int strict, la__sl_rec_t *r) {
  if (avail < LA__SL_REC_HDR) return 0;
  uint32_t body = la__sl_get32(p);
  uint16_t app_len = (uint16_t)(p[18] | (p[19] << 8));
  if (body < LA__SL_REC_HDR - 8 || body > la__max_body(sl) ||
      (uint64_t)body + 8 > avail || app_len > LA__SL_MAX_APP ||
      app_len > body - 24 || p[16] == LA__SL_DAMAGED)
    return 0;
  if (strict && (p[16] > LA__SL_START || (p[17] & ~0x0fu) != 0)) return 0;
  if (la_crc32(0, p + 8, body) != la__sl_get32(p + 4)) return 0;
  r->seq = la__sl_get64(p + 8);
  r->kind = p[16];
  r->flags = p[17];
  r->app_len = app_len;
  r->rank = la__sl_get32(p + 20);
  r->cycle = la__sl_get64(p + 24);
  r->app = (const char *)p + LA__SL_REC_HDR;
  r->payload = p + LA__SL_REC_HDR + r->app_len;
  r->len = body - 24 - r->app_len;
  return (uint64_t)body + 8;
}

/* Whether the record at p (avail bytes, up to the end of the file) is cut
 * short: a partial header, or a plausible length reaching past the end. */
static int la__cut_short(const la__seglog_t *sl, const uint8_t *p,
                         uint64_t avail) {
  if (avail < LA__SL_REC_HDR) return 1;
  uint32_t body = la__sl_get32(p);
  return body >= LA__SL_REC_HDR - 8 && body <= la__max_body(sl) &&
         (uint64_t)body + 8 > avail;
}

/* The record at pos of buf (size bytes) does not parse: returns where the
 * next valid record starts, size when none does. The damaged record's own
 * length is tried first (a flipped payload byte leaves it right, and then
 * nothing inside the damaged payload is ever taken for a record); else
 * every later offset, the first whose bytes form a record with a valid
 * checksum winning. *work bounds the checksum bytes spent (shared by the
 * segment's resynchronisations): when it runs out, size. When no valid
 * record follows but the damaged length points at a record cut short by
 * the end of the file, that record's offset (a torn tail after damage). */
static uint64_t la__resync(const la__seglog_t *sl, const uint8_t *buf,
                           uint64_t size, uint64_t pos, uint64_t *work) {
  la__sl_rec_t r;
  uint64_t by_len = 0;
  if (size - pos >= 4) {
    uint64_t body = la__sl_get32(buf + pos);
    if (body >= LA__SL_REC_HDR - 8 && body <= la__max_body(sl) &&
        pos + 8 + body < size) {
      by_len = pos + 8 + body;
      if (la__parse(sl, buf + by_len, size - by_len, 1, &r)) return by_len;
    }
  }
  for (uint64_t c = pos + 1; c + LA__SL_REC_HDR <= size; c++) {
    const uint8_t *p = buf + c;
    uint32_t body = la__sl_get32(p);
    if (body < LA__SL_REC_HDR - 8 || body > la__max_body(sl) ||
        (uint64_t)body + 8 > size - c || p[16] == LA__SL_DAMAGED ||
        p[16] > LA__SL_START || p[19] != 0)
      continue;
    if (*work < body) {
      *work = 0;
      return size;
    }
    *work -= body;
    if (la__parse(sl, p, size - c, 1, &r)) return c;
  }
  if (by_len && la__cut_short(sl, buf + by_len, size - by_len)) return by_len;
  return size;
}

/* Notes and counts a damaged span of segment sg. */
static void la__damaged(la__seglog_t *sl, const la__sl_seg_t *sg, uint64_t off,
                        uint64_t len, const char *what) {
  la__seglog_notef(sl->note, sl->note_arg,
                   "log segment %s/%020llu" LA__SL_SUFFIX
                   ": %llu damaged bytes at offset %llu skipped (%s); the "
                   "records after them are kept",
                   sl->path, (unsigned long long)sg->id,
                   (unsigned long long)len, (unsigned long long)off, what);
  sl->damaged_bytes += len;
  sl->damaged_spans++;
}

int la__seglog_scan(la__seglog_t *sl,
                    int (*cb)(void *arg, uint64_t seg_id, uint64_t off,
                              const la__sl_rec_t *r),
                    void *arg, char *why, size_t why_len) {
  for (size_t i = 0; i < sl->n_segs; i++) {
    la__sl_seg_t *sg = &sl->segs[i];
    uint64_t size = sg->bytes, pos = LA__SL_FILE_HDR, good;
    uint8_t *buf = malloc(size ? size : 1);
    if (buf == NULL) {
      la_errorf(why, why_len, 0, "out of memory reading the log");
      return LA_ENOMEM;
    }
    ssize_t got = size ? pread(sg->fd, buf, size, 0) : 0;
    if (got < 0 || (uint64_t)got != size) {
      la_errorf(why, why_len, 0, "log segment %020llu: read failed: %s",
                (unsigned long long)sg->id,
                got < 0 ? strerror(errno) : "short read");
      free(buf);
      return LA_EIO;
    }
    /* checksum bytes resynchronisation may spend on this segment */
    uint64_t work = 16 * size + ((uint64_t)1 << 20);
    if (size < LA__SL_FILE_HDR) {
      pos = 0; /* created, header not written: a torn tail */
    } else if (memcmp(buf, LA__SL_MAGIC, 8) != 0 ||
               la__sl_get64(buf + 8) != sg->id) {
      /* the records are read anyway: the header holds nothing they need */
      la__damaged(sl, sg, 0, LA__SL_FILE_HDR,
                  "the segment's file header, not \"" LA__SL_MAGIC
                  "\" and its number");
      sl->damaged_headers++;
    }
    while (pos >= LA__SL_FILE_HDR && pos < size) {
      la__sl_rec_t r;
      uint64_t n = la__parse(sl, buf + pos, size - pos, 0, &r);
      if (n == 0) {
        uint64_t next = la__resync(sl, buf, size, pos, &work);
        /* torn only when the whole rest was searched: never truncate
         * what the work bound left unread */
        if (next == size && work > 0 &&
            la__cut_short(sl, buf + pos, size - pos))
          break;
        la__damaged(sl, sg, pos, next - pos,
                    next == size && work == 0
                        ? "too much damage to look for more records"
                        : "a record failing its length or checksum check");
        la__sl_rec_t d = {.kind = LA__SL_DAMAGED, .len = 0};
        d.len = (uint32_t)(next - pos > UINT32_MAX ? UINT32_MAX : next - pos);
        int rc = cb(arg, sg->id, pos, &d);
        if (rc < 0) {
          free(buf);
          la_errorf(why, why_len, 0, "log segment %020llu: damage refused",
                    (unsigned long long)sg->id);
          return rc;
        }
        pos = next;
        continue;
      }
      if (r.kind == LA__SL_MSG && r.seq > sg->max_msg) sg->max_msg = r.seq;
      int rc = cb(arg, sg->id, pos + LA__SL_REC_HDR + r.app_len, &r);
      if (rc < 0) {
        free(buf);
        la_errorf(why, why_len, 0, "log segment %020llu: record refused",
                  (unsigned long long)sg->id);
        return rc;
      }
      pos += n;
    }
    free(buf);
    good = pos < size ? pos : size;
    if (good < size) {
      la__seglog_notef(
          sl->note, sl->note_arg,
          "log segment %s/%020llu" LA__SL_SUFFIX
          ": the last %llu bytes, after offset %llu, are a record cut short "
          "(a crash while writing): truncated",
          sl->path, (unsigned long long)sg->id,
          (unsigned long long)(size - good), (unsigned long long)good);
      if (ftruncate(sg->fd, (off_t)good) != 0) {
        la_errorf(why, why_len, 0, "log segment %020llu: cannot truncate: %s",
                  (unsigned long long)sg->id, strerror(errno));
        return LA_EIO;
      }
      sl->torn_bytes += size - good;
      sl->total_bytes -= size - good;
      sg->bytes = good;
    }
  }
  return 0;
}

/* ------------------------------------------------------------- append -- */

uint64_t la__seglog_rec_size(const la__sl_rec_t *r) {
  return (uint64_t)LA__SL_REC_HDR + r->app_len + r->len;
}

int la__seglog_needs_roll(const la__seglog_t *sl, uint64_t size) {
  if (sl->n_segs == 0) return 1;
  const la__sl_seg_t *a = &sl->segs[sl->n_segs - 1];
  if (a->bytes < LA__SL_FILE_HDR) return 1; /* emptied by the scan */
  return a->bytes > LA__SL_FILE_HDR && a->bytes + size > sl->seg_bytes;
}

int la__seglog_roll(la__seglog_t *sl, int sync) {
  uint64_t id = sl->n_segs ? sl->segs[sl->n_segs - 1].id + 1 : 1;
  char name[64];
  uint8_t hdr[LA__SL_FILE_HDR];
  if (sl->n_segs && sync && fsync(sl->segs[sl->n_segs - 1].fd) != 0)
    la__seglog_notef(sl->note, sl->note_arg, "log %s: fsync failed: %s",
                     sl->path, strerror(errno));
  la__seg_name(id, name, sizeof name);
  int fd = openat(sl->dirfd, name,
                  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    la__seglog_notef(sl->note, sl->note_arg,
                     "log %s: cannot create segment %s: %s", sl->path, name,
                     strerror(errno));
    return LA_EIO;
  }
  memcpy(hdr, LA__SL_MAGIC, 8);
  la__sl_put64(hdr + 8, id);
  struct iovec iov = {hdr, sizeof hdr};
  if (la__pwritev_all(fd, &iov, 1, 0) != 0) {
    la__seglog_notef(sl->note, sl->note_arg,
                     "log %s: cannot write segment %s: %s", sl->path, name,
                     strerror(errno));
    close(fd);
    unlinkat(sl->dirfd, name, 0);
    return LA_EIO;
  }
  if (la__seg_add(sl, id, fd, LA__SL_FILE_HDR) != 0) {
    close(fd);
    unlinkat(sl->dirfd, name, 0);
    return LA_ENOMEM;
  }
  if (sync && fsync(sl->dirfd) != 0)
    la__seglog_notef(sl->note, sl->note_arg,
                     "log %s: fsync of the directory failed: %s", sl->path,
                     strerror(errno));
  return 0;
}

/* Record r's header into h (LA__SL_REC_HDR bytes), its CRC included. */
static void la__rec_header(const la__sl_rec_t *r, uint8_t *h) {
  uint32_t body = 24u + r->app_len + r->len;
  la__sl_put32(h, body);
  la__sl_put64(h + 8, r->seq);
  h[16] = r->kind;
  h[17] = r->flags;
  h[18] = (uint8_t)(r->app_len & 0xff);
  h[19] = (uint8_t)(r->app_len >> 8);
  la__sl_put32(h + 20, r->rank);
  la__sl_put64(h + 24, r->cycle);
  uint32_t crc = la_crc32(0, h + 8, 24);
  crc = la_crc32(crc, (const uint8_t *)r->app, r->app_len);
  crc = la_crc32(crc, r->payload, r->len);
  la__sl_put32(h + 4, crc);
}

int la__seglog_append(la__seglog_t *sl, const la__sl_rec_t *r, int n,
                      uint64_t *seg_id, uint64_t *off) {
  uint8_t h[2][LA__SL_REC_HDR];
  struct iovec iov[6];
  uint64_t size = 0;
  if (n < 1 || n > 2) return LA_EINVAL;
  for (int i = 0; i < n; i++) {
    if (r[i].app_len > LA__SL_MAX_APP || r[i].len > sl->max_item)
      return LA_EMSGSIZE;
    if (r[i].kind == LA__SL_DAMAGED) return LA_EINVAL;
  }
  if (sl->n_segs == 0) return LA_EIO;
  la__sl_seg_t *a = &sl->segs[sl->n_segs - 1];
  for (int i = 0; i < n; i++) {
    la__rec_header(&r[i], h[i]);
    iov[3 * i] = (struct iovec){h[i], sizeof h[i]};
    iov[3 * i + 1] = (struct iovec){(void *)r[i].app, r[i].app_len};
    iov[3 * i + 2] = (struct iovec){(void *)r[i].payload, r[i].len};
    size += la__seglog_rec_size(&r[i]);
  }
  if (la__pwritev_all(a->fd, iov, 3 * n, (off_t)a->bytes) != 0) {
    int e = errno;
    if (ftruncate(a->fd, (off_t)a->bytes) != 0) { /* best effort */
    }
    la__seglog_notef(sl->note, sl->note_arg, "log %s: write failed: %s",
                     sl->path, strerror(e));
    errno = e;
    return LA_EIO;
  }
  const la__sl_rec_t *last = &r[n - 1];
  if (seg_id) *seg_id = a->id;
  if (off)
    *off = a->bytes + size - la__seglog_rec_size(last) + LA__SL_REC_HDR +
           last->app_len;
  a->bytes += size;
  sl->total_bytes += size;
  for (int i = 0; i < n; i++)
    if (r[i].kind == LA__SL_MSG && r[i].seq > a->max_msg) a->max_msg = r[i].seq;
  return 0;
}

/* --------------------------------------------------------- read, trim -- */

int la__seglog_read(la__seglog_t *sl, uint64_t seg_id, uint64_t off,
                    uint32_t len, uint8_t *buf) {
  for (size_t i = 0; i < sl->n_segs; i++) {
    if (sl->segs[i].id != seg_id) continue;
    size_t done = 0;
    while (done < len) {
      ssize_t r =
          pread(sl->segs[i].fd, buf + done, len - done, (off_t)(off + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return LA_EIO;
      done += (size_t)r;
    }
    return 0;
  }
  return LA_EIO;
}

size_t la__seglog_trim(la__seglog_t *sl, uint64_t acked) {
  size_t k = 0;
  while (k + 1 < sl->n_segs && sl->segs[k].max_msg <= acked) {
    char name[64];
    la__seg_name(sl->segs[k].id, name, sizeof name);
    if (unlinkat(sl->dirfd, name, 0) != 0 && errno != ENOENT)
      la__seglog_notef(sl->note, sl->note_arg,
                       "log %s: cannot delete acknowledged segment %s: %s",
                       sl->path, name, strerror(errno));
    close(sl->segs[k].fd);
    sl->total_bytes -= sl->segs[k].bytes;
    k++;
  }
  if (k > 0) {
    memmove(sl->segs, sl->segs + k, (sl->n_segs - k) * sizeof *sl->segs);
    sl->n_segs -= k;
  }
  return k;
}

int la__seglog_sync(la__seglog_t *sl) {
  if (sl->n_segs == 0) return 0;
  return fsync(sl->segs[sl->n_segs - 1].fd) == 0 ? 0 : LA_EIO;
}

void la__seglog_close(la__seglog_t *sl) {
  for (size_t i = 0; i < sl->n_segs; i++) close(sl->segs[i].fd);
  free(sl->segs);
  sl->segs = NULL;
  sl->n_segs = sl->cap_segs = 0;
  if (sl->lockfd >= 0) close(sl->lockfd); /* releases the flock */
  if (sl->dirfd >= 0) close(sl->dirfd);
  sl->lockfd = sl->dirfd = -1;
  free(sl->path);
  sl->path = NULL;
}
