/* SPDX-License-Identifier: BSD-3-Clause */
/* la_codec.h: framing, encoding, decoding and validation of LA messages.
 *
 * A frame is an 8-byte header followed by a protobuf payload:
 *   bytes 0-3  payload length, big-endian (excludes the header)
 *   bytes 4-5  message type (la.MsgType), big-endian
 *   bytes 6-7  zero (reserved; a non-zero value is refused)
 * The payload length is checked against the reader's maximum before any
 * allocation. Every decoded message is validated (required fields, ranges,
 * string lengths) before the caller sees it. This module is the only place in
 * the tree that frames or parses messages; it knows nothing of sockets or
 * event loops (see la_sockio.h for blocking I/O, and the daemons' sessions for
 * libuv I/O).
 */
#ifndef LA_CODEC_H
#define LA_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "la.pb-c.h"

/* Version of the application and LocalAgent <-> GlobalAgent conversations
 * (RegisterRequest.protocol, Hello.protocol). */
#define LA_PROTOCOL_VERSION 1u
/* Version of the feed's request/reply conversation (Query.feed_protocol,
 * QueryReply.feed_protocol): 2 answers listings typed (AppList, CycleList);
 * 1, which sent no version, answered them as text rows. Each side refuses
 * the other's version with LA_EVERSION, naming both. */
#define LA_FEED_PROTOCOL_VERSION 2u
/* Version of what a subscription receives (Subscribe.sets_version): 2 takes
 * Trace-Sets in parts (TraceSetHead, TraceSetPart) and SetNotice for a set
 * not delivered; 1, which sent no version, whole TraceSet frames only.
 * Independent of LA_FEED_PROTOCOL_VERSION, so queries of either kind of
 * client are answered as before. */
#define LA_FEED_SETS_VERSION 2u
/* Longest CycleInfo.reasons (bytes). */
#define LA_MAX_REASONS_LEN 511u
#define LA_FRAME_HEADER_LEN 8u
#define LA_FRAME_DEFAULT_MAX (64u << 20) /* bytes of payload */
#define LA_MAX_ID_LEN 128u               /* app ids, names, hosts */
/* A LocalAgent's instance id (Hello.instance): lowercase hex digits. */
#define LA_INSTANCE_LEN 32
#define LA_MAX_RANKS (1u << 24)
#define LA_MAX_CHANNELS_WIRE 16u      /* channel names per rank (la.h's) */
#define LA_MAX_CHANNEL_NAME_WIRE 32u  /* bytes of a channel name (la.h's) */
/* Element ids (ElementIds): most ids in one chunk from an application or
 * on the LocalAgent's link (fits the LocalAgent's default max_frame of
 * 64 KiB: 9 bytes per id at most), and most in one page of a QueryReply
 * (the codec's bound on any ElementIds). */
#define LA_ELEMENT_IDS_CHUNK 4096u
#define LA_ELEMENT_IDS_PAGE 65536u

/* Descriptor of the message a frame type carries, or NULL if unknown. */
const ProtobufCMessageDescriptor *la_msg_descriptor(uint16_t type);
/* Short name of a frame type ("RegisterRequest"), "unknown" if none. */
const char *la_msg_name(uint16_t type);

/* Parses a frame header. Returns 0, or LA_EPROTO (reserved bits, unknown
 * type) or LA_EMSGSIZE (payload longer than max_payload). */
int la_frame_header_parse(const uint8_t *hdr, uint32_t max_payload,
                          uint16_t *type, uint32_t *len);

/* Writes a frame header (LA_FRAME_HEADER_LEN bytes at hdr) for a payload
 * of len bytes of the given type; the reserved bytes are zero. */
void la_frame_header_put(uint8_t *hdr, uint16_t type, uint32_t len);

/* Bytes a framed message takes. */
size_t la_frame_size(const ProtobufCMessage *msg);

/* Encodes msg as a frame of the given type into buf (cap bytes). Returns the
 * frame length (> 0), or LA_EMSGSIZE if it does not fit, or LA_EINVAL when
 * type does not match msg's descriptor. */
long la_frame_pack_into(uint16_t type, const ProtobufCMessage *msg,
                        uint8_t *buf, size_t cap);

/* Same, into a new malloc'ed buffer the caller frees. Returns 0 or LA_ENOMEM,
 * LA_EINVAL. */
int la_frame_pack(uint16_t type, const ProtobufCMessage *msg, uint8_t **out,
                  size_t *out_len);

/* Decodes and validates a payload of the given type. On success *out is a
 * message to release with la_msg_free() and 0 is returned. On failure returns
 * LA_EPROTO and, if why is not NULL, writes the reason into why. */
int la_msg_decode(uint16_t type, const uint8_t *payload, size_t len,
                  ProtobufCMessage **out, char *why, size_t why_len);

/* The first half of la_msg_decode: the payload as a message of its type
 * (protobuf's own checks: required fields present, no field number 0),
 * without checking its ranges. For a receiver that answers a well-formed
 * message with bad values otherwise than a broken frame (a CompactTrace with
 * a usable key is refused and recorded, the link kept). Returns 0 or
 * LA_EPROTO with the reason. */
int la_msg_unpack(uint16_t type, const uint8_t *payload, size_t len,
                  ProtobufCMessage **out, char *why, size_t why_len);

/* Checks the ranges of a decoded message (done by la_msg_decode too; exposed
 * for messages built in memory). Returns 0 or LA_EPROTO with a reason. */
int la_msg_validate(uint16_t type, const ProtobufCMessage *msg, char *why,
                    size_t why_len);

/* 1 when a CompactTrace (unpacked, perhaps invalid) names its (app id,
 * rank, cycle tag) well enough to be recorded missing under that key. */
int la_msg_trace_key_ok(const La__CompactTrace *t);

void la_msg_free(ProtobufCMessage *msg);

/* Incremental reader for byte streams. Feed it what arrives; take complete
 * frames out. Provided the caller takes every complete frame after each feed
 * (la_frame_reader_next until it returns 0), the buffer never holds more
 * than one partial frame (header plus max_payload) plus one feed. */
typedef struct la_frame_reader {
  uint8_t *buf;
  size_t len;  /* bytes held */
  size_t cap;
  size_t head; /* start of unconsumed bytes */
  uint32_t max_payload;
  int error;   /* sticky error once the stream is bad */
} la_frame_reader_t;

void la_frame_reader_init(la_frame_reader_t *r, uint32_t max_payload);
void la_frame_reader_free(la_frame_reader_t *r);
/* Appends n bytes. Returns 0, LA_ENOMEM, or the sticky stream error. */
int la_frame_reader_feed(la_frame_reader_t *r, const void *data, size_t n);
/* The same as la_frame_reader_feed without the copy, for a reader that
 * reads into r's buffer: room makes space for at least n more bytes (the
 * bound above holds with n as the feed) and sets *p to it; returns its size
 * (n or more), or 0 when r is bad or out of memory (then la_frame_reader_wrote
 * returns the error). The space is valid until the next call on r; wrote
 * then appends the n bytes written there (no more than room's size) and
 * returns as la_frame_reader_feed does. */
size_t la_frame_reader_room(la_frame_reader_t *r, size_t n, uint8_t **p);
int la_frame_reader_wrote(la_frame_reader_t *r, size_t n);
/* Takes the next complete frame. Returns 1 and sets type/payload/len (valid
 * until the next feed or next call), 0 when more bytes are needed, or a
 * negative error (LA_EPROTO, LA_EMSGSIZE) after which the stream is unusable. */
int la_frame_reader_next(la_frame_reader_t *r, uint16_t *type,
                         const uint8_t **payload, uint32_t *len);
/* Bytes buffered but not yet returned as frames. */
size_t la_frame_reader_pending(const la_frame_reader_t *r);
/* Gives the caller the bytes la_frame_reader_next returned since the last
 * give or room, in a buffer the caller frees: r's own buffer when they
 * fill half of it or half a read's worth, 32 KiB (no copy; r goes on in a
 * new buffer holding the bytes not yet returned and room for a read), else
 * a copy of them (r keeps its buffer, so that short reads do not each
 * hold a read's room). *was is where they
 * were: a payload p returned is at buf + (p - *was). Returns NULL when r
 * has no buffer; when memory runs out, r's own buffer is given and r
 * becomes bad (LA_ENOMEM, the bytes not yet returned lost). */
uint8_t *la_frame_reader_give(la_frame_reader_t *r, const uint8_t **was);

#endif /* LA_CODEC_H */
