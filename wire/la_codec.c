/* SPDX-License-Identifier: BSD-3-Clause */
/* la_codec.c: frames, the message table, protobuf-c encode/decode and the
 * frame reader.
 *
 * Implements la_codec.h, except la_msg_validate (la_msg_validate.c), which
 * every decoded message goes through. This file does no I/O.
 */
#include "la_codec.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_errors.h"
#include "la_msg_validate.h"

typedef struct {
  uint16_t type;
  const char *name;
  const ProtobufCMessageDescriptor *desc;
} la__msg_entry_t;

/* One entry: the frame type LA__MSG_TYPE__MSG_T, the message's name as
 * la.proto spells it, and protobuf-c's descriptor la__t__descriptor. */
#define LA__MSG(T, Name, t) \
  { LA__MSG_TYPE__MSG_##T, #Name, &la__##t##__descriptor }

static const la__msg_entry_t la__msgs[] = {
    LA__MSG(REGISTER_REQUEST, RegisterRequest, register_request),
    LA__MSG(REGISTER_REPLY, RegisterReply, register_reply),
    LA__MSG(DATA_READY, DataReady, data_ready),
    LA__MSG(FINALIZE, Finalize, finalize),
    LA__MSG(HELLO, Hello, hello),
    LA__MSG(CHALLENGE, Challenge, challenge),
    LA__MSG(AUTH, Auth, auth),
    LA__MSG(AUTH_RESULT, AuthResult, auth_result),
    LA__MSG(RANK_START, RankStart, rank_start),
    LA__MSG(RANK_END, RankEnd, rank_end),
    LA__MSG(COMPACT_TRACE, CompactTrace, compact_trace),
    LA__MSG(ACK, Ack, ack),
    LA__MSG(SUBSCRIBE, Subscribe, subscribe),
    LA__MSG(TRACE_SET, TraceSet, trace_set),
    LA__MSG(QUERY, Query, query),
    LA__MSG(QUERY_REPLY, QueryReply, query_reply),
    LA__MSG(STATUS_REQUEST, StatusRequest, status_request),
    LA__MSG(STATUS_REPLY, StatusReply, status_reply),
    LA__MSG(ERROR, Error, error),
    LA__MSG(TRACE_MISSING, TraceMissing, trace_missing),
    LA__MSG(ELEMENT_IDS, ElementIds, element_ids),
    LA__MSG(TRACE_SET_HEAD, TraceSetHead, trace_set_head),
    LA__MSG(TRACE_SET_PART, TraceSetPart, trace_set_part),
    LA__MSG(SET_NOTICE, SetNotice, set_notice),
    LA__MSG(RANK_REFUSED, RankRefused, rank_refused),
};

static const la__msg_entry_t *la__msg_find(uint16_t type) {
  for (size_t i = 0; i < sizeof(la__msgs) / sizeof(la__msgs[0]); i++)
    if (la__msgs[i].type == type) return &la__msgs[i];
  return NULL;
}

const ProtobufCMessageDescriptor *la_msg_descriptor(uint16_t type) {
  const la__msg_entry_t *e = la__msg_find(type);
  return e ? e->desc : NULL;
}

const char *la_msg_name(uint16_t type) {
  const la__msg_entry_t *e = la__msg_find(type);
  return e ? e->name : "unknown";
}

int la_frame_header_parse(const uint8_t *hdr, uint32_t max_payload,
                          uint16_t *type, uint32_t *len) {
  uint32_t l = ((uint32_t)hdr[0] << 24) | ((uint32_t)hdr[1] << 16) |
               ((uint32_t)hdr[2] << 8) | hdr[3];
  uint16_t t = (uint16_t)((hdr[4] << 8) | hdr[5]);
  if (hdr[6] != 0 || hdr[7] != 0) return LA_EPROTO;
  /* MSG_SEALED: an encrypted record (la_secure.h), never a message */
  if (!la__msg_find(t) && t != LA__MSG_TYPE__MSG_SEALED) return LA_EPROTO;
  if (l > max_payload) return LA_EMSGSIZE;
  *type = t;
  *len = l;
  return 0;
}

void la_frame_header_put(uint8_t *hdr, uint16_t type, uint32_t len) {
  hdr[0] = (uint8_t)(len >> 24);
  hdr[1] = (uint8_t)(len >> 16);
  hdr[2] = (uint8_t)(len >> 8);
  hdr[3] = (uint8_t)len;
  hdr[4] = (uint8_t)(type >> 8);
  hdr[5] = (uint8_t)type;
  hdr[6] = hdr[7] = 0;
}

size_t la_frame_size(const ProtobufCMessage *msg) {
  return LA_FRAME_HEADER_LEN + protobuf_c_message_get_packed_size(msg);
}

long la_frame_pack_into(uint16_t type, const ProtobufCMessage *msg,
                        uint8_t *buf, size_t cap) {
  const la__msg_entry_t *e = la__msg_find(type);
  if (!e || msg->descriptor != e->desc) return LA_EINVAL;
  size_t plen = protobuf_c_message_get_packed_size(msg);
  if (plen > UINT32_MAX || plen + LA_FRAME_HEADER_LEN > cap) return LA_EMSGSIZE;
  la_frame_header_put(buf, type, (uint32_t)plen);
  protobuf_c_message_pack(msg, buf + LA_FRAME_HEADER_LEN);
  return (long)(plen + LA_FRAME_HEADER_LEN);
}

int la_frame_pack(uint16_t type, const ProtobufCMessage *msg, uint8_t **out,
                  size_t *out_len) {
  const la__msg_entry_t *e = la__msg_find(type);
  if (!e || msg->descriptor != e->desc) return LA_EINVAL;
  size_t n = la_frame_size(msg);
  uint8_t *buf = malloc(n);
  if (!buf) return LA_ENOMEM;
  long r = la_frame_pack_into(type, msg, buf, n);
  if (r < 0) {
    free(buf);
    return (int)r;
  }
  *out = buf;
  *out_len = (size_t)r;
  return 0;
}

int la_msg_validate(uint16_t type, const ProtobufCMessage *m, char *why,
                    size_t n) {
  const la__msg_entry_t *e = la__msg_find(type);
  if (!e || m->descriptor != e->desc)
    return la_errorf(why, n, LA_EPROTO, "message does not match frame type %u",
                     type);
  return la_msg_check_fields(type, m, why, n);
}

/* protobuf-c keeps fields it does not know as "unknown fields", including
 * ones numbered 0, which protobuf forbids (and which it then refuses to
 * parse once re-packed). Refuse them, in nested messages too. */
static int la__no_field_zero(const ProtobufCMessage *m) {
  for (unsigned i = 0; i < m->n_unknown_fields; i++)
    if (m->unknown_fields[i].tag == 0) return 0;
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
    const char *base = (const char *)m;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t cnt = *(const size_t *)(base + f->quantifier_offset);
      ProtobufCMessage *const *arr =
          *(ProtobufCMessage *const *const *)(base + f->offset);
      for (size_t j = 0; j < cnt; j++)
        if (arr[j] && !la__no_field_zero(arr[j])) return 0;
    } else {
      const ProtobufCMessage *sub =
          *(const ProtobufCMessage *const *)(base + f->offset);
      if (sub && !la__no_field_zero(sub)) return 0;
    }
  }
  return 1;
}

int la_msg_unpack(uint16_t type, const uint8_t *payload, size_t len,
                  ProtobufCMessage **out, char *why, size_t why_len) {
  const la__msg_entry_t *e = la__msg_find(type);
  if (!e)
    return la_errorf(why, why_len, LA_EPROTO, "unknown message type %u", type);
  ProtobufCMessage *m = protobuf_c_message_unpack(e->desc, NULL, len, payload);
  if (!m)
    return la_errorf(why, why_len, LA_EPROTO,
                     "%s: not a valid protobuf message (truncated, garbage or "
                     "a required field missing)",
                     e->name);
  if (!la__no_field_zero(m)) {
    la_errorf(why, why_len, LA_EPROTO, "%s: field number 0 (invalid protobuf)",
              e->name);
    protobuf_c_message_free_unpacked(m, NULL);
    return LA_EPROTO;
  }
  *out = m;
  return 0;
}

int la_msg_decode(uint16_t type, const uint8_t *payload, size_t len,
                  ProtobufCMessage **out, char *why, size_t why_len) {
  ProtobufCMessage *m;
  int rc = la_msg_unpack(type, payload, len, &m, why, why_len);
  if (rc != 0) return rc;
  char sub[200];
  if (la_msg_validate(type, m, sub, sizeof sub) != 0) {
    la_errorf(why, why_len, LA_EPROTO, "%s: %s", la_msg_name(type), sub);
    protobuf_c_message_free_unpacked(m, NULL);
    return LA_EPROTO;
  }
  *out = m;
  return 0;
}

void la_msg_free(ProtobufCMessage *msg) {
  if (msg) protobuf_c_message_free_unpacked(msg, NULL);
}

/* ---------------------------------------------------------- frame reader */

void la_frame_reader_init(la_frame_reader_t *r, uint32_t max_payload) {
  memset(r, 0, sizeof *r);
  r->max_payload = max_payload ? max_payload : LA_FRAME_DEFAULT_MAX;
}

void la_frame_reader_free(la_frame_reader_t *r) {
  free(r->buf);
  memset(r, 0, sizeof *r);
}

size_t la_frame_reader_pending(const la_frame_reader_t *r) {
  return r->len - r->head;
}

size_t la_frame_reader_room(la_frame_reader_t *r, size_t n, uint8_t **p) {
  if (r->error || n == 0) return 0;
  if (r->head > 0) { /* drop consumed bytes */
    memmove(r->buf, r->buf + r->head, r->len - r->head);
    r->len -= r->head;
    r->head = 0;
  }
  size_t limit = (size_t)r->max_payload + LA_FRAME_HEADER_LEN;
  /* Never hold more than one maximal frame plus what this call brings. */
  if (r->len + n > r->cap) {
    size_t want = r->cap ? r->cap : 4096;
    while (want < r->len + n) want *= 2;
    if (want > limit + n && r->len + n <= limit + n) want = limit + n;
    uint8_t *nb = realloc(r->buf, want);
    if (!nb) {
      r->error = LA_ENOMEM;
      return 0;
    }
    r->buf = nb;
    r->cap = want;
  }
  *p = r->buf + r->len;
  return r->cap - r->len;
}

/* The new buffer's room past the bytes kept: a read's worth (la_uvconn.c
 * reads at most 64 KiB), not the old buffer's size, which one large frame
 * may have grown. */
#define LA__GIVE_ROOM 65536

uint8_t *la_frame_reader_give(la_frame_reader_t *r, const uint8_t **was) {
  uint8_t *old = r->buf;
  *was = old;
  if (!old) return NULL;
  size_t used = r->head, keep = r->len - r->head;
  /* mostly room (a short read): a copy of what was returned */
  if (used * 2 < r->cap && used < LA__GIVE_ROOM / 2) {
    uint8_t *copy = malloc(used ? used : 1);
    if (copy) {
      memcpy(copy, old, used);
      memmove(old, old + used, keep);
      r->len = keep;
      r->head = 0;
      return copy;
    }
  }
  size_t cap = keep + LA__GIVE_ROOM;
  uint8_t *nb = r->error ? NULL : malloc(cap);
  if (nb) memcpy(nb, old + r->head, keep);
  else if (!r->error) r->error = LA_ENOMEM;
  r->buf = nb;
  r->cap = nb ? cap : 0;
  r->len = nb ? keep : 0;
  r->head = 0;
  return old;
}

int la_frame_reader_wrote(la_frame_reader_t *r, size_t n) {
  if (r->error) return r->error;
  if (n > r->cap - r->len) return r->error = LA_EINVAL; /* not reached */
  r->len += n;
  /* Refuse an oversized frame as soon as its header is visible. */
  if (r->len - r->head >= LA_FRAME_HEADER_LEN) {
    uint16_t t;
    uint32_t l;
    int e = la_frame_header_parse(r->buf + r->head, r->max_payload, &t, &l);
    if (e) return r->error = e;
  }
  return 0;
}

int la_frame_reader_feed(la_frame_reader_t *r, const void *data, size_t n) {
  if (r->error) return r->error;
  if (n == 0) return 0;
  uint8_t *p;
  if (la_frame_reader_room(r, n, &p) == 0) return r->error;
  memcpy(p, data, n);
  return la_frame_reader_wrote(r, n);
}

int la_frame_reader_next(la_frame_reader_t *r, uint16_t *type,
                         const uint8_t **payload, uint32_t *len) {
  if (r->error) return r->error;
  size_t avail = r->len - r->head;
  if (avail < LA_FRAME_HEADER_LEN) return 0;
  uint16_t t;
  uint32_t l;
  int e = la_frame_header_parse(r->buf + r->head, r->max_payload, &t, &l);
  if (e) return r->error = e;
  if (avail < LA_FRAME_HEADER_LEN + (size_t)l) return 0;
  *type = t;
  *payload = r->buf + r->head + LA_FRAME_HEADER_LEN;
  *len = l;
  r->head += LA_FRAME_HEADER_LEN + l; /* room() drops what was returned */
  return 1;
}
