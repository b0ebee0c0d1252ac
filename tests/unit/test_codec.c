/* SPDX-License-Identifier: BSD-3-Clause */
/* test_codec.c: unit tests of the wire codec (wire/la_codec.{h,c}).
 *
 * Covers: the frame header byte layout; a pack -> header parse -> decode
 * round trip of every message type with every field compared, nested ones
 * included (TraceSet of CompactTraces, RegisterRequest with CompactParams and
 * grid); la_frame_pack_into with short buffers; type/descriptor mismatches;
 * bad headers (reserved bytes, unknown types, oversized lengths); every
 * prefix of every valid payload; tens of thousands of random and mutated
 * payloads (fixed seed); the validation rules, each with the reason it
 * gives; and the incremental frame reader (byte by byte, several frames per
 * feed, split frames, oversized headers refused before the payload, sticky
 * errors, pending counts, reading in place, the buffer handed over).
 *
 * Tests named bug_* are regression tests for defects these tests found in
 * la_codec.c (fixed since); each comment describes the defect as it was.
 * Nothing here does I/O.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la.h"
#include "la_codec.h"
#include "la_test_child.h"

#define T_REG LA__MSG_TYPE__MSG_REGISTER_REQUEST
#define T_REPLY LA__MSG_TYPE__MSG_REGISTER_REPLY
#define T_DR LA__MSG_TYPE__MSG_DATA_READY
#define T_FIN LA__MSG_TYPE__MSG_FINALIZE
#define T_HELLO LA__MSG_TYPE__MSG_HELLO
#define T_CHAL LA__MSG_TYPE__MSG_CHALLENGE
#define T_AUTH LA__MSG_TYPE__MSG_AUTH
#define T_ARES LA__MSG_TYPE__MSG_AUTH_RESULT
#define T_RS LA__MSG_TYPE__MSG_RANK_START
#define T_RE LA__MSG_TYPE__MSG_RANK_END
#define T_CT LA__MSG_TYPE__MSG_COMPACT_TRACE
#define T_ACK LA__MSG_TYPE__MSG_ACK
#define T_SUB LA__MSG_TYPE__MSG_SUBSCRIBE
#define T_TS LA__MSG_TYPE__MSG_TRACE_SET
#define T_Q LA__MSG_TYPE__MSG_QUERY
#define T_QR LA__MSG_TYPE__MSG_QUERY_REPLY
#define T_SREQ LA__MSG_TYPE__MSG_STATUS_REQUEST
#define T_SREP LA__MSG_TYPE__MSG_STATUS_REPLY
#define T_ERR LA__MSG_TYPE__MSG_ERROR
#define T_TM LA__MSG_TYPE__MSG_TRACE_MISSING

#define HDR LA_FRAME_HEADER_LEN
#define T_EID LA__MSG_TYPE__MSG_ELEMENT_IDS
#define T_HEAD LA__MSG_TYPE__MSG_TRACE_SET_HEAD
#define T_PART LA__MSG_TYPE__MSG_TRACE_SET_PART
#define T_NOTE LA__MSG_TYPE__MSG_SET_NOTICE
#define T_RREF LA__MSG_TYPE__MSG_RANK_REFUSED
#define N_TYPES 25

#define assert_dbl_equal(a, b) assert_true((a) == (b))
#define M(x) ((ProtobufCMessage *)(x))

/* ------------------------------------------------------ sample messages */
/* One valid message of every type, in static storage. reset_samples()
 * restores them; tests then break one field at a time. */

static La__CompactParams s_cp;
static uint64_t s_grid[3];
static La__RegisterRequest s_reg;
static La__RegisterReply s_reply;
static La__DataReady s_dr;
static La__Finalize s_fin;
static La__Hello s_hello;
static uint8_t s_nonce[32], s_mac[32];
static La__Challenge s_chal;
static La__Auth s_auth;
static La__AuthResult s_ares;
static La__CompactParams s_rs_cp;
static uint64_t s_rs_grid[3];
static La__RankStart s_rs;
static La__RankEnd s_re;
static La__TraceMissing s_tm;
static int64_t s_eid_ids[3];
static La__ElementIds s_eid;
static La__SeriesStats s_stats[4];
static La__FitError s_fe[4];
static uint8_t s_seg[4][40];
static La__CompactTrace s_ct[4]; /* [0] alone, [1..3] inside s_ts */
static La__CompactTrace *s_ts_traces[3];
static uint32_t s_missing[1];
static uint64_t s_rank_elems[4];
static La__TraceSet s_ts;
static La__Ack s_ack;
static La__Subscribe s_sub;
static La__Query s_q;
static La__StatusEntry s_se[2];
static La__StatusEntry *s_se_p[2];
static La__TraceSet *s_qr_sets[1];
static La__QueryReply s_qr;
static La__StatusRequest s_sreq;
static La__StatusReply s_srep;
static La__Error s_err;
static La__TraceSetHead s_head;
static uint8_t s_part_data[5] = {1, 2, 3, 4, 5};
static La__TraceSetPart s_part;
static La__SetNotice s_note;
static La__RankRefused s_rref;

static void fill_trace(La__CompactTrace *t, La__SeriesStats *st,
                       La__FitError *fe, uint8_t *seg, uint32_t rank,
                       uint64_t n) {
  la__compact_trace__init(t);
  la__series_stats__init(st);
  la__fit_error__init(fe);
  for (int i = 0; i < 40; i++) seg[i] = (uint8_t)(i * 7 + rank);
  t->seq = 1000 + rank;
  t->app_id = "job-77";
  t->rank = rank;
  t->cycle_tag = 15;
  t->n_elements = n;
  t->mode = LA__COMPACT_MODE__COMPACT_POLYLINE;
  t->segments.len = 40;
  t->segments.data = seg;
  st->count = n;
  st->sum = 1234.5 + rank;
  st->min = 0.25;
  st->max = 99.75;
  t->stats = st;
  fe->max_abs = 0.5;
  fe->rmse = 0.125;
  fe->cv = 0.0625;
  t->error = fe;
  t->has_t_xfer_ns = 1;
  t->t_xfer_ns = 1700000000123456789ULL;
  t->has_rank_seq = 1;
  t->rank_seq = 7;
}

static void reset_samples(void) {
  la__compact_params__init(&s_cp);
  s_cp.has_mode = 1;
  s_cp.mode = LA__COMPACT_MODE__COMPACT_MAXERR;
  s_cp.has_cv = 1;
  s_cp.cv = 0.1;
  s_cp.has_epsilon = 1;
  s_cp.epsilon = 0.01;
  s_cp.has_relative = 1;
  s_cp.relative = 1;
  s_cp.has_connected = 1;
  s_cp.connected = 1;
  s_cp.has_outliers = 1;
  s_cp.outliers = 0;

  s_grid[0] = 4, s_grid[1] = 5, s_grid[2] = 6;
  la__register_request__init(&s_reg);
  s_reg.protocol = LA_PROTOCOL_VERSION;
  s_reg.app_id = "slurm-123456.0";
  s_reg.app_name = "wavetoy";
  s_reg.rank = 3;
  s_reg.nprocs = 8;
  s_reg.pid = 4242;
  s_reg.shm_id = 98317;
  s_reg.sem_id = 0;
  s_reg.nonce = 0xfedcba9876543210ULL;
  s_reg.n_elements = 120;
  s_reg.n_buffers = 3;
  s_reg.metric = "papi:PAPI_TOT_CYC";
  s_reg.unit = "count";
  s_reg.has_period = 1;
  s_reg.period = 15;
  s_reg.compact = &s_cp;
  s_reg.n_grid = 3;
  s_reg.grid = s_grid;
  s_reg.host = "node07";

  la__register_reply__init(&s_reply);
  s_reply.status = LA_EREFUSED;
  s_reply.message = "segment not owned by the caller";
  s_reply.agent_version = "0.1.0";

  la__data_ready__init(&s_dr);
  s_dr.buffer = 15;
  s_dr.cycle_tag = 0xffffffffffffffffULL;
  s_dr.seq = 42;
  s_dr.has_skipped = 1;
  s_dr.skipped = 3;
  s_dr.has_waits = 1;
  s_dr.waits = 0;
  s_dr.has_t_xfer_ns = 1;
  s_dr.t_xfer_ns = 1ULL << 62;

  la__finalize__init(&s_fin);
  s_fin.has_cycles = 1;
  s_fin.cycles = 100;
  s_fin.has_profiled = 1;
  s_fin.profiled = 7;
  s_fin.has_skipped = 1;
  s_fin.skipped = 1;
  s_fin.has_waits = 1;
  s_fin.waits = 2;

  la__hello__init(&s_hello);
  s_hello.protocol = LA_PROTOCOL_VERSION;
  s_hello.host = "node07.cluster";
  s_hello.agent_version = "0.1.0";

  for (int i = 0; i < 32; i++) s_nonce[i] = (uint8_t)(0xa0 + i);
  for (int i = 0; i < 32; i++) s_mac[i] = (uint8_t)(255 - i);
  la__challenge__init(&s_chal);
  s_chal.nonce.len = 32;
  s_chal.nonce.data = s_nonce;
  la__auth__init(&s_auth);
  s_auth.mac.len = 32;
  s_auth.mac.data = s_mac;

  la__auth_result__init(&s_ares);
  s_ares.status = 0;
  s_ares.message = "welcome";
  s_ares.has_next_seq = 1;
  s_ares.next_seq = 9001;

  la__compact_params__init(&s_rs_cp);
  s_rs_cp.has_mode = 1;
  s_rs_cp.mode = LA__COMPACT_MODE__COMPACT_LOSSLESS;
  s_rs_grid[0] = 2, s_rs_grid[1] = 3, s_rs_grid[2] = 5;
  la__rank_start__init(&s_rs);
  s_rs.seq = 11;
  s_rs.app_id = "slurm-123456.0";
  s_rs.rank = 0;
  s_rs.nprocs = 2;
  s_rs.n_elements = 30;
  s_rs.metric = "time";
  s_rs.unit = "ns";
  s_rs.app_name = "wavetoy";
  s_rs.host = "node07";
  s_rs.has_pid = 1;
  s_rs.pid = 77;
  s_rs.compact = &s_rs_cp;
  s_rs.n_grid = 3;
  s_rs.grid = s_rs_grid;
  s_rs.has_period = 1;
  s_rs.period = 1;
  s_rs.has_t_start_ns = 1;
  s_rs.t_start_ns = 123456789;

  la__trace_missing__init(&s_tm);
  s_tm.seq = 13;
  s_tm.app_id = "slurm-123456.0";
  s_tm.rank = 1;
  s_tm.cycle_tag = 40;
  s_tm.reason = "buffer skipped";
  la__element_ids__init(&s_eid);
  s_eid.first = 4;
  s_eid_ids[0] = 10, s_eid_ids[1] = 0, s_eid_ids[2] = INT64_MAX;
  s_eid.n_ids = 3;
  s_eid.ids = s_eid_ids;
  s_eid.has_seq = s_eid.has_rank = 1;
  s_eid.seq = 14;
  s_eid.app_id = "slurm-123456.0";
  s_eid.rank = 1;
  la__rank_end__init(&s_re);
  s_re.seq = 12;
  s_re.app_id = "slurm-123456.0";
  s_re.rank = 1;
  s_re.reason = "disconnected";
  s_re.has_cycles = 1;
  s_re.cycles = 50;
  s_re.has_skipped = 1;
  s_re.skipped = 4;
  s_re.has_t_end_ns = 1;
  s_re.t_end_ns = 987654321;

  s_rank_elems[0] = 10, s_rank_elems[1] = 20, s_rank_elems[2] = 30;
  s_rank_elems[3] = 40;
  fill_trace(&s_ct[0], &s_stats[0], &s_fe[0], s_seg[0], 2, 1000);
  fill_trace(&s_ct[1], &s_stats[1], &s_fe[1], s_seg[1], 0, 10);
  fill_trace(&s_ct[2], &s_stats[2], &s_fe[2], s_seg[2], 1, 20);
  fill_trace(&s_ct[3], &s_stats[3], &s_fe[3], s_seg[3], 3, 40);
  s_ct[3].mode = LA__COMPACT_MODE__COMPACT_LOSSLESS;
  s_ct[3].error = NULL; /* optional: absent */
  s_ct[3].has_rank_seq = 0;
  for (int i = 0; i < 3; i++) s_ts_traces[i] = &s_ct[i + 1];
  s_missing[0] = 2;
  la__trace_set__init(&s_ts);
  s_ts.app_id = "job-77";
  s_ts.cycle_tag = 15;
  s_ts.nprocs = 4;
  s_ts.complete = 0;
  s_ts.n_missing_ranks = 1;
  s_ts.missing_ranks = s_missing;
  s_ts.n_traces = 3;
  s_ts.traces = s_ts_traces;
  s_ts.n_rank_elements = 4;
  s_ts.rank_elements = s_rank_elems;
  s_ts.metric = "time";
  s_ts.unit = "ns";
  s_ts.has_dropped = 1;
  s_ts.dropped = 5;
  s_ts.has_t_complete_ns = 1;
  s_ts.t_complete_ns = 55;

  la__ack__init(&s_ack);
  s_ack.seq = 0x0123456789abcdefULL;

  la__subscribe__init(&s_sub);
  s_sub.app_id = "job-77";
  s_sub.has_live = 1;
  s_sub.live = 0;
  s_sub.has_latest = 1;
  s_sub.latest = 1;
  s_sub.has_cycle_tag = 1;
  s_sub.cycle_tag = 15;
  s_sub.has_has_cycle = 1;
  s_sub.has_cycle = 1;

  la__query__init(&s_q);
  s_q.what = "traceset";
  s_q.app_id = "job-77";
  s_q.has_cycle_tag = 1;
  s_q.cycle_tag = 10;
  s_q.has_cycle_last = 1;
  s_q.cycle_last = 20;

  for (int i = 0; i < 2; i++) {
    la__status_entry__init(&s_se[i]);
    s_se_p[i] = &s_se[i];
  }
  s_se[0].key = "connections";
  s_se[0].value = "3";
  s_se[1].key = "traces_stored";
  s_se[1].value = "123456";
  la__query_reply__init(&s_qr);
  s_qr.status = 0;
  s_qr.message = "ok";
  s_qr.has_feed_protocol = 1;
  s_qr.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  s_qr_sets[0] = &s_ts;
  s_qr.n_sets = 1;
  s_qr.sets = s_qr_sets;

  la__status_request__init(&s_sreq);
  s_sreq.section = "links";

  la__status_reply__init(&s_srep);
  s_srep.daemon = "la-localagent";
  s_srep.n_entries = 2;
  s_srep.entries = s_se_p;

  la__error__init(&s_err);
  s_err.code = LA_EPROTO;
  s_err.message = "frame type 99 unknown";

  la__trace_set_head__init(&s_head);
  s_head.app_id = "job-77";
  s_head.cycle_tag = 15;
  s_head.set_bytes = 3000000;
  s_head.parts = 3;
  s_head.has_dropped = 1;
  s_head.dropped = 2;
  la__trace_set_part__init(&s_part);
  s_part.part = 1;
  s_part.data.data = s_part_data;
  s_part.data.len = sizeof s_part_data;
  la__set_notice__init(&s_note);
  s_note.app_id = "job-77";
  s_note.cycle_tag = 16;
  s_note.set_bytes = 3000000;
  s_note.limit_name = "feed.queue_bytes";
  s_note.limit = 67108864;
  la__rank_refused__init(&s_rref);
  s_rref.seq = 11;
  s_rref.app_id = "slurm-123456.0";
  s_rref.rank = 1;
  s_rref.code = LA_EREFUSED;
  s_rref.reason = "app id slurm-123456.0 belongs to another user on the "
                  "front end: choose another id (LA_APP_ID)";
}

typedef struct {
  uint16_t type;
  ProtobufCMessage *msg;
} sample_t;

static sample_t samples[N_TYPES];

static void build_samples(void) {
  reset_samples();
  sample_t s[N_TYPES] = {
    {T_REG, M(&s_reg)},   {T_REPLY, M(&s_reply)}, {T_DR, M(&s_dr)},
    {T_FIN, M(&s_fin)},   {T_HELLO, M(&s_hello)}, {T_CHAL, M(&s_chal)},
    {T_AUTH, M(&s_auth)}, {T_ARES, M(&s_ares)},   {T_RS, M(&s_rs)},
    {T_RE, M(&s_re)},     {T_CT, M(&s_ct[0])},    {T_ACK, M(&s_ack)},
    {T_SUB, M(&s_sub)},   {T_TS, M(&s_ts)},       {T_Q, M(&s_q)},
    {T_QR, M(&s_qr)},     {T_SREQ, M(&s_sreq)},   {T_SREP, M(&s_srep)},
    {T_ERR, M(&s_err)},   {T_TM, M(&s_tm)},       {T_EID, M(&s_eid)},
    {T_HEAD, M(&s_head)}, {T_PART, M(&s_part)},   {T_NOTE, M(&s_note)},
    {T_RREF, M(&s_rref)},
  };
  memcpy(samples, s, sizeof s);
}

static int setup(void **state) {
  build_samples();
  return 0;
}

/* ------------------------------------------------------------- helpers */

static uint8_t *pack_frame(uint16_t type, const ProtobufCMessage *m,
                           size_t *len) {
  uint8_t *f = NULL;
  int rc = la_frame_pack(type, m, &f, len);
  assert_int_equal(rc, 0);
  assert_non_null(f);
  return f;
}

/* pack -> header parse -> decode; checks the header bytes, that both pack
 * functions agree, and that the decoded message re-packs to the same bytes.
 */
static ProtobufCMessage *roundtrip(uint16_t type, const ProtobufCMessage *m) {
  size_t flen;
  uint8_t *f = pack_frame(type, m, &flen);
  assert_int_equal(flen, la_frame_size(m));
  assert_true(flen >= HDR);

  uint8_t *g = malloc(flen);
  assert_non_null(g);
  assert_int_equal(la_frame_pack_into(type, m, g, flen), (long)flen);
  assert_memory_equal(f, g, flen);
  free(g);

  uint32_t plen = (uint32_t)(flen - HDR);
  assert_int_equal(f[0], (plen >> 24) & 0xff);
  assert_int_equal(f[1], (plen >> 16) & 0xff);
  assert_int_equal(f[2], (plen >> 8) & 0xff);
  assert_int_equal(f[3], plen & 0xff);
  assert_int_equal(f[4], type >> 8);
  assert_int_equal(f[5], type & 0xff);
  assert_int_equal(f[6], 0);
  assert_int_equal(f[7], 0);

  uint16_t t = 0;
  uint32_t len = 0;
  assert_int_equal(la_frame_header_parse(f, LA_FRAME_DEFAULT_MAX, &t, &len),
                   0);
  assert_int_equal(t, type);
  assert_int_equal(len, plen);

  ProtobufCMessage *out = NULL;
  char why[256] = "";
  int rc = la_msg_decode(t, f + HDR, len, &out, why, sizeof why);
  if (rc != 0)
    fail_msg("decode of %s failed: %d (%s)", la_msg_name(type), rc, why);
  assert_non_null(out);
  assert_ptr_equal(out->descriptor, m->descriptor);

  size_t rlen;
  uint8_t *r = pack_frame(type, out, &rlen);
  assert_int_equal(rlen, flen);
  assert_memory_equal(r, f, flen);
  free(r);
  free(f);
  return out;
}

/* Bytes one value of a field of this type takes in a protobuf-c struct. */
static size_t value_size(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
      return 8;
    case PROTOBUF_C_TYPE_BOOL:
      return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
      return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
      return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
      return sizeof(ProtobufCMessage *);
    default:
      return 4; /* the 32-bit integers, enums, float */
  }
}

static void cmp_msg(const ProtobufCMessage *x, const ProtobufCMessage *y);

/* One value of field f of message type d, at a and b. Floating point
 * values compare with == (so -0.0 equals 0.0); an absent optional string
 * (NULL, as protobuf-c decodes it) equals an empty one. */
static void cmp_value(const ProtobufCMessageDescriptor *d,
                      const ProtobufCFieldDescriptor *f, const void *a,
                      const void *b) {
  switch (f->type) {
    case PROTOBUF_C_TYPE_DOUBLE:
      if (!(*(const double *)a == *(const double *)b))
        fail_msg("%s.%s: %.17g != %.17g", d->name, f->name, *(const double *)a,
                 *(const double *)b);
      return;
    case PROTOBUF_C_TYPE_FLOAT:
      if (!(*(const float *)a == *(const float *)b))
        fail_msg("%s.%s: %g != %g", d->name, f->name, *(const float *)a,
                 *(const float *)b);
      return;
    case PROTOBUF_C_TYPE_STRING: {
      const char *s = *(char *const *)a, *t = *(char *const *)b;
      if (f->label == PROTOBUF_C_LABEL_REQUIRED) {
        assert_non_null(s);
        assert_non_null(t);
      }
      if (strcmp(s ? s : "", t ? t : "") != 0)
        fail_msg("%s.%s: '%s' != '%s'", d->name, f->name, s ? s : "(null)",
                 t ? t : "(null)");
      return;
    }
    case PROTOBUF_C_TYPE_BYTES: {
      const ProtobufCBinaryData *p = a, *q = b;
      if (p->len != q->len || (p->len && memcmp(p->data, q->data, p->len)))
        fail_msg("%s.%s: bytes differ (%zu and %zu)", d->name, f->name, p->len,
                 q->len);
      return;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
      const ProtobufCMessage *m = *(ProtobufCMessage *const *)a;
      const ProtobufCMessage *n = *(ProtobufCMessage *const *)b;
      if (!m || !n) {
        if (m != n)
          fail_msg("%s.%s: present in one message only", d->name, f->name);
        return;
      }
      cmp_msg(m, n);
      return;
    }
    default:
      if (memcmp(a, b, value_size(f->type)) != 0)
        fail_msg("%s.%s: values differ", d->name, f->name);
  }
}

/* Field by field equality of two messages of the same type, nested and
 * repeated ones included, walking the descriptor so that no field is left
 * out: an optional field's presence must match, and its value when
 * present; a repeated field's count, and every element. */
static void cmp_msg(const ProtobufCMessage *x, const ProtobufCMessage *y) {
  const ProtobufCMessageDescriptor *d = x->descriptor;
  const char *a = (const char *)x, *b = (const char *)y;

  assert_ptr_equal(y->descriptor, d);
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    size_t sz = value_size(f->type);
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t na = *(const size_t *)(a + f->quantifier_offset);
      size_t nb = *(const size_t *)(b + f->quantifier_offset);
      if (na != nb)
        fail_msg("%s.%s: %zu != %zu values", d->name, f->name, na, nb);
      const char *va = *(char *const *)(a + f->offset);
      const char *vb = *(char *const *)(b + f->offset);
      for (size_t k = 0; k < na; k++) cmp_value(d, f, va + k * sz, vb + k * sz);
      continue;
    }
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset) {
      protobuf_c_boolean ha =
          *(const protobuf_c_boolean *)(a + f->quantifier_offset);
      protobuf_c_boolean hb =
          *(const protobuf_c_boolean *)(b + f->quantifier_offset);
      if (!ha != !hb)
        fail_msg("%s.%s: present in one message only", d->name, f->name);
      if (!ha) continue;
    }
    cmp_value(d, f, a + f->offset, b + f->offset);
  }
}

/* Asserts la_msg_validate refuses m (a message built in memory) with
 * LA_EPROTO and a reason containing `word` (any reason when NULL). */
static void expect_refused(uint16_t type, const ProtobufCMessage *m,
                           const char *word) {
  char why[256] = "";
  int rc = la_msg_validate(type, m, why, sizeof why);
  if (rc != LA_EPROTO)
    fail_msg(
        "%s accepted by la_msg_validate (rc %d), expected a refusal "
        "naming '%s'",
        la_msg_name(type), rc, word ? word : "");
  if (word && !strstr(why, word))
    fail_msg("la_msg_validate reason '%s' does not name '%s'", why, word);
}

/* Asserts msg is refused with LA_EPROTO by la_msg_validate and, once packed,
 * by la_msg_decode, both times with a reason containing `word`. */
static void expect_invalid(uint16_t type, const ProtobufCMessage *m,
                           const char *word) {
  expect_refused(type, m, word);
  /* NULL reason buffer must be fine too */
  assert_int_equal(la_msg_validate(type, m, NULL, 0), LA_EPROTO);

  char why[256] = "";
  size_t flen;
  uint8_t *f = pack_frame(type, m, &flen);
  ProtobufCMessage *out = NULL;
  int rc = la_msg_decode(type, f + HDR, flen - HDR, &out, why, sizeof why);
  free(f);
  if (rc == 0) la_msg_free(out);
  if (rc != LA_EPROTO)
    fail_msg("%s accepted by la_msg_decode (rc %d), expected a refusal "
             "naming '%s'", la_msg_name(type), rc, word);
  assert_null(out);
  if (!strstr(why, word) || !strstr(why, la_msg_name(type)))
    fail_msg("la_msg_decode reason '%s' does not name '%s' and '%s'", why,
             word, la_msg_name(type));
}

static void expect_valid(uint16_t type, const ProtobufCMessage *m) {
  char why[256] = "";
  int rc = la_msg_validate(type, m, why, sizeof why);
  if (rc != 0)
    fail_msg("valid %s refused: %d (%s)", la_msg_name(type), rc, why);
  ProtobufCMessage *out = roundtrip(type, m);
  la_msg_free(out);
}

/* expect_valid when word is NULL, else expect_invalid naming word: one
 * row of a table of cases. */
static void expect_verdict(uint16_t type, const ProtobufCMessage *m,
                           const char *word) {
  if (word)
    expect_invalid(type, m, word);
  else
    expect_valid(type, m);
}

static char *repeat(char c, size_t n) {
  static char buf[2048];
  assert_true(n < sizeof buf);
  memset(buf, c, n);
  buf[n] = 0;
  return buf;
}

/* Deterministic PRNG (xorshift64*), so failures reproduce. */
static uint64_t rng_state;
static uint64_t rng(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1DULL;
}

/* --------------------------------------------------------- frame header */

static void test_msg_names_and_descriptors(void **state) {
  int known = 0;
  for (uint32_t t = 0; t <= 0xffff; t++) {
    const ProtobufCMessageDescriptor *d = la_msg_descriptor((uint16_t)t);
    if (!d) {
      assert_string_equal(la_msg_name((uint16_t)t), "unknown");
      continue;
    }
    known++;
    /* every known type has a sample of the matching descriptor */
    int found = 0;
    for (int i = 0; i < N_TYPES; i++)
      if (samples[i].type == t) {
        assert_ptr_equal(samples[i].msg->descriptor, d);
        found = 1;
      }
    if (!found) fail_msg("frame type %u has no sample in this test", t);
    assert_string_not_equal(la_msg_name((uint16_t)t), "unknown");
  }
  assert_int_equal(known, N_TYPES);
  assert_null(la_msg_descriptor(LA__MSG_TYPE__MSG_NONE));
  assert_string_equal(la_msg_name(T_REG), "RegisterRequest");
  assert_string_equal(la_msg_name(T_TS), "TraceSet");
  assert_string_equal(la_msg_name(T_CT), "CompactTrace");
}

static void test_frame_bytes_exact(void **state) {
  /* Ack{seq=1} is the 2-byte payload 08 01. */
  La__Ack a = LA__ACK__INIT;
  a.seq = 1;
  uint8_t buf[16];
  memset(buf, 0xee, sizeof buf);
  long n = la_frame_pack_into(T_ACK, M(&a), buf, sizeof buf);
  assert_int_equal(n, 10);
  const uint8_t want[10] = {0, 0, 0, 2, 0, 17, 0, 0, 0x08, 0x01};
  assert_memory_equal(buf, want, 10);
  assert_int_equal(buf[10], 0xee); /* nothing written past the frame */
  assert_int_equal(la_frame_size(M(&a)), 10);

  /* Error type 32 with a 300-byte message: length needs two bytes. */
  La__Error e = LA__ERROR__INIT;
  e.code = -1;
  e.message = repeat('x', 300);
  size_t flen;
  uint8_t *f = pack_frame(T_ERR, M(&e), &flen);
  uint32_t plen = (uint32_t)(flen - HDR);
  assert_true(plen > 300);
  assert_int_equal(f[0], 0);
  assert_int_equal(f[1], 0);
  assert_int_equal((f[2] << 8) | f[3], plen);
  assert_int_equal(f[4], 0);
  assert_int_equal(f[5], 32);
  free(f);
}

static void test_header_parse_ok(void **state) {
  uint8_t h[8] = {0x00, 0x01, 0x00, 0x00, 0x00, 21, 0, 0};
  uint16_t t = 0;
  uint32_t l = 0;
  assert_int_equal(la_frame_header_parse(h, 1u << 20, &t, &l), 0);
  assert_int_equal(t, T_TS);
  assert_int_equal(l, 65536);
  /* exactly the maximum is fine, zero too */
  assert_int_equal(la_frame_header_parse(h, 65536, &t, &l), 0);
  uint8_t z[8] = {0, 0, 0, 0, 0, T_FIN, 0, 0};
  assert_int_equal(la_frame_header_parse(z, 0, &t, &l), 0);
  assert_int_equal(l, 0);
  assert_int_equal(t, T_FIN);
}

static void test_header_parse_reserved_bytes(void **state) {
  uint16_t t;
  uint32_t l;
  uint8_t h[8] = {0, 0, 0, 4, 0, T_ACK, 0, 0};
  assert_int_equal(la_frame_header_parse(h, 1024, &t, &l), 0);
  for (int b = 6; b < 8; b++)
    for (int v = 1; v < 256; v <<= 1) {
      uint8_t x[8];
      memcpy(x, h, 8);
      x[b] = (uint8_t)v;
      assert_int_equal(la_frame_header_parse(x, 1024, &t, &l), LA_EPROTO);
    }
}

static void test_header_parse_unknown_type(void **state) {
  uint16_t t;
  uint32_t l;
  const uint16_t bad[] = {0, 5, 9, 18, 19, 24, 29, 33, 0x100, 0x1001,
                          0xffff};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint8_t h[8] = {0, 0, 0, 4, (uint8_t)(bad[i] >> 8), (uint8_t)bad[i], 0,
                    0};
    assert_int_equal(la_frame_header_parse(h, 1024, &t, &l), LA_EPROTO);
  }
  /* a known type in the high byte is not mistaken for a low one */
  uint8_t h[8] = {0, 0, 0, 4, T_ACK, 0, 0, 0};
  assert_int_equal(la_frame_header_parse(h, 1024, &t, &l), LA_EPROTO);
}

static void test_header_parse_oversized(void **state) {
  uint16_t t;
  uint32_t l;
  uint8_t h[8] = {0, 1, 0, 1, 0, T_CT, 0, 0}; /* 65537 */
  assert_int_equal(la_frame_header_parse(h, 65536, &t, &l), LA_EMSGSIZE);
  uint8_t gib[8] = {0x40, 0, 0, 0, 0, T_REG, 0, 0}; /* 1 GiB */
  assert_int_equal(la_frame_header_parse(gib, 64u << 10, &t, &l),
                   LA_EMSGSIZE);
  assert_int_equal(
      la_frame_header_parse(gib, LA_FRAME_DEFAULT_MAX, &t, &l), LA_EMSGSIZE);
  uint8_t max[8] = {0xff, 0xff, 0xff, 0xff, 0, T_ACK, 0, 0};
  assert_int_equal(la_frame_header_parse(max, LA_FRAME_DEFAULT_MAX, &t, &l),
                   LA_EMSGSIZE);
  uint8_t one[8] = {0, 0, 0, 1, 0, T_ACK, 0, 0};
  assert_int_equal(la_frame_header_parse(one, 0, &t, &l), LA_EMSGSIZE);
  /* oversized and unknown type: refused either way */
  uint8_t both[8] = {0x40, 0, 0, 0, 0, 99, 0, 0};
  assert_true(la_frame_header_parse(both, 1024, &t, &l) < 0);
}

/* ------------------------------------------------------------ encoding */

static void test_pack_into_too_small(void **state) {
  for (int i = 0; i < N_TYPES; i++) {
    const sample_t *s = &samples[i];
    size_t need = la_frame_size(s->msg);
    for (size_t cap = 0; cap < need; cap++) {
      /* exactly cap bytes, so ASan sees any write past the end */
      uint8_t *b = malloc(cap ? cap : 1);
      assert_non_null(b);
      memset(b, 0x5a, cap ? cap : 1);
      long r = la_frame_pack_into(s->type, s->msg, b, cap);
      if (r != LA_EMSGSIZE)
        fail_msg("%s: cap %zu of %zu gave %ld, expected LA_EMSGSIZE",
                 la_msg_name(s->type), cap, need, r);
      free(b);
    }
    uint8_t *b = malloc(need + 1);
    assert_non_null(b);
    b[need] = 0x77;
    assert_int_equal(la_frame_pack_into(s->type, s->msg, b, need),
                     (long)need);
    assert_int_equal(b[need], 0x77);
    free(b);
  }
}

static void test_pack_type_mismatch(void **state) {
  uint8_t buf[1024];
  uint8_t *out = (uint8_t *)0x1;
  size_t out_len = 12345;
  /* RegisterRequest sent as a Hello, a TraceSet as a CompactTrace */
  assert_int_equal(la_frame_pack_into(T_HELLO, M(&s_reg), buf, sizeof buf),
                   LA_EINVAL);
  assert_int_equal(la_frame_pack(T_HELLO, M(&s_reg), &out, &out_len),
                   LA_EINVAL);
  assert_ptr_equal(out, (uint8_t *)0x1);
  assert_int_equal(out_len, 12345);
  assert_int_equal(la_frame_pack_into(T_CT, M(&s_ts), buf, sizeof buf),
                   LA_EINVAL);
  assert_int_equal(la_frame_pack(T_TS, M(&s_ct[0]), &out, &out_len),
                   LA_EINVAL);
  /* unknown frame types */
  const uint16_t bad[] = {0, 5, 99, 0xffff};
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(la_frame_pack_into(bad[i], M(&s_ack), buf, sizeof buf),
                     LA_EINVAL);
    assert_int_equal(la_frame_pack(bad[i], M(&s_ack), &out, &out_len),
                     LA_EINVAL);
  }
  /* every type against every other sample */
  for (int i = 0; i < N_TYPES; i++)
    for (int j = 0; j < N_TYPES; j++)
      if (i != j)
        assert_int_equal(la_frame_pack_into(samples[i].type, samples[j].msg,
                                            buf, sizeof buf),
                         LA_EINVAL);
  /* validation of a message under the wrong type */
  char why[128] = "";
  assert_int_equal(la_msg_validate(T_HELLO, M(&s_reg), why, sizeof why),
                   LA_EPROTO);
  assert_non_null(strstr(why, "type"));
  assert_int_equal(la_msg_validate(0, M(&s_ack), why, sizeof why),
                   LA_EPROTO);
}

/* ---------------------------------------------------------- round trips */

static void test_roundtrip_every_type(void **state) {
  for (int i = 0; i < N_TYPES; i++) {
    ProtobufCMessage *out = roundtrip(samples[i].type, samples[i].msg);
    cmp_msg(samples[i].msg, out);
    la_msg_free(out);
  }
}

static void test_roundtrip_register_request_nested(void **state) {
  La__RegisterRequest *r = (void *)roundtrip(T_REG, M(&s_reg));
  assert_non_null(r->compact);
  assert_int_equal(r->compact->mode, LA__COMPACT_MODE__COMPACT_MAXERR);
  assert_dbl_equal(r->compact->cv, 0.1);
  assert_dbl_equal(r->compact->epsilon, 0.01);
  assert_true(r->compact->relative);
  assert_int_equal(r->n_grid, 3);
  assert_int_equal(r->grid[0] * r->grid[1] * r->grid[2], 120);
  assert_int_equal(r->grid[2], 6);
  assert_int_equal(r->nonce, 0xfedcba9876543210ULL);
  assert_string_equal(r->metric, "papi:PAPI_TOT_CYC");
  la_msg_free(M(r));

  /* minimal form: no compact, no grid, no period, no host */
  s_reg.compact = NULL;
  s_reg.n_grid = 0;
  s_reg.grid = NULL;
  s_reg.has_period = 0;
  s_reg.host = NULL;
  r = (void *)roundtrip(T_REG, M(&s_reg));
  assert_null(r->compact);
  assert_int_equal(r->n_grid, 0);
  assert_int_equal(r->has_period, 0);
  cmp_msg(M(&s_reg), M(r));
  la_msg_free(M(r));
}

static void test_roundtrip_trace_set_nested(void **state) {
  La__TraceSet *s = (void *)roundtrip(T_TS, M(&s_ts));
  assert_int_equal(s->n_traces, 3);
  assert_int_equal(s->traces[0]->rank, 0);
  assert_int_equal(s->traces[2]->rank, 3);
  assert_int_equal(s->traces[2]->stats->count, 40);
  assert_null(s->traces[2]->error);
  assert_non_null(s->traces[1]->error);
  assert_memory_equal(s->traces[1]->segments.data, s_seg[2], 40);
  assert_int_equal(s->n_missing_ranks, 1);
  assert_int_equal(s->missing_ranks[0], 2);
  cmp_msg(M(&s_ts), M(s));
  la_msg_free(M(s));

  /* a complete set of 4 ranks with 1 KiB segments each */
  static La__CompactTrace t4[4];
  static La__SeriesStats st4[4];
  static La__FitError fe4[4];
  static uint8_t seg4[4][40];
  static La__CompactTrace *p4[4];
  static uint8_t big[4][1024];
  for (uint32_t i = 0; i < 4; i++) {
    fill_trace(&t4[i], &st4[i], &fe4[i], seg4[i], i, 1000 + i);
    for (int k = 0; k < 1024; k++) big[i][k] = (uint8_t)(k ^ i);
    t4[i].segments.data = big[i];
    t4[i].segments.len = 1024;
    p4[i] = &t4[i];
  }
  s_ts.traces = p4;
  s_ts.n_traces = 4;
  s_ts.n_missing_ranks = 0;
  s_ts.complete = 1;
  s = (void *)roundtrip(T_TS, M(&s_ts));
  cmp_msg(M(&s_ts), M(s));
  la_msg_free(M(s));
}

static void test_roundtrip_extreme_values(void **state) {
  /* largest values of every integer width survive */
  s_dr.buffer = 0;
  s_dr.cycle_tag = UINT64_MAX;
  s_dr.seq = UINT64_MAX;
  s_dr.skipped = UINT64_MAX;
  La__DataReady *d = (void *)roundtrip(T_DR, M(&s_dr));
  cmp_msg(M(&s_dr), M(d));
  la_msg_free(M(d));

  s_err.code = INT32_MIN;
  s_err.message = "";
  La__Error *e = (void *)roundtrip(T_ERR, M(&s_err));
  assert_int_equal(e->code, INT32_MIN);
  la_msg_free(M(e));

  s_ct[0].n_elements = 1ULL << 32;
  s_stats[0].count = 1ULL << 32;
  s_stats[0].min = -INFINITY; /* not validated; must still travel */
  s_stats[0].sum = -0.0;
  La__CompactTrace *t = (void *)roundtrip(T_CT, M(&s_ct[0]));
  assert_int_equal(t->n_elements, 1ULL << 32);
  assert_true(isinf(t->stats->min) && t->stats->min < 0);
  assert_true(signbit(t->stats->sum));
  la_msg_free(M(t));

  s_reg.rank = LA_MAX_RANKS - 1;
  s_reg.nprocs = LA_MAX_RANKS;
  s_reg.pid = INT32_MAX;
  s_reg.app_id = repeat('z', LA_MAX_ID_LEN);
  La__RegisterRequest *r = (void *)roundtrip(T_REG, M(&s_reg));
  assert_int_equal(strlen(r->app_id), LA_MAX_ID_LEN);
  assert_int_equal(r->rank, LA_MAX_RANKS - 1);
  la_msg_free(M(r));
}

static void test_empty_payload_messages(void **state) {
  /* Finalize and StatusRequest have no required field: an empty payload
   * is a valid message; others must be refused. */
  ProtobufCMessage *out = NULL;
  char why[256];
  assert_int_equal(la_msg_decode(T_FIN, (const uint8_t *)"", 0, &out, why,
                                 sizeof why), 0);
  assert_non_null(out);
  assert_int_equal(((La__Finalize *)out)->has_cycles, 0);
  la_msg_free(out);
  out = NULL;
  assert_int_equal(la_msg_decode(T_SREQ, (const uint8_t *)"", 0, &out, why,
                                 sizeof why), 0);
  la_msg_free(out);
  for (int i = 0; i < N_TYPES; i++) {
    uint16_t t = samples[i].type;
    if (t == T_FIN || t == T_SREQ || t == T_SUB) continue;
    out = NULL;
    why[0] = 0;
    int rc = la_msg_decode(t, (const uint8_t *)"", 0, &out, why, sizeof why);
    if (rc == 0) {
      la_msg_free(out);
      fail_msg("empty %s payload accepted", la_msg_name(t));
    }
    assert_int_equal(rc, LA_EPROTO);
    assert_non_null(strstr(why, la_msg_name(t)));
  }
  /* decode of an unknown type */
  why[0] = 0;
  assert_int_equal(la_msg_decode(99, (const uint8_t *)"\x08\x01", 2, &out,
                                 why, sizeof why), LA_EPROTO);
  assert_non_null(strstr(why, "99"));
}

static void test_why_truncated_safely(void **state) {
  s_reg.nprocs = 0;
  char why[8];
  memset(why, 'Q', sizeof why);
  assert_int_equal(la_msg_validate(T_REG, M(&s_reg), why, 6), LA_EPROTO);
  assert_int_equal(strlen(why), 5);
  assert_int_equal(why[6], 'Q');
  assert_int_equal(why[7], 'Q');
  size_t flen;
  uint8_t *f = pack_frame(T_REG, M(&s_reg), &flen);
  ProtobufCMessage *out = NULL;
  memset(why, 'Q', sizeof why);
  assert_int_equal(
      la_msg_decode(T_REG, f + HDR, flen - HDR, &out, why, 4), LA_EPROTO);
  assert_int_equal(strlen(why), 3);
  assert_int_equal(why[4], 'Q');
  assert_int_equal(
      la_msg_decode(T_REG, f + HDR, flen - HDR, &out, NULL, 0), LA_EPROTO);
  free(f);
}

/* ------------------------------------------------- truncation, garbage */

/* Independent checks of what a receiver relies on after a successful
 * decode (not a copy of la_msg_validate: written from the protocol). */
static const char *trace_invariants(const La__CompactTrace *t) {
  if (!t) return "NULL trace";
  if (!t->app_id || !t->app_id[0] || strlen(t->app_id) > LA_MAX_ID_LEN)
    return "trace app_id";
  if (!t->stats) return "trace stats missing";
  if (t->n_elements == 0 || t->n_elements > (1ULL << 32))
    return "trace n_elements";
  if (t->stats->count != t->n_elements) return "trace stats.count";
  if (t->mode < 1 || t->mode > 3) return "trace mode";
  if (t->segments.len == 0 || !t->segments.data) return "trace segments";
  return NULL;
}

static const char *set_invariants(const La__TraceSet *s) {
  if (!s->app_id || !s->app_id[0]) return "set app_id";
  if (s->nprocs == 0 || s->nprocs > LA_MAX_RANKS) return "set nprocs";
  if (s->n_traces > s->nprocs) return "set n_traces";
  for (size_t i = 0; i < s->n_traces; i++) {
    const char *e = trace_invariants(s->traces[i]);
    if (e) return e;
    if (s->traces[i]->rank >= s->nprocs) return "set trace rank";
  }
  for (size_t i = 0; i < s->n_missing_ranks; i++)
    if (s->missing_ranks[i] >= s->nprocs) return "set missing rank";
  return NULL;
}

static const char *invariants(uint16_t type, const ProtobufCMessage *m) {
  switch (type) {
  case T_REG: {
    const La__RegisterRequest *r = (const void *)m;
    if (r->protocol != LA_PROTOCOL_VERSION) return "protocol";
    if (!r->app_id || !r->app_id[0] || strlen(r->app_id) > LA_MAX_ID_LEN)
      return "app_id";
    for (const char *p = r->app_id; *p; p++)
      if (*p <= ' ' || *p > '~') return "app_id char";
    if (r->nprocs == 0 || r->rank >= r->nprocs) return "rank/nprocs";
    if (r->n_buffers < 2 || r->n_buffers > 16) return "n_buffers";
    if (r->n_elements == 0 || r->n_elements > (1ULL << 32))
      return "n_elements";
    if (r->n_grid) {
      if (r->n_grid != 3) return "grid dims";
      /* overflow-safe product */
      unsigned __int128 p = 1;
      for (int i = 0; i < 3; i++) p *= r->grid[i];
      if (p != r->n_elements) return "grid product";
    }
    if (r->compact && r->compact->has_cv &&
        !(r->compact->cv >= 0 && isfinite(r->compact->cv)))
      return "cv";
    return NULL;
  }
  case T_DR:
    return ((const La__DataReady *)m)->buffer >= 16 ? "buffer" : NULL;
  case T_CHAL: {
    size_t n = ((const La__Challenge *)m)->nonce.len;
    return n < 16 || n > 64 ? "nonce length" : NULL;
  }
  case T_RS: {
    const La__RankStart *r = (const void *)m;
    if (r->nprocs == 0 || r->rank >= r->nprocs) return "rank/nprocs";
    return NULL;
  }
  case T_CT:
    return trace_invariants((const void *)m);
  case T_TS:
    return set_invariants((const void *)m);
  /* QueryReply's nested sets: see bug_query_reply_sets_not_validated */
  default:
    return NULL;
  }
}

/* Hex of the first bytes of p, for failure messages (static buffer). */
static const char *hex(const uint8_t *p, size_t n) {
  static char out[3 * 48 + 8];
  size_t k = 0;
  for (size_t i = 0; i < n && i < 48; i++)
    k += (size_t)snprintf(out + k, sizeof out - k, "%02x ", p[i]);
  snprintf(out + k, sizeof out - k, "%s", n > 48 ? "..." : "");
  return out;
}

/* Decodes one candidate payload. Fails the test on a crash (by crashing),
 * on a bad return code, or on an accepted message a receiver could not
 * trust; an accepted message must also re-pack and decode again (which a
 * kept unknown field numbered 0 would break: see
 * bug_decode_accepts_field_number_zero). */
static int try_decode(uint16_t type, const uint8_t *p, size_t n) {
  ProtobufCMessage *out = NULL;
  char why[256] = "";
  int rc = la_msg_decode(type, p, n, &out, why, sizeof why);
  if (rc != 0) {
    if (rc != LA_EPROTO)
      fail_msg("%s: decode returned %d, not LA_EPROTO", la_msg_name(type),
               rc);
    if (!why[0]) fail_msg("%s: refused without a reason", la_msg_name(type));
    assert_null(out);
    return 0;
  }
  assert_non_null(out);
  char why2[256] = "";
  if (la_msg_validate(type, out, why2, sizeof why2) != 0)
    fail_msg("%s: decoded message fails validation: %s", la_msg_name(type),
             why2);
  const char *bad = invariants(type, out);
  if (bad)
    fail_msg("%s: decode accepted a message with a bad %s; payload %s",
             la_msg_name(type), bad, hex(p, n));
  size_t flen;
  uint8_t *f = pack_frame(type, out, &flen);
  ProtobufCMessage *again = NULL;
  rc = la_msg_decode(type, f + HDR, flen - HDR, &again, why, sizeof why);
  if (rc != 0)
    fail_msg("%s: decoded payload %s re-packs to %zu bytes that are "
             "refused: %s", la_msg_name(type), hex(p, n), flen - HDR, why);
  la_msg_free(again);
  free(f);
  la_msg_free(out);
  return 1;
}

static void test_truncated_payloads(void **state) {
  for (int i = 0; i < N_TYPES; i++) {
    const sample_t *s = &samples[i];
    size_t flen;
    uint8_t *f = pack_frame(s->type, s->msg, &flen);
    size_t plen = flen - HDR;
    int rejected = 0;
    for (size_t k = 0; k < plen; k++) {
      /* an exact-size copy, so reading past the prefix is caught */
      uint8_t *p = malloc(k ? k : 1);
      assert_non_null(p);
      memcpy(p, f + HDR, k);
      rejected += !try_decode(s->type, p, k);
      free(p);
    }
    assert_true(try_decode(s->type, f + HDR, plen));
    /* most prefixes cut a required field or a length-delimited one */
    if (s->type != T_FIN && s->type != T_SREQ && s->type != T_SUB &&
        plen > 1 && rejected == 0)
      fail_msg("%s: no prefix of %zu bytes was refused",
               la_msg_name(s->type), plen);
    free(f);
  }
}

static void test_random_garbage(void **state) {
  rng_state = 0x9e3779b97f4a7c15ULL;
  int accepted = 0, total = 0;
  uint8_t buf[512];
  for (int it = 0; it < 40000; it++) {
    uint16_t type = samples[rng() % N_TYPES].type;
    size_t n = (size_t)(rng() % 300);
    for (size_t k = 0; k < n; k++) buf[k] = (uint8_t)rng();
    /* bias a third of them towards plausible field tags */
    if (it % 3 == 0)
      for (size_t k = 0; k < n; k += 1 + rng() % 6)
        buf[k] = (uint8_t)(((1 + rng() % 17) << 3) | (rng() % 3));
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    memcpy(p, buf, n);
    accepted += try_decode(type, p, n);
    total++;
    free(p);
  }
  print_message("random garbage: %d of %d payloads decoded as valid\n",
                accepted, total);
}

static void test_mutated_payloads(void **state) {
  rng_state = 0x0123456789abcdefULL;
  int accepted = 0, total = 0;
  for (int i = 0; i < N_TYPES; i++) {
    const sample_t *s = &samples[i];
    size_t flen;
    uint8_t *f = pack_frame(s->type, s->msg, &flen);
    size_t plen = flen - HDR;
    for (int it = 0; it < 2500; it++) {
      size_t n = plen;
      int op = (int)(rng() % 8);
      if (op == 6) n = plen + 1 + rng() % 16; /* trailing bytes */
      if (op == 7 && plen) n = rng() % plen;  /* cut */
      uint8_t *p = malloc(n ? n : 1);
      assert_non_null(p);
      memcpy(p, f + HDR, n < plen ? n : plen);
      for (size_t k = plen; k < n; k++) p[k] = (uint8_t)rng();
      int changes = 1 + (int)(rng() % 4);
      for (int c = 0; c < changes && n; c++) {
        size_t at = rng() % n;
        switch (rng() % 4) {
        case 0: p[at] = (uint8_t)rng(); break;
        case 1: p[at] ^= (uint8_t)(1u << (rng() % 8)); break;
        case 2: p[at] = 0xff; break;
        default: p[at] = 0; break;
        }
      }
      accepted += try_decode(s->type, p, n);
      total++;
      free(p);
    }
    free(f);
  }
  print_message("mutations: %d of %d payloads decoded as valid\n", accepted,
                total);
  assert_true(accepted > 0); /* the checks above did run on real messages */
}

/* ---------------------------------------------------------- validation */

static void test_valid_samples_accepted(void **state) {
  for (int i = 0; i < N_TYPES; i++) expect_valid(samples[i].type,
                                                 samples[i].msg);
}

static void test_register_rank_nprocs(void **state) {
  static const struct {
    uint32_t rank, nprocs;
    const char *word; /* NULL: valid */
  } c[] = {{8, 8, "rank 8"}, {9, 8, "nprocs"},
           {0, 0, "nprocs"}, {0, LA_MAX_RANKS + 1, "nprocs"},
           {0, 1, NULL},     {7, 8, NULL}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    s_reg.rank = c[i].rank;
    s_reg.nprocs = c[i].nprocs;
    expect_verdict(T_REG, M(&s_reg), c[i].word);
  }
}

static void test_register_n_buffers(void **state) {
  const uint32_t bad[] = {0, 1, 17, 1000, UINT32_MAX};
  for (size_t i = 0; i < 5; i++) {
    s_reg.n_buffers = bad[i];
    expect_invalid(T_REG, M(&s_reg), "n_buffers");
  }
  s_reg.n_buffers = 2;
  expect_valid(T_REG, M(&s_reg));
  s_reg.n_buffers = 16;
  expect_valid(T_REG, M(&s_reg));
}

static void test_register_n_elements(void **state) {
  static const struct {
    uint64_t n;
    const char *word; /* NULL: valid */
  } c[] = {{0, "n_elements"},
           {(1ULL << 32) + 1, "n_elements"},
           {UINT64_MAX, "n_elements"},
           {1ULL << 32, NULL},
           {1, NULL}};
  s_reg.n_grid = 0;
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    s_reg.n_elements = c[i].n;
    expect_verdict(T_REG, M(&s_reg), c[i].word);
  }
}

static void test_register_app_id(void **state) {
  char *const bad[] = {"", "my job", "tab\tjob", "caf\xc3\xa9", "nl\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    s_reg.app_id = bad[i];
    expect_invalid(T_REG, M(&s_reg), "app_id");
  }
  s_reg.app_id = repeat('a', LA_MAX_ID_LEN + 1);
  expect_invalid(T_REG, M(&s_reg), "app_id");
  s_reg.app_id = repeat('a', LA_MAX_ID_LEN);
  expect_valid(T_REG, M(&s_reg));
  s_reg.app_id = "a";
  expect_valid(T_REG, M(&s_reg));
  s_reg.app_id = NULL; /* built in memory without one */
  expect_refused(T_REG, M(&s_reg), "app_id");
  s_reg.app_id = "ok";
  s_reg.app_name = "two words";
  expect_invalid(T_REG, M(&s_reg), "app_name");
  s_reg.app_name = "";
  expect_invalid(T_REG, M(&s_reg), "app_name");
}

static void test_register_protocol(void **state) {
  s_reg.protocol = LA_PROTOCOL_VERSION + 1;
  expect_invalid(T_REG, M(&s_reg), "protocol");
  s_reg.protocol = 0;
  expect_invalid(T_REG, M(&s_reg), "protocol");
}

static void test_register_grid(void **state) {
  s_grid[2] = 7; /* 4*5*7 = 140 != 120 */
  expect_invalid(T_REG, M(&s_reg), "grid");
  s_grid[2] = 0;
  expect_invalid(T_REG, M(&s_reg), "grid");
  s_grid[2] = 6;
  s_reg.n_grid = 2; /* 4*5 = 20 */
  s_reg.n_elements = 20;
  expect_invalid(T_REG, M(&s_reg), "grid");
  s_reg.n_grid = 4;
  expect_invalid(T_REG, M(&s_reg), "grid");
  s_reg.n_grid = 3;
  s_reg.n_elements = 120;
  expect_valid(T_REG, M(&s_reg));
  s_grid[0] = 120, s_grid[1] = 1, s_grid[2] = 1;
  expect_valid(T_REG, M(&s_reg));
}

static void test_register_compact_params(void **state) {
  s_cp.cv = -0.1;
  expect_invalid(T_REG, M(&s_reg), "cv");
  s_cp.cv = NAN;
  expect_invalid(T_REG, M(&s_reg), "cv");
  s_cp.cv = INFINITY;
  expect_invalid(T_REG, M(&s_reg), "cv");
  s_cp.cv = 100.5;
  expect_invalid(T_REG, M(&s_reg), "cv");
  s_cp.cv = 0;
  expect_valid(T_REG, M(&s_reg));
  s_cp.cv = 0.1;
  s_cp.epsilon = -1;
  expect_invalid(T_REG, M(&s_reg), "epsilon");
  s_cp.epsilon = NAN;
  expect_invalid(T_REG, M(&s_reg), "epsilon");
  s_cp.epsilon = 0.01;
  s_cp.mode = (La__CompactMode)4;
  expect_invalid(T_REG, M(&s_reg), "mode");
  s_cp.mode = (La__CompactMode)-1;
  expect_invalid(T_REG, M(&s_reg), "mode");
  s_cp.mode = LA__COMPACT_MODE__COMPACT_DEFAULT;
  expect_valid(T_REG, M(&s_reg));
  /* an unset cv is not checked */
  s_cp.has_cv = 0;
  s_cp.cv = -5;
  s_cp.has_epsilon = 0;
  s_cp.epsilon = NAN;
  char why[128];
  assert_int_equal(la_msg_validate(T_REG, M(&s_reg), why, sizeof why), 0);
}

static void test_register_other_fields(void **state) {
  s_reg.pid = 0;
  expect_invalid(T_REG, M(&s_reg), "pid");
  s_reg.pid = -5;
  expect_invalid(T_REG, M(&s_reg), "pid");
  s_reg.pid = 1;
  s_reg.shm_id = -1;
  expect_invalid(T_REG, M(&s_reg), "shm_id");
  s_reg.shm_id = 0;
  s_reg.sem_id = -1;
  expect_invalid(T_REG, M(&s_reg), "sem_id");
  s_reg.sem_id = 0;
  s_reg.metric = "";
  expect_invalid(T_REG, M(&s_reg), "metric");
  s_reg.metric = "time";
  s_reg.unit = repeat('u', 33);
  expect_invalid(T_REG, M(&s_reg), "unit");
  s_reg.unit = "";
  expect_valid(T_REG, M(&s_reg));
  s_reg.period = 0;
  expect_invalid(T_REG, M(&s_reg), "period");
  s_reg.has_period = 0; /* absent period of 0 is fine */
  expect_valid(T_REG, M(&s_reg));
  s_reg.host = "bad host";
  expect_invalid(T_REG, M(&s_reg), "host");
  s_reg.host = "";
  expect_valid(T_REG, M(&s_reg));
}

static void test_trace_validation(void **state) {
  La__CompactTrace *t = &s_ct[0];
  s_stats[0].count = t->n_elements - 1;
  expect_invalid(T_CT, M(t), "stats.count");
  s_stats[0].count = t->n_elements + 1;
  expect_invalid(T_CT, M(t), "stats.count");
  s_stats[0].count = t->n_elements;
  expect_valid(T_CT, M(t));
  t->n_elements = 0;
  s_stats[0].count = 0;
  expect_invalid(T_CT, M(t), "n_elements");
  t->n_elements = s_stats[0].count = (1ULL << 32) + 1;
  expect_invalid(T_CT, M(t), "n_elements");
  t->n_elements = s_stats[0].count = 5;
  t->mode = LA__COMPACT_MODE__COMPACT_DEFAULT; /* not a real encoding */
  expect_invalid(T_CT, M(t), "mode");
  t->mode = (La__CompactMode)9;
  expect_invalid(T_CT, M(t), "mode");
  t->mode = LA__COMPACT_MODE__COMPACT_MAXERR;
  t->segments.len = 0;
  expect_invalid(T_CT, M(t), "segments");
  t->segments.len = 1;
  t->app_id = "";
  expect_invalid(T_CT, M(t), "app_id");
  t->app_id = repeat('q', LA_MAX_ID_LEN + 1);
  expect_invalid(T_CT, M(t), "app_id");
  t->app_id = "x";
  expect_valid(T_CT, M(t));
}

static void test_trace_set_validation(void **state) {
  s_ct[3].rank = 4; /* nprocs is 4 */
  expect_invalid(T_TS, M(&s_ts), "rank 4");
  s_ct[3].rank = 3;
  s_missing[0] = 4;
  expect_invalid(T_TS, M(&s_ts), "missing rank");
  s_missing[0] = 2;
  expect_valid(T_TS, M(&s_ts));
  s_ts.nprocs = 0;
  expect_invalid(T_TS, M(&s_ts), "nprocs");
  s_ts.nprocs = LA_MAX_RANKS + 1;
  expect_invalid(T_TS, M(&s_ts), "nprocs");
  s_ts.nprocs = 2; /* 3 traces */
  expect_invalid(T_TS, M(&s_ts), "nprocs");
  s_ts.nprocs = 4;
  s_stats[2].count = 3; /* one nested trace inconsistent */
  expect_invalid(T_TS, M(&s_ts), "stats.count");
  s_stats[2].count = s_ct[2].n_elements;
  s_ct[1].mode = (La__CompactMode)0;
  expect_invalid(T_TS, M(&s_ts), "mode");
  s_ct[1].mode = LA__COMPACT_MODE__COMPACT_POLYLINE;
  s_ts.app_id = "has space";
  expect_invalid(T_TS, M(&s_ts), "app_id");
  s_ts.app_id = "job-77";
  /* an empty, incomplete set (every rank missing) is valid */
  static uint32_t all[4] = {0, 1, 2, 3};
  s_ts.n_traces = 0;
  s_ts.missing_ranks = all;
  s_ts.n_missing_ranks = 4;
  expect_valid(T_TS, M(&s_ts));
}

/* Robust weights and interference figures (docs/fidelity.md): accepted and
 * carried when consistent; each inconsistency refused, naming the field. */
static void test_trace_robust_validation(void **state) {
  La__CompactTrace *t = &s_ct[0];
  La__SeriesStats rst = LA__SERIES_STATS__INIT;
  uint8_t rseg[24];
  for (size_t i = 0; i < sizeof rseg; i++) rseg[i] = (uint8_t)(i * 3);
  t->has_robust_segments = 1;
  t->robust_segments.data = rseg;
  t->robust_segments.len = sizeof rseg;
  rst.count = t->n_elements;
  rst.sum = 1000.5;
  rst.min = 0.25;
  rst.max = 90;
  t->robust_stats = &rst;
  t->has_interference = 1;
  t->interference = 234;
  t->has_flagged = 1;
  t->flagged = t->n_elements;
  t->has_flagged_time = 1;
  t->flagged_time = 500.5;
  expect_valid(T_CT, M(t));
  ProtobufCMessage *out = roundtrip(T_CT, M(t));
  La__CompactTrace *o = (La__CompactTrace *)out;
  assert_true(o->has_robust_segments);
  assert_int_equal(o->robust_segments.len, sizeof rseg);
  assert_memory_equal(o->robust_segments.data, rseg, sizeof rseg);
  assert_non_null(o->robust_stats);
  assert_true(o->robust_stats->sum == 1000.5 && o->robust_stats->max == 90);
  assert_true(o->interference == 234 && o->flagged == t->n_elements &&
              o->flagged_time == 500.5);
  la_msg_free(out);

  rst.count = t->n_elements - 1;
  expect_invalid(T_CT, M(t), "robust_stats.count");
  rst.count = t->n_elements;
  t->robust_stats = NULL; /* segments without statistics */
  expect_invalid(T_CT, M(t), "robust_stats");
  t->robust_stats = &rst;
  t->has_robust_segments = 0; /* statistics without segments */
  t->robust_segments.data = NULL;
  t->robust_segments.len = 0;
  expect_invalid(T_CT, M(t), "robust_segments");
  t->has_robust_segments = 1;
  expect_invalid(T_CT, M(t), "robust_segments empty");
  t->robust_segments.data = rseg;
  t->robust_segments.len = sizeof rseg;
  t->interference = -1;
  expect_invalid(T_CT, M(t), "interference");
  t->interference = NAN;
  expect_invalid(T_CT, M(t), "interference");
  t->interference = INFINITY;
  expect_invalid(T_CT, M(t), "interference");
  t->interference = 0;
  t->flagged = t->n_elements + 1;
  expect_invalid(T_CT, M(t), "flagged");
  t->flagged = 0;
  t->flagged_time = -0.5;
  expect_invalid(T_CT, M(t), "flagged_time");
  t->flagged_time = NAN;
  expect_invalid(T_CT, M(t), "flagged_time");
  t->flagged_time = 0;
  expect_valid(T_CT, M(t));
  /* the interference figures alone (no robust weights) are fine */
  t->has_robust_segments = 0;
  t->robust_segments.data = NULL;
  t->robust_segments.len = 0;
  t->robust_stats = NULL;
  expect_valid(T_CT, M(t));
  /* and so is a nested trace of a set: the same checks apply there */
  s_ct[1].has_flagged = 1;
  s_ct[1].flagged = s_ct[1].n_elements + 5;
  expect_invalid(T_TS, M(&s_ts), "flagged");
  s_ct[1].flagged = 1;
  expect_valid(T_TS, M(&s_ts));
}

/* A reconstructed member (docs/clusters.md): rep_rank and rep_scale
 * together, rep_class only with them, a finite scale; carried through. */
static void test_trace_rep_validation(void **state) {
  La__CompactTrace *t = &s_ct[0];
  t->has_rep_rank = t->has_rep_scale = t->has_rep_class = 1;
  t->rep_rank = 7;
  t->rep_scale = 1.25;
  t->rep_class = 2;
  expect_valid(T_CT, M(t));
  ProtobufCMessage *out = roundtrip(T_CT, M(t));
  La__CompactTrace *o = (La__CompactTrace *)out;
  assert_true(o->has_rep_rank && o->rep_rank == 7 && o->rep_scale == 1.25 &&
              o->has_rep_class && o->rep_class == 2);
  la_msg_free(out);
  t->has_rep_scale = 0;
  expect_invalid(T_CT, M(t), "rep_rank and rep_scale");
  t->has_rep_scale = 1;
  t->has_rep_rank = 0;
  expect_invalid(T_CT, M(t), "rep_rank and rep_scale");
  t->has_rep_scale = 0; /* a class alone */
  expect_invalid(T_CT, M(t), "rep_rank and rep_scale");
  t->has_rep_rank = t->has_rep_scale = 1;
  t->rep_scale = NAN;
  expect_invalid(T_CT, M(t), "rep_scale");
  t->rep_scale = INFINITY;
  expect_invalid(T_CT, M(t), "rep_scale");
  t->has_rep_rank = t->has_rep_scale = t->has_rep_class = 0;
  expect_valid(T_CT, M(t));
}

/* TraceSet timer_res_ns and detection: empty, or one per rank. */
static void test_trace_set_fidelity_validation(void **state) {
  double res[5] = {20, 0, 41.5, 1, 2};
  char *det[5] = {"on", "", "off (no perf events)", "on", "on"};
  s_ts.timer_res_ns = res;
  s_ts.n_timer_res_ns = 4;
  s_ts.detection = det;
  s_ts.n_detection = 4;
  expect_valid(T_TS, M(&s_ts));
  ProtobufCMessage *out = roundtrip(T_TS, M(&s_ts));
  La__TraceSet *o = (La__TraceSet *)out;
  assert_int_equal(o->n_timer_res_ns, 4);
  assert_true(o->timer_res_ns[2] == 41.5);
  assert_int_equal(o->n_detection, 4);
  assert_string_equal(o->detection[2], "off (no perf events)");
  la_msg_free(out);
  s_ts.n_timer_res_ns = 3;
  expect_invalid(T_TS, M(&s_ts), "timer_res_ns");
  s_ts.n_timer_res_ns = 5;
  expect_invalid(T_TS, M(&s_ts), "timer_res_ns");
  s_ts.n_timer_res_ns = 4;
  res[1] = -1;
  expect_invalid(T_TS, M(&s_ts), "timer_res_ns");
  res[1] = NAN;
  expect_invalid(T_TS, M(&s_ts), "timer_res_ns");
  res[1] = 0;
  s_ts.n_detection = 2;
  expect_invalid(T_TS, M(&s_ts), "detection");
  s_ts.n_detection = 4;
  det[3] = repeat('x', 300);
  expect_invalid(T_TS, M(&s_ts), "detection");
  det[3] = "on";
  s_ts.n_timer_res_ns = 0; /* each list may be empty on its own */
  expect_valid(T_TS, M(&s_ts));
  s_ts.n_detection = 0;
  s_ts.detection = NULL;
  s_ts.timer_res_ns = NULL;
  expect_valid(T_TS, M(&s_ts));
}

/* A set of 2*10^5 ranks, half present and half missing, validates in one
 * merge walk: accepted when consistent; a rank both present and missing is
 * found wherever it is; missing_ranks out of order or repeated is refused
 * (the walk needs both lists increasing). */
static void test_trace_set_validation_many_ranks(void **state) {
  enum { NR = 200000, H = NR / 2 };
  static La__CompactTrace ct[H];
  static La__CompactTrace *ptr[H];
  static uint32_t miss[H];
  static uint8_t seg[4] = {1, 2, 3, 4};
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  st.count = 10;
  for (uint32_t i = 0; i < H; i++) {
    la__compact_trace__init(&ct[i]);
    ct[i].app_id = "big";
    ct[i].rank = 2 * i; /* even ranks present */
    ct[i].cycle_tag = 9;
    ct[i].n_elements = 10;
    ct[i].mode = LA__COMPACT_MODE__COMPACT_POLYLINE;
    ct[i].segments.data = seg;
    ct[i].segments.len = sizeof seg;
    ct[i].stats = &st;
    ptr[i] = &ct[i];
    miss[i] = 2 * i + 1; /* odd ranks missing */
  }
  La__TraceSet ts = LA__TRACE_SET__INIT;
  ts.app_id = "big";
  ts.cycle_tag = 9;
  ts.nprocs = NR;
  ts.traces = ptr;
  ts.n_traces = H;
  ts.missing_ranks = miss;
  ts.n_missing_ranks = H;
  char why[200] = "";
  assert_int_equal(la_msg_validate(T_TS, &ts.base, why, sizeof why), 0);
  /* the last missing rank is also present */
  miss[H - 1] = 2 * (H - 1);
  expect_refused(T_TS, &ts.base, "both present and missing");
  miss[H - 1] = 2 * (H - 1) + 1;
  /* the first one */
  miss[0] = 0;
  expect_refused(T_TS, &ts.base, "both present and missing");
  miss[0] = 1;
  /* two missing ranks swapped */
  miss[500] = 1003;
  miss[501] = 1001;
  expect_refused(T_TS, &ts.base, "increasing");
  /* a missing rank listed twice */
  miss[500] = 1001;
  miss[501] = 1001;
  expect_refused(T_TS, &ts.base, NULL);
  miss[501] = 1003;
  assert_int_equal(la_msg_validate(T_TS, &ts.base, why, sizeof why), 0);
}

/* The typed listings of a QueryReply (AppList, CycleList) travel intact,
 * and the codec refuses what a client must not use: a bad id, oversized
 * strings or counts, an unknown cycle state, entries out of order, two
 * kinds of answer in one reply, a positive status. */
static void test_query_reply_lists(void **state) {
  La__AppInfo ai[2] = {LA__APP_INFO__INIT, LA__APP_INFO__INIT};
  La__AppInfo *aip[2] = {&ai[0], &ai[1]};
  La__AppList al = LA__APP_LIST__INIT;
  ai[0].app_id = "job-1";
  ai[0].app_name = "wave toy"; /* names may hold spaces */
  ai[0].has_nprocs = ai[0].has_elements = ai[0].has_sets_partial = 1;
  ai[0].nprocs = 4;
  ai[0].elements = 1000;
  ai[0].sets_partial = 2;
  ai[0].metric = "time";
  ai[0].unit = "ns";
  ai[1].app_id = "job-2";
  al.n_apps = 2;
  al.apps = aip;
  La__QueryReply r = LA__QUERY_REPLY__INIT;
  r.has_feed_protocol = 1;
  r.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  r.apps = &al;
  expect_valid(T_QR, M(&r));
  ProtobufCMessage *out = roundtrip(T_QR, M(&r));
  const La__QueryReply *g = (const void *)out;
  assert_non_null(g->apps);
  assert_int_equal(g->apps->n_apps, 2);
  assert_string_equal(g->apps->apps[0]->app_name, "wave toy");
  assert_int_equal(g->apps->apps[0]->nprocs, 4);
  assert_int_equal(g->apps->apps[0]->elements, 1000);
  assert_int_equal(g->apps->apps[0]->sets_partial, 2);
  assert_string_equal(g->apps->apps[1]->app_id, "job-2");
  la_msg_free(out);

  ai[1].app_id = "job-0";
  expect_invalid(T_QR, M(&r), "order");
  ai[1].app_id = "job 2";
  expect_invalid(T_QR, M(&r), "application id");
  ai[1].app_id = "job-2";
  ai[1].unit = repeat('u', 33);
  expect_invalid(T_QR, M(&r), "unit");
  ai[1].unit = NULL;
  ai[1].has_nprocs = 1;
  ai[1].nprocs = LA_MAX_RANKS + 1;
  expect_invalid(T_QR, M(&r), "rank counts");
  ai[1].nprocs = 0;
  r.n_sets = 1;
  r.sets = s_qr_sets;
  expect_invalid(T_QR, M(&r), "kind");
  r.n_sets = 0;
  r.status = 1;
  expect_invalid(T_QR, M(&r), "status");
  r.status = 0;

  La__CycleInfo ci[2] = {LA__CYCLE_INFO__INIT, LA__CYCLE_INFO__INIT};
  La__CycleInfo *cip[2] = {&ci[0], &ci[1]};
  La__CycleList cl = LA__CYCLE_LIST__INIT;
  ci[0].cycle_tag = 7;
  ci[0].state = LA__CYCLE_STATE__CYCLE_PARTIAL;
  ci[0].ranks_present = 3;
  ci[0].ranks_missing = 1;
  ci[0].reasons = "timeout (1)";
  ci[1].cycle_tag = 8;
  ci[1].state = LA__CYCLE_STATE__CYCLE_OPEN;
  cl.n_cycles = 2;
  cl.cycles = cip;
  r.apps = NULL;
  r.cycles = &cl;
  expect_valid(T_QR, M(&r));
  out = roundtrip(T_QR, M(&r));
  g = (const void *)out;
  assert_non_null(g->cycles);
  assert_int_equal(g->cycles->n_cycles, 2);
  assert_int_equal(g->cycles->cycles[0]->state, LA__CYCLE_STATE__CYCLE_PARTIAL);
  assert_int_equal(g->cycles->cycles[0]->ranks_missing, 1);
  assert_string_equal(g->cycles->cycles[0]->reasons, "timeout (1)");
  assert_null(g->cycles->cycles[1]->reasons);
  la_msg_free(out);

  ci[1].state = (La__CycleState)3;
  expect_invalid(T_QR, M(&r), "state");
  ci[1].state = LA__CYCLE_STATE__CYCLE_COMPLETE;
  ci[1].cycle_tag = 7;
  expect_invalid(T_QR, M(&r), "order");
  ci[1].cycle_tag = 8;
  ci[1].reasons = repeat('r', LA_MAX_REASONS_LEN + 1);
  expect_invalid(T_QR, M(&r), "reasons");
  ci[1].reasons = NULL;
  ci[1].ranks_present = LA_MAX_RANKS + 1;
  expect_invalid(T_QR, M(&r), "rank counts");
  ci[1].ranks_present = 0;
  expect_valid(T_QR, M(&r));
}

static void test_other_validation(void **state) {
  s_dr.buffer = 16;
  expect_invalid(T_DR, M(&s_dr), "buffer");
  s_dr.buffer = UINT32_MAX;
  expect_invalid(T_DR, M(&s_dr), "buffer");

  s_hello.host = "";
  expect_invalid(T_HELLO, M(&s_hello), "host");
  s_hello.host = "a b";
  expect_invalid(T_HELLO, M(&s_hello), "host");
  s_hello.host = "node07";
  s_hello.instance = "0123456789abcdef0123456789abcdef";
  expect_valid(T_HELLO, M(&s_hello));
  s_hello.instance = "0123456789ABCDEF0123456789abcdef"; /* upper case */
  expect_invalid(T_HELLO, M(&s_hello), "instance");
  s_hello.instance = "0123456789abcdef"; /* short */
  expect_invalid(T_HELLO, M(&s_hello), "instance");
  s_hello.instance = NULL; /* an older LocalAgent: none */
  expect_valid(T_HELLO, M(&s_hello));

  s_chal.nonce.len = 15;
  expect_invalid(T_CHAL, M(&s_chal), "nonce");
  s_chal.nonce.len = 16;
  expect_valid(T_CHAL, M(&s_chal));
  static uint8_t big[65];
  s_chal.nonce.data = big;
  s_chal.nonce.len = 65;
  expect_invalid(T_CHAL, M(&s_chal), "nonce");
  s_auth.mac.len = 8;
  expect_invalid(T_AUTH, M(&s_auth), "mac");

  s_rs.rank = 2;
  expect_invalid(T_RS, M(&s_rs), "rank");
  s_rs.rank = 0;
  s_rs.nprocs = 0;
  expect_invalid(T_RS, M(&s_rs), "nprocs");
  s_rs.nprocs = 2;
  s_rs.n_elements = 0;
  expect_invalid(T_RS, M(&s_rs), "n_elements");
  s_rs.n_elements = 30;
  s_rs.metric = "";
  expect_invalid(T_RS, M(&s_rs), "metric");
  s_rs.metric = "time";
  s_rs.app_id = "";
  expect_invalid(T_RS, M(&s_rs), "app_id");
  s_rs.app_id = "x";
  s_rs_cp.has_cv = 1;
  s_rs_cp.cv = -1;
  expect_invalid(T_RS, M(&s_rs), "cv");

  s_re.app_id = "";
  expect_invalid(T_RE, M(&s_re), "app_id");
  s_re.app_id = "x";
  s_re.reason = repeat('r', 257);
  expect_invalid(T_RE, M(&s_re), "reason");

  s_sub.app_id = "a b";
  expect_invalid(T_SUB, M(&s_sub), "app_id");
  s_sub.app_id = "";
  expect_valid(T_SUB, M(&s_sub));

  /* sets in parts: a head names its set and 1..set_bytes parts, a part
   * carries bytes, a notice names its set and limit */
  s_head.app_id = "a b";
  expect_invalid(T_HEAD, M(&s_head), "app_id");
  s_head.app_id = "job-77";
  s_head.parts = 0;
  expect_invalid(T_HEAD, M(&s_head), "parts");
  s_head.parts = 4;
  s_head.set_bytes = 3;
  expect_invalid(T_HEAD, M(&s_head), "parts");
  s_head.set_bytes = 4;
  expect_valid(T_HEAD, M(&s_head));
  s_part.data.len = 0;
  expect_invalid(T_PART, M(&s_part), "empty part");
  s_part.data.len = 1;
  expect_valid(T_PART, M(&s_part));
  s_note.limit_name = "";
  expect_invalid(T_NOTE, M(&s_note), "limit_name");
  s_note.limit_name = "max_set_bytes";
  s_note.app_id = "";
  expect_invalid(T_NOTE, M(&s_note), "app_id");
  s_note.app_id = "x";
  expect_valid(T_NOTE, M(&s_note));
  /* RankRefused: an LA error code, a reason for the program */
  s_rref.code = 0;
  expect_invalid(T_RREF, M(&s_rref), "code");
  s_rref.code = LA__ERR_LAST;
  expect_invalid(T_RREF, M(&s_rref), "code");
  s_rref.code = LA_EREFUSED;
  s_rref.reason = "";
  expect_invalid(T_RREF, M(&s_rref), "reason");
  s_rref.reason = "no";
  s_rref.rank = LA_MAX_RANKS;
  expect_invalid(T_RREF, M(&s_rref), "rank");
  s_rref.rank = 0;
  s_rref.app_id = "";
  expect_invalid(T_RREF, M(&s_rref), "app_id");
  s_rref.app_id = "x";
  expect_valid(T_RREF, M(&s_rref));
  /* RankStart: an owner uid, any but 2^32-1 */
  reset_samples();
  s_rs.has_owner_uid = 1;
  s_rs.owner_uid = UINT32_MAX;
  expect_invalid(T_RS, M(&s_rs), "owner_uid");
  s_rs.owner_uid = 0;
  expect_valid(T_RS, M(&s_rs));
  s_rs.owner_uid = 40101;
  expect_valid(T_RS, M(&s_rs));
  s_rs.has_owner_uid = 0;

  s_q.what = "";
  expect_invalid(T_Q, M(&s_q), "query");

  s_srep.daemon = "";
  expect_invalid(T_SREP, M(&s_srep), "daemon");

  s_err.message = repeat('e', 1025);
  expect_invalid(T_ERR, M(&s_err), "message");
  s_err.message = repeat('e', 1024);
  expect_valid(T_ERR, M(&s_err));

  s_reply.message = repeat('m', 1025);
  expect_invalid(T_REPLY, M(&s_reply), "message");

  s_tm.reason = "";
  expect_invalid(T_TM, M(&s_tm), "reason");
  s_tm.reason = repeat('r', 257);
  expect_invalid(T_TM, M(&s_tm), "reason");
  s_tm.reason = "x";
  s_tm.app_id = "bad id";
  expect_invalid(T_TM, M(&s_tm), "app_id");
  s_tm.app_id = "slurm-123456.0";
  expect_valid(T_TM, M(&s_tm));
}

/* The application's numbering: ElementIds chunks (count, range, sign) and
 * the grid origin / global extent of RegisterRequest and RankStart. */
static void test_numbering_validation(void **state) {
  expect_valid(T_EID, M(&s_eid));
  s_eid_ids[1] = -1;
  expect_invalid(T_EID, M(&s_eid), "negative");
  s_eid_ids[1] = 0;
  s_eid.n_ids = 0;
  expect_invalid(T_EID, M(&s_eid), "ids in one message");
  s_eid.n_ids = 3;
  s_eid.first = (1ULL << 32) - 2;
  expect_invalid(T_EID, M(&s_eid), "outside");
  s_eid.first = 0;
  s_eid.has_n_elements = 1;
  s_eid.n_elements = 2;
  expect_invalid(T_EID, M(&s_eid), "outside");
  s_eid.n_elements = 3;
  expect_valid(T_EID, M(&s_eid));

  uint64_t org[3] = {4, 0, 0}, glob[3] = {6, 3, 5};
  s_rs.n_grid_origin = s_rs.n_grid_global = 3;
  s_rs.grid_origin = org;
  s_rs.grid_global = glob;
  expect_valid(T_RS, M(&s_rs)); /* 2x3x5 at x = 4 of 6 */
  org[0] = 5;
  expect_invalid(T_RS, M(&s_rs), "global extent");
  org[0] = 4;
  s_rs.n_grid_global = 0;
  expect_invalid(T_RS, M(&s_rs), "origin");
  s_rs.n_grid_global = 3;
  s_rs.has_n_element_ids = 1;
  s_rs.n_element_ids = 29;
  expect_invalid(T_RS, M(&s_rs), "element ids");
  s_rs.n_element_ids = 30;
  expect_valid(T_RS, M(&s_rs));
}

/* BUG, fixed (la_msg_validate, RegisterRequest): the grid check multiplied
 * three untrusted uint64 dimensions without overflow check. Grid
 * {2^63+1, 2, 1} "multiplies" to 2 modulo 2^64, so a RegisterRequest with
 * n_elements 2 and that grid passed validation; a receiver mapping (i,j,k)
 * to i + nx*(j + ny*k) then produces indices far beyond n_elements.
 * Expected: LA_EPROTO naming "grid". Was: 0 (accepted). */
static void bug_register_grid_product_overflow(void **state) {
  s_grid[0] = (1ULL << 63) + 1;
  s_grid[1] = 2;
  s_grid[2] = 1;
  s_reg.n_elements = 2;
  expect_invalid(T_REG, M(&s_reg), "grid");
  s_grid[0] = 1ULL << 32;
  s_grid[1] = (1ULL << 32) + 1;
  s_grid[2] = 1; /* 2^64 + 2^32 -> 2^32 mod 2^64 */
  s_reg.n_elements = 1ULL << 32;
  expect_invalid(T_REG, M(&s_reg), "grid");
}

/* BUG, fixed (la_msg_validate): there was no case for QueryReply, so the
 * TraceSets a QueryReply carries were never validated. A client
 * (lactl, libla_client) decoding a QueryReply gets sets with nprocs 0,
 * traces whose rank >= nprocs or whose stats.count differs from n_elements,
 * exactly what the TraceSet checks exist to stop. Expected: LA_EPROTO for
 * each; was: 0 (accepted). */
static void bug_query_reply_sets_not_validated(void **state) {
  s_ts.nprocs = 0;
  expect_invalid(T_QR, M(&s_qr), "nprocs");
  s_ts.nprocs = 4;
  s_ct[3].rank = 99;
  expect_invalid(T_QR, M(&s_qr), "rank");
  s_ct[3].rank = 3;
  s_stats[1].count = 12345;
  expect_invalid(T_QR, M(&s_qr), "stats.count");
}

/* BUG, fixed (la_msg_decode; root cause protobuf-c 1.4.1
 * parse_tag_and_wiretype): field number 0 is invalid protobuf, and
 * protobuf-c refuses it in its one-byte form (00) but not when the tag is
 * written in two bytes (80 00). Such a payload decoded as valid (the field
 * kept as an unknown field), and
 * re-packing the decoded message writes the tag as 00, which la_msg_decode
 * then refuses. A receiver that forwards a decoded message (a GlobalAgent
 * putting received CompactTraces into a TraceSet) thus emits frames every
 * subscriber rejects. Payload: DataReady{buffer 1, cycle_tag 1, seq 1} +
 * 80 00 00. Expected: LA_EPROTO (or the unknown field dropped, so that the
 * re-packed message decodes). Was: accepted, and its re-pack refused. */
static void bug_decode_accepts_field_number_zero(void **state) {
  const uint8_t p[] = {0x08, 0x01, 0x10, 0x01, 0x18, 0x01, 0x80, 0x00, 0x00};
  ProtobufCMessage *m = NULL;
  char why[256] = "";
  int rc = la_msg_decode(T_DR, p, sizeof p, &m, why, sizeof why);
  if (rc == LA_EPROTO) return; /* refused: fixed */
  assert_int_equal(rc, 0);
  size_t flen;
  uint8_t *f = pack_frame(T_DR, m, &flen);
  la_msg_free(m);
  m = NULL;
  rc = la_msg_decode(T_DR, f + HDR, flen - HDR, &m, why, sizeof why);
  la_msg_free(m);
  free(f);
  if (rc != 0)
    fail_msg("payload %s accepted, but its re-packed form is refused: %s",
             hex(p, sizeof p), why);
}

/* Runs la_msg_validate in a child; returns its return code, or 1000 +
 * signal number if it crashed. */
static int validate_in_child(uint16_t type, const ProtobufCMessage *m) {
  pid_t pid = la_test_fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char why[128];
    int rc = la_msg_validate(type, m, why, sizeof why);
    _exit(rc == LA_EPROTO ? 0 : rc == 0 ? 1 : 2);
  }
  int st = la_test_wait(pid);
  assert_true(st >= 0);
  return st;
}

/* BUG, fixed (la_msg_validate, CompactTrace and TraceSet checks): the
 * function is documented as "exposed for messages built in memory", but it
 * dereferenced required submessages without checking them: a CompactTrace
 * built without stats (t->stats == NULL, as LA__COMPACT_TRACE__INIT leaves
 * it) or a TraceSet with a NULL trace pointer crashed the caller (SIGSEGV)
 * instead of returning LA_EPROTO. Run in a child process so that a crash
 * fails only this test. */
static void bug_validate_crashes_on_missing_submessage(void **state) {
  s_ct[0].stats = NULL;
  int r1 = validate_in_child(T_CT, M(&s_ct[0]));
  s_ct[0].stats = &s_stats[0];
  s_ts_traces[1] = NULL;
  int r2 = validate_in_child(T_TS, M(&s_ts));
  if (r1 != 0 || r2 != 0)
    fail_msg("validate of a CompactTrace without stats: %s; of a TraceSet "
             "with a NULL trace: %s (0 = LA_EPROTO, 1 = accepted, 1000+n "
             "= killed by signal n)",
             r1 == 0 ? "LA_EPROTO" : r1 >= 1000 ? "crashed" : "not refused",
             r2 == 0 ? "LA_EPROTO" : r2 >= 1000 ? "crashed" : "not refused");
}

/* --------------------------------------------------------- frame reader */

typedef struct {
  uint8_t *bytes;
  size_t len;
  size_t off[3], flen[3];
  uint16_t type[3];
} stream_t;

/* RegisterRequest, an empty Finalize, and a TraceSet, back to back. */
static void make_stream(stream_t *s) {
  memset(s, 0, sizeof *s);
  La__Finalize fin = LA__FINALIZE__INIT;
  const ProtobufCMessage *m[3] = {M(&s_reg), M(&fin), M(&s_ts)};
  const uint16_t t[3] = {T_REG, T_FIN, T_TS};
  for (int i = 0; i < 3; i++) s->len += la_frame_size(m[i]);
  s->bytes = malloc(s->len);
  assert_non_null(s->bytes);
  size_t at = 0;
  for (int i = 0; i < 3; i++) {
    long n = la_frame_pack_into(t[i], m[i], s->bytes + at, s->len - at);
    assert_true(n > 0);
    s->off[i] = at;
    s->flen[i] = (size_t)n;
    s->type[i] = t[i];
    at += (size_t)n;
  }
  assert_int_equal(at, s->len);
  assert_int_equal(s->flen[1], HDR); /* empty Finalize: header only */
}

/* Takes every complete frame out of r, checking each against s. */
static void drain(la_frame_reader_t *r, const stream_t *s, int *seen) {
  uint16_t type;
  const uint8_t *p;
  uint32_t len;
  int rc;
  while ((rc = la_frame_reader_next(r, &type, &p, &len)) == 1) {
    assert_true(*seen < 6);
    int i = (*seen)++ % 3;
    assert_int_equal(type, s->type[i]);
    assert_int_equal(len, s->flen[i] - HDR);
    if (len) assert_memory_equal(p, s->bytes + s->off[i] + HDR, len);
    ProtobufCMessage *m = NULL;
    char why[256] = "";
    if (la_msg_decode(type, p, len, &m, why, sizeof why) != 0)
      fail_msg("frame %d from the reader does not decode: %s", i, why);
    la_msg_free(m);
  }
  assert_int_equal(rc, 0);
}

/* Feeds n bytes to r, which then holds `held` bytes; drains it, which must
 * bring the count of frames *seen to `want` and leave nothing pending. */
static void feed_drain_all(la_frame_reader_t *r, const stream_t *s,
                           const uint8_t *b, size_t n, size_t held, int *seen,
                           int want) {
  assert_int_equal(la_frame_reader_feed(r, b, n), 0);
  assert_int_equal(la_frame_reader_pending(r), held);
  drain(r, s, seen);
  assert_int_equal(*seen, want);
  assert_int_equal(la_frame_reader_pending(r), 0);
}

/* The next frame's result code, the frame itself not wanted. */
static int next_rc(la_frame_reader_t *r) {
  uint16_t t;
  const uint8_t *p;
  uint32_t len;
  return la_frame_reader_next(r, &t, &p, &len);
}

/* Feeds n bytes and, when the reader takes them, asks for the next frame:
 * the feed's error, or what la_frame_reader_next returns. */
static int feed_next(la_frame_reader_t *r, const void *b, size_t n) {
  int rc = la_frame_reader_feed(r, b, n);
  return rc == 0 ? next_rc(r) : rc;
}

static void test_reader_byte_by_byte(void **state) {
  stream_t s;
  make_stream(&s);
  la_frame_reader_t r;
  const uint32_t max = 1024;
  la_frame_reader_init(&r, max);
  int seen = 0;
  size_t consumed = 0;
  for (size_t i = 0; i < s.len; i++) {
    assert_int_equal(la_frame_reader_feed(&r, s.bytes + i, 1), 0);
    int before = seen;
    drain(&r, &s, &seen);
    if (seen > before) consumed = s.off[seen - 1] + s.flen[seen - 1];
    assert_int_equal(la_frame_reader_pending(&r), i + 1 - consumed);
    /* one frame at most is ever held */
    assert_true(r.cap <= max + HDR + 1);
  }
  assert_int_equal(seen, 3);
  assert_int_equal(la_frame_reader_pending(&r), 0);
  la_frame_reader_free(&r);
  free(s.bytes);
}

static void test_reader_several_frames_one_feed(void **state) {
  stream_t s;
  make_stream(&s);
  la_frame_reader_t r;
  la_frame_reader_init(&r, 4096);
  int seen = 0;
  feed_drain_all(&r, &s, s.bytes, s.len, s.len, &seen, 3);
  /* and again, twice in one feed, after the first round */
  uint8_t *two = malloc(2 * s.len);
  assert_non_null(two);
  memcpy(two, s.bytes, s.len);
  memcpy(two + s.len, s.bytes, s.len);
  seen = 0;
  feed_drain_all(&r, &s, two, 2 * s.len, 2 * s.len, &seen, 6);
  free(two);
  la_frame_reader_free(&r);
  free(s.bytes);
}

static void test_reader_split_everywhere(void **state) {
  stream_t s;
  make_stream(&s);
  for (size_t cut = 1; cut < s.len; cut++) {
    la_frame_reader_t r;
    la_frame_reader_init(&r, 4096);
    int seen = 0;
    assert_int_equal(la_frame_reader_feed(&r, s.bytes, cut), 0);
    drain(&r, &s, &seen);
    size_t done = seen ? s.off[seen - 1] + s.flen[seen - 1] : 0;
    assert_int_equal(la_frame_reader_pending(&r), cut - done);
    feed_drain_all(&r, &s, s.bytes + cut, s.len - cut, s.len - done, &seen, 3);
    la_frame_reader_free(&r);
  }
  free(s.bytes);
}

/* Reading in place (la_frame_reader_room, then la_frame_reader_wrote, as
 * la_conn reads its socket): the same frames as feeding copies, whatever
 * the pieces, and still one partial frame plus one piece held at most. */
static void test_reader_in_place(void **state) {
  stream_t s;
  make_stream(&s);
  const uint32_t max = 4096;
  static const size_t pieces[] = {1, 3, 7, 8, 9, 64, 65536};
  for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
    la_frame_reader_t r;
    la_frame_reader_init(&r, max);
    int seen = 0;
    for (int round = 0; round < 2; round++) { /* the stream twice */
      for (size_t at = 0; at < s.len;) {
        size_t n = s.len - at < pieces[k] ? s.len - at : pieces[k];
        uint8_t *p = NULL;
        size_t room = la_frame_reader_room(&r, pieces[k], &p);
        assert_true(room >= pieces[k]);
        assert_non_null(p);
        memcpy(p, s.bytes + at, n); /* a short read */
        assert_int_equal(la_frame_reader_wrote(&r, n), 0);
        at += n;
        drain(&r, &s, &seen);
        assert_true(r.cap <= 2 * (max + HDR + pieces[k]));
      }
      assert_int_equal(seen, 3 * (round + 1));
      assert_int_equal(la_frame_reader_pending(&r), 0);
    }
    la_frame_reader_free(&r);
  }
  /* an oversized header is refused once written in place, and stays so */
  const uint8_t h[8] = {0x40, 0, 0, 0, 0, T_REG, 0, 0};
  la_frame_reader_t r;
  la_frame_reader_init(&r, 64u << 10);
  uint8_t *p = NULL;
  assert_true(la_frame_reader_room(&r, sizeof h, &p) >= sizeof h);
  memcpy(p, h, sizeof h);
  assert_int_equal(la_frame_reader_wrote(&r, sizeof h), LA_EMSGSIZE);
  assert_int_equal(la_frame_reader_room(&r, 16, &p), 0);
  assert_int_equal(la_frame_reader_wrote(&r, 0), LA_EMSGSIZE);
  assert_int_equal(next_rc(&r), LA_EMSGSIZE);
  la_frame_reader_free(&r);
  free(s.bytes);
}

/* Handing the bytes over (la_frame_reader_give, as the GlobalAgent keeps
 * a LocalAgent's frames where they were read): the payloads taken before
 * stay as read at buf + (p - was) while the reader goes on (in pieces that
 * split frames); a read of half a read's worth or more hands the reader's
 * buffer itself over (the reader goes on in a new one holding the partial
 * frame and a read's room), a short one a copy (the reader keeps its
 * buffer). */
static void test_reader_give(void **state) {
  stream_t s;
  make_stream(&s);
  /* the stream repeated past 40 KB */
  const size_t reps = 40000 / s.len + 1, blen = reps * s.len;
  const int nf = (int)(3 * reps);
  uint8_t *big = malloc(blen);
  const uint8_t **kept = calloc((size_t)nf, sizeof *kept);
  uint8_t **given = calloc((size_t)nf, sizeof *given);
  assert_true(big && kept && given);
  for (size_t i = 0; i < reps; i++) memcpy(big + i * s.len, s.bytes, s.len);
  static const size_t pieces[] = {5, 100, 65536};
  for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
    la_frame_reader_t r;
    la_frame_reader_init(&r, 64u << 10);
    const uint8_t *was = NULL;
    assert_null(la_frame_reader_give(&r, &was)); /* no buffer yet */
    int n_given = 0, seen = 0, n_whole = 0;
    for (size_t at = 0; at < blen;) {
      size_t n = blen - at < pieces[k] ? blen - at : pieces[k];
      uint8_t *p = NULL;
      assert_true(la_frame_reader_room(&r, pieces[k], &p) >= pieces[k]);
      memcpy(p, big + at, n);
      assert_int_equal(la_frame_reader_wrote(&r, n), 0);
      at += n;
      uint16_t type;
      const uint8_t *pl;
      uint32_t len;
      int first = seen;
      while (la_frame_reader_next(&r, &type, &pl, &len) == 1) {
        assert_true(seen < nf);
        assert_int_equal(type, s.type[seen % 3]);
        assert_int_equal(len, s.flen[seen % 3] - HDR);
        kept[seen++] = pl;
      }
      if (seen == first) continue;
      size_t partial = la_frame_reader_pending(&r);
      uint8_t *old = r.buf;
      uint8_t *b = given[n_given++] = la_frame_reader_give(&r, &was);
      assert_non_null(b);
      assert_ptr_equal(was, old);
      for (int i = first; i < seen; i++) kept[i] = b + (kept[i] - was);
      assert_int_equal(r.error, 0);
      assert_int_equal(la_frame_reader_pending(&r), partial);
      if (b == old) { /* handed over: a new buffer with a read's room */
        n_whole++;
        assert_ptr_not_equal(r.buf, old);
        assert_int_equal(r.cap, partial + 65536);
      } else {
        assert_ptr_equal(r.buf, old);
      }
    }
    assert_int_equal(seen, nf);
    /* a 40 KB read is handed over whole, short ones are copied */
    assert_int_equal(n_whole, pieces[k] == 65536 ? 1 : 0);
    for (int i = 0; i < nf; i++) { /* every payload as read */
      size_t fl = s.flen[i % 3] - HDR;
      if (fl) assert_memory_equal(kept[i], s.bytes + s.off[i % 3] + HDR, fl);
    }
    for (int i = 0; i < n_given; i++) free(given[i]);
    la_frame_reader_free(&r);
  }
  free(given);
  free(kept);
  free(big);
  free(s.bytes);
}

static void test_reader_pending_and_partial(void **state) {
  size_t flen;
  uint8_t *f = pack_frame(T_TS, M(&s_ts), &flen);
  la_frame_reader_t r;
  la_frame_reader_init(&r, 4096);
  uint16_t t;
  const uint8_t *p;
  uint32_t len;
  assert_int_equal(la_frame_reader_pending(&r), 0);
  assert_int_equal(next_rc(&r), 0);
  assert_int_equal(la_frame_reader_feed(&r, f, 0), 0);
  assert_int_equal(la_frame_reader_pending(&r), 0);
  assert_int_equal(la_frame_reader_feed(&r, f, 5), 0);
  assert_int_equal(next_rc(&r), 0);
  assert_int_equal(la_frame_reader_pending(&r), 5);
  assert_int_equal(la_frame_reader_feed(&r, f + 5, 3), 0);
  assert_int_equal(next_rc(&r), 0);
  assert_int_equal(la_frame_reader_pending(&r), HDR);
  size_t half = (flen - HDR) / 2;
  assert_int_equal(la_frame_reader_feed(&r, f + HDR, half), 0);
  assert_int_equal(next_rc(&r), 0);
  assert_int_equal(la_frame_reader_pending(&r), HDR + half);
  assert_int_equal(la_frame_reader_feed(&r, f + HDR + half, flen - HDR - half),
                   0);
  assert_int_equal(la_frame_reader_pending(&r), flen);
  assert_int_equal(la_frame_reader_next(&r, &t, &p, &len), 1);
  assert_int_equal(t, T_TS);
  assert_int_equal(len, flen - HDR);
  assert_memory_equal(p, f + HDR, len);
  assert_int_equal(la_frame_reader_pending(&r), 0);
  assert_int_equal(next_rc(&r), 0);
  la_frame_reader_free(&r);
  free(f);
}

static void test_reader_oversized_header(void **state) {
  /* 1 GiB announced, 64 KiB allowed: refused once the 8 header bytes are
   * in, before any payload, with the buffer nowhere near 1 GiB. */
  const uint8_t h[8] = {0x40, 0, 0, 0, 0, T_REG, 0, 0};
  la_frame_reader_t r;
  la_frame_reader_init(&r, 64u << 10);
  for (int i = 0; i < 7; i++) {
    assert_int_equal(feed_next(&r, h + i, 1), 0);
  }
  int rc = la_frame_reader_feed(&r, h + 7, 1);
  assert_true(rc == 0 || rc == LA_EMSGSIZE);
  if (rc == 0) assert_int_equal(next_rc(&r), LA_EMSGSIZE);
  assert_true(r.cap <= 64u << 10);
  /* sticky: more bytes, even a good frame, are refused */
  static uint8_t chunk[65536];
  assert_int_equal(la_frame_reader_feed(&r, chunk, sizeof chunk),
                   LA_EMSGSIZE);
  assert_int_equal(next_rc(&r), LA_EMSGSIZE);
  size_t flen;
  uint8_t *f = pack_frame(T_ACK, M(&s_ack), &flen);
  assert_int_equal(la_frame_reader_feed(&r, f, flen), LA_EMSGSIZE);
  assert_int_equal(next_rc(&r), LA_EMSGSIZE);
  assert_true(r.cap <= 64u << 10);
  la_frame_reader_free(&r);

  /* the same header in one feed */
  la_frame_reader_init(&r, 64u << 10);
  rc = feed_next(&r, h, 8);
  assert_int_equal(rc, LA_EMSGSIZE);
  assert_true(r.cap < (64u << 10));
  la_frame_reader_free(&r);
  free(f);
}

static void test_reader_oversized_after_good_frame(void **state) {
  /* A good frame followed by a 1 GiB header in the same feed: the good
   * frame may be delivered, then the stream fails, and feeding the
   * announced payload does not grow the buffer. */
  size_t flen;
  uint8_t *f = pack_frame(T_ACK, M(&s_ack), &flen);
  uint8_t buf[64];
  memcpy(buf, f, flen);
  const uint8_t h[8] = {0x40, 0, 0, 0, 0, T_REG, 0, 0};
  memcpy(buf + flen, h, 8);
  la_frame_reader_t r;
  la_frame_reader_init(&r, 64u << 10);
  uint16_t t;
  const uint8_t *p;
  uint32_t len;
  int rc = la_frame_reader_feed(&r, buf, flen + 8);
  if (rc == 0) {
    rc = la_frame_reader_next(&r, &t, &p, &len);
    if (rc == 1) {
      assert_int_equal(t, T_ACK);
      rc = la_frame_reader_next(&r, &t, &p, &len);
    }
  }
  assert_int_equal(rc, LA_EMSGSIZE);
  size_t cap = r.cap;
  static uint8_t chunk[65536];
  for (int i = 0; i < 8; i++)
    assert_int_equal(la_frame_reader_feed(&r, chunk, sizeof chunk),
                     LA_EMSGSIZE);
  assert_int_equal(r.cap, cap);
  la_frame_reader_free(&r);
  free(f);
}

static void test_reader_bad_headers(void **state) {
  const uint8_t bad[][8] = {
    {0, 0, 0, 2, 0, T_ACK, 1, 0}, /* reserved byte 6 */
    {0, 0, 0, 2, 0, T_ACK, 0, 1}, /* reserved byte 7 */
    {0, 0, 0, 2, 0, 0, 0, 0},     /* MSG_NONE */
    {0, 0, 0, 2, 0, 99, 0, 0},    /* unknown */
    {0, 0, 0, 2, 0xff, 0xff, 0, 0},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    la_frame_reader_t r;
    la_frame_reader_init(&r, 1024);
    int rc = feed_next(&r, bad[i], 8);
    assert_int_equal(rc, LA_EPROTO);
    assert_int_equal(next_rc(&r), LA_EPROTO);
    assert_int_equal(la_frame_reader_feed(&r, "\x08\x01", 2), LA_EPROTO);
    la_frame_reader_free(&r);
  }
}

static void test_reader_exact_max(void **state) {
  const uint32_t max = 3000;
  uint8_t *f = malloc(HDR + max + 1);
  assert_non_null(f);
  memset(f, 0x11, HDR + max + 1);
  /* a Challenge frame of exactly max payload bytes (not decoded here) */
  const uint8_t h[8] = {0, 0, max >> 8, max & 0xff, 0, T_CHAL, 0, 0};
  memcpy(f, h, 8);
  la_frame_reader_t r;
  la_frame_reader_init(&r, max);
  uint16_t t;
  const uint8_t *p;
  uint32_t len;
  for (size_t at = 0; at < HDR + max; at += 100) {
    size_t n = HDR + max - at < 100 ? HDR + max - at : 100;
    assert_int_equal(la_frame_reader_feed(&r, f + at, n), 0);
  }
  assert_int_equal(la_frame_reader_next(&r, &t, &p, &len), 1);
  assert_int_equal(len, max);
  assert_int_equal(t, T_CHAL);
  assert_true(r.cap <= HDR + max + 100);
  la_frame_reader_free(&r);

  /* one more byte announced: refused */
  f[2] = (max + 1) >> 8;
  f[3] = (max + 1) & 0xff;
  la_frame_reader_init(&r, max);
  int rc = feed_next(&r, f, HDR);
  assert_int_equal(rc, LA_EMSGSIZE);
  la_frame_reader_free(&r);
  free(f);
}

static void test_reader_default_max(void **state) {
  la_frame_reader_t r;
  la_frame_reader_init(&r, 0); /* 0 = LA_FRAME_DEFAULT_MAX */
  uint32_t m = LA_FRAME_DEFAULT_MAX;
  uint8_t h[8] = {m >> 24, (m >> 16) & 0xff, (m >> 8) & 0xff, m & 0xff,
                  0, T_CT, 0, 0};
  assert_int_equal(feed_next(&r, h, 8), 0);
  /* the maximum is allowed, but nothing is allocated for it up front */
  assert_true(r.cap < (1u << 20));
  la_frame_reader_free(&r);
  m++;
  uint8_t h2[8] = {m >> 24, (m >> 16) & 0xff, (m >> 8) & 0xff, m & 0xff,
                   0, T_CT, 0, 0};
  la_frame_reader_init(&r, 0);
  int rc = feed_next(&r, h2, 8);
  assert_int_equal(rc, LA_EMSGSIZE);
  la_frame_reader_free(&r);
  /* free of a never-used reader, and double free, are harmless */
  la_frame_reader_init(&r, 10);
  la_frame_reader_free(&r);
  la_frame_reader_free(&r);
}

static void test_reader_large_frame_in_chunks(void **state) {
  static uint8_t big[200000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 31 + 7);
  s_ct[0].segments.data = big;
  s_ct[0].segments.len = sizeof big;
  size_t flen;
  uint8_t *f = pack_frame(T_CT, M(&s_ct[0]), &flen);
  const uint32_t max = 256u << 10;
  la_frame_reader_t r;
  la_frame_reader_init(&r, max);
  uint16_t t;
  const uint8_t *p;
  uint32_t len;
  int got = 0;
  for (size_t at = 0; at < flen; at += 4096) {
    size_t n = flen - at < 4096 ? flen - at : 4096;
    assert_int_equal(la_frame_reader_feed(&r, f + at, n), 0);
    int rc = la_frame_reader_next(&r, &t, &p, &len);
    if (at + n < flen) assert_int_equal(rc, 0);
    else {
      assert_int_equal(rc, 1);
      got = 1;
    }
    assert_true(r.cap <= max + HDR + 4096);
  }
  assert_true(got);
  ProtobufCMessage *m = NULL;
  char why[256];
  assert_int_equal(la_msg_decode(t, p, len, &m, why, sizeof why), 0);
  La__CompactTrace *ct = (void *)m;
  assert_int_equal(ct->segments.len, sizeof big);
  assert_memory_equal(ct->segments.data, big, sizeof big);
  la_msg_free(m);
  la_frame_reader_free(&r);
  free(f);
}

static void test_reader_garbage_stream(void **state) {
  /* random bytes: the reader either waits for more or fails with a
   * protocol/size error; its buffer stays bounded; it never crashes */
  rng_state = 42;
  static uint8_t chunk[777];
  for (int run = 0; run < 300; run++) {
    la_frame_reader_t r;
    la_frame_reader_init(&r, 2048);
    for (int k = 0; k < 20; k++) {
      size_t n = 1 + rng() % sizeof chunk;
      for (size_t i = 0; i < n; i++) chunk[i] = (uint8_t)rng();
      if (k == 0 && run % 2) { /* plausible header */
        chunk[0] = chunk[1] = 0;
        chunk[2] &= 0x07;
        chunk[4] = 0;
        chunk[5] = samples[rng() % N_TYPES].type;
        chunk[6] = chunk[7] = 0;
      }
      int rc = la_frame_reader_feed(&r, chunk, n);
      if (rc < 0) {
        assert_true(rc == LA_EPROTO || rc == LA_EMSGSIZE);
        break;
      }
      uint16_t t;
      const uint8_t *p;
      uint32_t len;
      while ((rc = la_frame_reader_next(&r, &t, &p, &len)) == 1) {
        assert_true(len <= 2048);
        assert_non_null(la_msg_descriptor(t));
        try_decode(t, p, len);
      }
      if (rc < 0) {
        assert_true(rc == LA_EPROTO || rc == LA_EMSGSIZE);
        break;
      }
      assert_true(r.cap <= 2048 + HDR + sizeof chunk);
    }
    la_frame_reader_free(&r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup(f, setup)
    T(test_msg_names_and_descriptors),
    T(test_frame_bytes_exact),
    T(test_header_parse_ok),
    T(test_header_parse_reserved_bytes),
    T(test_header_parse_unknown_type),
    T(test_header_parse_oversized),
    T(test_pack_into_too_small),
    T(test_pack_type_mismatch),
    T(test_roundtrip_every_type),
    T(test_roundtrip_register_request_nested),
    T(test_roundtrip_trace_set_nested),
    T(test_roundtrip_extreme_values),
    T(test_empty_payload_messages),
    T(test_why_truncated_safely),
    T(test_truncated_payloads),
    T(test_random_garbage),
    T(test_mutated_payloads),
    T(test_valid_samples_accepted),
    T(test_register_rank_nprocs),
    T(test_register_n_buffers),
    T(test_register_n_elements),
    T(test_register_app_id),
    T(test_register_protocol),
    T(test_register_grid),
    T(test_register_compact_params),
    T(test_register_other_fields),
    T(test_trace_validation),
    T(test_trace_set_validation),
    T(test_trace_robust_validation),
    T(test_trace_rep_validation),
    T(test_trace_set_fidelity_validation),
    T(test_trace_set_validation_many_ranks),
    T(test_query_reply_lists),
    T(test_other_validation),
    T(test_numbering_validation),
    T(bug_register_grid_product_overflow),
    T(bug_query_reply_sets_not_validated),
    T(bug_validate_crashes_on_missing_submessage),
    T(bug_decode_accepts_field_number_zero),
    T(test_reader_byte_by_byte),
    T(test_reader_several_frames_one_feed),
    T(test_reader_split_everywhere),
    T(test_reader_in_place),
    T(test_reader_give),
    T(test_reader_pending_and_partial),
    T(test_reader_oversized_header),
    T(test_reader_oversized_after_good_frame),
    T(test_reader_bad_headers),
    T(test_reader_exact_max),
    T(test_reader_default_max),
    T(test_reader_large_frame_in_chunks),
    T(test_reader_garbage_stream),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
