/* la_client_internal.h: libla_client's private interface, for the
 * GlobalAgent, lactl and the client's own files. Not installed: it exposes
 * protobuf-c types (La__TraceSet) and the handles' layout. Nothing here is
 * exported from libla_client.so; link libla_client.a to use it.
 */
#ifndef LA_CLIENT_INTERNAL_H
#define LA_CLIENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "la_client.h"
#include "la_codec.h"
#include "la_compact.h"

#define LA__CLIENT_ERR_LEN 256

/* A received Trace-Set: the validated message it came from (owned) and, per
 * rank, its parsed trace and global offset. Immutable once built. */
struct la_traceset {
  La__TraceSet *msg; /* owned; freed with la_msg_free */
  uint32_t nprocs;
  uint64_t *vtx;               /* nprocs + 1 global offsets */
  la_trace_t **trace;          /* per rank; NULL when missing */
  const La__CompactTrace **ct; /* per rank, into msg; NULL when missing */
  uint32_t *missing;           /* ascending; NULL when none */
  size_t n_missing;
  uint64_t dropped; /* msg->dropped + the client's own drops */
};

struct la_client_rows {
  size_t n;
  char **key, **value; /* n each, owned */
};

struct la_client {
  int fd;
  int timeout_ms; /* sends and request/reply calls */
  int dead;       /* sticky error: the stream is unusable */
  int got_data;   /* something was received */
  la_frame_reader_t rd;
  /* sets that arrived while a request waited for its reply: a ring */
  la_traceset_t *pending[LA_CLIENT_MAX_PENDING];
  size_t p_head, p_count;
  uint64_t local_dropped; /* sets this client dropped itself */
  uint64_t max_rank_elements; /* cap on a received set's rank */
  char err[LA__CLIENT_ERR_LEN];
};

/* Makes a set from a message built in memory: copies it (m is only read),
 * then validates and opens it as la_traceset_from_bytes does. Errors as
 * there. */
int la_traceset_from_message(const La__TraceSet *m, la_traceset_t **out,
                             char *why, size_t why_len);

/* Same, taking ownership of m (a message decoded by la_msg_decode, which is
 * freed on failure too). Does not re-run la_msg_validate unless validate. */
int la__traceset_adopt(La__TraceSet *m, int validate, la_traceset_t **out,
                       char *why, size_t why_len);

/* Same, refusing a set with a rank of more than max_rank_elements elements
 * (declared in rank_elements or a trace's n_elements) before parsing any
 * trace; la__traceset_adopt uses LA_CLIENT_DEFAULT_MAX_RANK_ELEMENTS. */
int la__traceset_adopt_max(La__TraceSet *m, int validate,
                           uint64_t max_rank_elements, la_traceset_t **out,
                           char *why, size_t why_len);

/* The message a set was made from (owned by t). */
const La__TraceSet *la__traceset_message(const la_traceset_t *t);

/* Rank's parsed trace and its message (NULL when missing or out of range);
 * owned by t. */
const la_trace_t *la__traceset_trace(const la_traceset_t *t, uint32_t rank);
const La__CompactTrace *la__traceset_compact(const la_traceset_t *t,
                                             uint32_t rank);

/* Sends msg (of frame type type) and waits, within the handle's timeout, for
 * the first reply that is not a TraceSet (TraceSets that arrive meanwhile are
 * kept for la_client_next). On success *reply (free with la_msg_free) and
 * *reply_type are set. An Error reply returns its code (or LA_EPROTO when it
 * is not a negative LA_E* code) with the message in la_client_error(). */
int la__client_request(la_client_t *c, uint16_t type,
                       const ProtobufCMessage *msg, uint16_t *reply_type,
                       ProtobufCMessage **reply);

/* Formats the handle's error detail; returns rc. */
int la__client_fail(la_client_t *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* LA_CLIENT_INTERNAL_H */
