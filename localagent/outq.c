/* outq.c: the queue of messages waiting for the GlobalAgent's
 * acknowledgement (API and semantics in outq.h).
 *
 * One singly linked list of descriptors in seq order, head = oldest
 * unacknowledged, tail = newest. A descriptor holds its frame in memory
 * (data != NULL) or says the frame is in the spool file of its seq. The send
 * cursor is the last descriptor returned by la_outq_next in this epoch
 * ("sent", NULL = none yet), so the next one to send is sent->next or head;
 * rewind is sent = NULL. Pushes append, acks pop from the head, a corrupt
 * spooled message is unlinked right after the cursor: all O(1) per message.
 *
 * It deliberately does not do file I/O itself (spool.c does), nor decode
 * frames, nor retry, nor log: it returns codes and passes notes on.
 */
#include "outq.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la.h"
#include "spool.h"

#define RBUF_KEEP (1u << 20) /* read buffer kept between spooled sends */

typedef struct la__oq_item {
  struct la__oq_item *next;
  uint64_t seq;
  uint8_t *data; /* the frame, or NULL when it is in the spool */
  uint32_t len;  /* frame bytes */
} la__oq_item_t;

struct la_outq {
  la__oq_item_t *head, *tail;
  la__oq_item_t *sent; /* last item returned by next since rewind */
  uint64_t mem_limit, spool_limit;
  uint64_t next_seq;    /* next seq to reserve */
  uint64_t last_pushed; /* pushes must be above this */
  uint64_t seq_hwm;     /* seqs below this are persisted as used */
  int seq_warned;       /* a failed hwm write was noted */
  int has_spool;
  la__spool_t sp;
  uint8_t *rbuf; /* frame of the spooled item last returned by next */
  size_t rcap;
  la_outq_note_fn note;
  void *note_arg;
  la_outq_stats_t st; /* counters; next_seq filled in by get_stats */
};

static void note(la_outq_t *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(la_outq_t *q, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  if (q->note == NULL) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  q->note(q->note_arg, msg);
}

static uint64_t file_size(uint32_t len) {
  return (uint64_t)LA__SPOOL_HDR_LEN + len;
}

static int fits(uint64_t used, uint64_t add, uint64_t limit) {
  return add <= limit && used <= limit - add;
}

static void append(la_outq_t *q, la__oq_item_t *it) {
  it->next = NULL;
  if (q->tail != NULL)
    q->tail->next = it;
  else
    q->head = it;
  q->tail = it;
  q->st.items++;
}

/* Forgets it, whose predecessor is prev (NULL if it is the head), with its
 * memory; the caller has dealt with its file. */
static void unlink_item(la_outq_t *q, la__oq_item_t *prev, la__oq_item_t *it) {
  if (prev != NULL)
    prev->next = it->next;
  else
    q->head = it->next;
  if (q->tail == it) q->tail = prev;
  if (q->sent == it) q->sent = prev;
  if (it->data != NULL) {
    q->st.mem_items--;
    q->st.mem_bytes -= it->len;
    free(it->data);
  } else {
    q->st.disk_items--;
    q->st.disk_bytes -= file_size(it->len);
  }
  q->st.items--;
  free(it);
}

/* ---------------------------------------------------------- open/close -- */

static int load_spool(la_outq_t *q, char *why, size_t why_len) {
  la__spool_entry_t *ents = NULL;
  size_t n = 0, i;
  uint64_t next = 0;
  int rc = la__spool_load_nextseq(&q->sp, &next, why, why_len);
  if (rc < 0) return rc;
  q->seq_hwm = next; /* 0 when absent: the first reserve persists one */
  if (next > q->next_seq) q->next_seq = next;
  rc = la__spool_scan(&q->sp, LA_OUTQ_MAX_ITEM, &ents, &n, &q->st.bad_files,
                      why, why_len);
  if (rc < 0) return rc;
  for (i = 0; i < n; i++) {
    la__oq_item_t *it = calloc(1, sizeof *it);
    if (it == NULL) {
      free(ents);
      if (why != NULL && why_len > 0)
        snprintf(why, why_len, "out of memory loading the spool");
      return LA_ENOMEM;
    }
    it->seq = ents[i].seq;
    it->len = ents[i].len;
    append(q, it);
    q->st.disk_items++;
    q->st.disk_bytes += file_size(it->len);
  }
  if (n > 0 && ents[n - 1].seq >= q->next_seq) {
    if (ents[n - 1].seq == UINT64_MAX) {
      free(ents);
      if (why != NULL && why_len > 0)
        snprintf(why, why_len, "spool holds the last possible seq");
      return LA_EIO;
    }
    q->next_seq = ents[n - 1].seq + 1;
  }
  free(ents);
  return 0;
}

int la_outq_open_ex(const char *spool_dir, uint64_t mem_limit,
                    uint64_t spool_limit, int fsync_writes,
                    la_outq_note_fn note_fn, void *note_arg, la_outq_t **out,
                    char *why, size_t why_len) {
  la_outq_t *q;
  int rc;
  if (why != NULL && why_len > 0) why[0] = '\0';
  if (out == NULL) return LA_EINVAL;
  *out = NULL;
  q = calloc(1, sizeof *q);
  if (q == NULL) {
    if (why != NULL && why_len > 0) snprintf(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  q->mem_limit = mem_limit;
  q->spool_limit = spool_limit;
  q->note = note_fn;
  q->note_arg = note_arg;
  q->next_seq = 1;
  if (spool_dir != NULL && spool_dir[0] != '\0') {
    rc = la__spool_open(&q->sp, spool_dir, fsync_writes, note_fn, note_arg, why,
                        why_len);
    if (rc < 0) {
      free(q);
      return rc;
    }
    q->has_spool = 1;
    rc = load_spool(q, why, why_len);
    if (rc < 0) {
      q->seq_hwm = UINT64_MAX; /* do not touch the state file */
      la_outq_close(q);
      return rc;
    }
  }
  q->last_pushed = q->next_seq - 1;
  q->st.last_acked = q->head != NULL ? q->head->seq - 1 : q->next_seq - 1;
  q->st.last_sent = q->st.last_acked;
  *out = q;
  return 0;
}

int la_outq_open(const char *spool_dir, uint64_t mem_limit,
                 uint64_t spool_limit, int fsync_writes, la_outq_t **out,
                 char *why, size_t why_len) {
  return la_outq_open_ex(spool_dir, mem_limit, spool_limit, fsync_writes, NULL,
                         NULL, out, why, why_len);
}

void la_outq_close(la_outq_t *q) {
  la__oq_item_t *it, *next;
  if (q == NULL) return;
  if (q->has_spool) {
    /* Exact next seq: a clean restart continues without a gap. Skipped when
     * open failed (seq_hwm UINT64_MAX) so a bad state file stays as is. */
    if (q->seq_hwm != UINT64_MAX &&
        la__spool_store_nextseq(&q->sp, q->next_seq) != 0)
      note(q, "spool %s: cannot persist the next seq %llu: %s", q->sp.path,
           (unsigned long long)q->next_seq, strerror(errno));
    la__spool_close(&q->sp);
  }
  for (it = q->head; it != NULL; it = next) {
    next = it->next;
    free(it->data);
    free(it);
  }
  free(q->rbuf);
  free(q);
}

/* ------------------------------------------------------------- pushing -- */

uint64_t la_outq_reserve_seq(la_outq_t *q) {
  if (q == NULL || q->next_seq == UINT64_MAX) return 0;
  if (q->has_spool && q->next_seq >= q->seq_hwm) {
    uint64_t hwm = q->next_seq + LA_OUTQ_SEQ_BLOCK;
    if (hwm < q->next_seq) hwm = UINT64_MAX;
    if (la__spool_store_nextseq(&q->sp, hwm) == 0) {
      q->seq_hwm = hwm;
      q->seq_warned = 0;
    } else if (!q->seq_warned) {
      q->seq_warned = 1;
      note(q,
           "spool %s: cannot persist the seq high-water mark: %s; seqs may "
           "be reused if the daemon crashes before this is fixed",
           q->sp.path, strerror(errno));
    }
  }
  return q->next_seq++;
}

int la_outq_push(la_outq_t *q, uint64_t seq, const uint8_t *bytes, size_t len) {
  la__oq_item_t *it;
  int rc;
  if (q == NULL || bytes == NULL || len == 0 || seq <= q->last_pushed ||
      seq >= q->next_seq)
    return LA_EINVAL;
  if (len > LA_OUTQ_MAX_ITEM) {
    q->st.dropped++;
    return LA_EMSGSIZE;
  }
  it = calloc(1, sizeof *it);
  if (it == NULL) {
    q->st.dropped++;
    return LA_ENOMEM;
  }
  it->seq = seq;
  it->len = (uint32_t)len;
  if (fits(q->st.mem_bytes, len, q->mem_limit) &&
      (it->data = malloc(len)) != NULL) {
    memcpy(it->data, bytes, len);
    q->st.mem_items++;
    q->st.mem_bytes += len;
  } else if (q->has_spool &&
             fits(q->st.disk_bytes, file_size(it->len), q->spool_limit)) {
    rc = la__spool_write(&q->sp, seq, bytes, it->len, 1);
    if (rc < 0) {
      free(it);
      q->st.dropped++;
      return rc;
    }
    q->st.disk_items++;
    q->st.disk_bytes += file_size(it->len);
    q->st.spilled++;
  } else {
    free(it);
    q->st.dropped++;
    return LA_ELIMIT;
  }
  append(q, it);
  q->last_pushed = seq;
  q->st.pushed++;
  return 0;
}

/* ------------------------------------------------------------- sending -- */

int la_outq_next(la_outq_t *q, uint64_t *seq, const uint8_t **bytes,
                 size_t *len) {
  la__oq_item_t *it;
  const uint8_t *p;
  int rc;
  if (q == NULL || seq == NULL || bytes == NULL || len == NULL)
    return LA_EINVAL;
  it = q->sent != NULL ? q->sent->next : q->head;
  if (it == NULL || it->data != NULL) {
    if (q->rcap > RBUF_KEEP) { /* do not hold a big buffer while idle */
      free(q->rbuf);
      q->rbuf = NULL;
      q->rcap = 0;
    }
    if (it == NULL) return 0;
    p = it->data;
  } else {
    if (q->rcap < it->len) {
      uint8_t *nb = malloc(it->len);
      if (nb == NULL) return LA_ENOMEM;
      free(q->rbuf);
      q->rbuf = nb;
      q->rcap = it->len;
    }
    rc = la__spool_read(&q->sp, it->seq, it->len, q->rbuf);
    if (rc == LA_EIO) {
      q->st.bad_files++;
      unlink_item(q, q->sent, it);
      return LA_EIO;
    }
    if (rc < 0) return rc;
    p = q->rbuf;
  }
  q->sent = it;
  if (it->seq > q->st.last_sent) q->st.last_sent = it->seq;
  *seq = it->seq;
  *bytes = p;
  *len = it->len;
  return 1;
}

int la_outq_ack(la_outq_t *q, uint64_t seq) {
  if (q == NULL) return LA_EINVAL;
  if (seq > q->st.last_sent) return LA_EPROTO;
  if (seq <= q->st.last_acked) return 0;
  while (q->head != NULL && q->head->seq <= seq) {
    la__oq_item_t *it = q->head;
    if (it->data == NULL && la__spool_remove(&q->sp, it->seq) != 0)
      note(q,
           "spool %s: cannot delete acknowledged message %llu: %s (it "
           "will be sent again after a restart)",
           q->sp.path, (unsigned long long)it->seq, strerror(errno));
    unlink_item(q, NULL, it);
    q->st.acked++;
  }
  q->st.last_acked = seq;
  return 0;
}

void la_outq_rewind(la_outq_t *q) {
  if (q != NULL) q->sent = NULL;
}

/* ------------------------------------------------------------ spilling -- */

int la_outq_spill_all(la_outq_t *q) {
  la__oq_item_t *it;
  int rc = 0, wrote = 0;
  if (q == NULL) return LA_EINVAL;
  if (!q->has_spool) return q->st.mem_items > 0 ? LA_ELIMIT : 0;
  for (it = q->head; it != NULL && q->st.mem_items > 0; it = it->next) {
    if (it->data == NULL) continue;
    if (!fits(q->st.disk_bytes, file_size(it->len), q->spool_limit)) {
      rc = LA_ELIMIT;
      continue;
    }
    if (la__spool_write(&q->sp, it->seq, it->data, it->len, 0) != 0) {
      rc = LA_EIO;
      break;
    }
    wrote = 1;
    free(it->data);
    it->data = NULL;
    q->st.mem_items--;
    q->st.mem_bytes -= it->len;
    q->st.disk_items++;
    q->st.disk_bytes += file_size(it->len);
    q->st.spilled++;
  }
  if (wrote && la__spool_sync_dir(&q->sp) != 0) {
    note(q, "spool %s: fsync of the directory failed: %s", q->sp.path,
         strerror(errno));
    if (rc == 0) rc = LA_EIO;
  }
  return rc;
}

void la_outq_set_limits(la_outq_t *q, uint64_t mem_limit,
                        uint64_t spool_limit) {
  if (q == NULL) return;
  q->mem_limit = mem_limit;
  q->spool_limit = spool_limit;
}

void la_outq_get_stats(const la_outq_t *q, la_outq_stats_t *st) {
  if (q == NULL || st == NULL) return;
  *st = q->st;
  st->next_seq = q->next_seq;
}
