/* SPDX-License-Identifier: BSD-3-Clause */
/* uplink_link.h: one connection of the LocalAgent to one GlobalAgent (a
 * shard): connect, Hello and the handshake (mutual with a secret, then every
 * frame a record), frames written and read, failure and reconnection with
 * exponential backoff and jitter. Knows nothing of the queue or of routing:
 * uplink.c owns the links and is called back through
 * la_uplink_link_events_t when a link can take messages, acknowledged some,
 * or failed. Loop thread only. */
#ifndef LA_UPLINK_LINK_H
#define LA_UPLINK_LINK_H

#include <stdint.h>

#include "agent.h"
#include "la_auth.h"
#include "la_secure.h"
#include "la_sockio.h"

enum {
  LA_UP_NONE = 0, /* no GlobalAgent configured */
  LA_UP_BACKOFF,  /* waiting to reconnect */
  LA_UP_CONNECTING,
  LA_UP_HELLO, /* Hello sent, waiting for the Challenge */
  LA_UP_AUTH,  /* Auth sent, waiting for AuthResult */
  LA_UP_READY,
  LA_UP_STOPPED
};

/* Most unacknowledged bytes on one link's socket at a time. */
#define LA_UP_INFLIGHT_MAX (4u << 20)

typedef struct la_uplink_link la_uplink_link_t;

/* What a link tells its owner (all on the loop thread). ready: the link
 * can take messages (just authenticated, or a write completed); acked: the
 * GlobalAgent acknowledged every message up to seq sent on it; failed: the
 * link is down and will reconnect (was_ready: it had been connected, so
 * what was sent on it must go again). */
typedef struct {
  void (*ready)(la_uplink_link_t *l);
  void (*acked)(la_uplink_link_t *l, uint64_t seq);
  void (*failed)(la_uplink_link_t *l, int was_ready);
} la_uplink_link_events_t;

/* One connection to one GlobalAgent (shard). uplink.c reads state, failing,
 * inflight, connects, last_error, idx and addr_s; the rest is the link's. */
struct la_uplink_link {
  la_agent_t *ag;
  const la_uplink_link_events_t *ev;
  void *owner; /* the uplink it belongs to (ev's argument) */
  int idx;     /* its place in global.address */
  char addr_s[64];
  int failing; /* failed since it was last connected: routed around */
  int store_wait; /* the GlobalAgent said its store is unavailable: the
                     link backs off and is retried, not routed around */
  int store_fail; /* the failure in progress is such a one */
  int state;
  uv_tcp_t tcp;
  int tcp_open;
  uv_connect_t conn;
  uv_timer_t timer;
  struct sockaddr_storage addr;
  la_frame_reader_t rd;
  la_auth_key_t key;
  int have_key;                        /* mutual handshake, records */
  uint8_t anonce[LA_AUTH_NONCE_BYTES]; /* this connection's nonce */
  uint32_t offer[LA_CIPHER_OFFER_MAX]; /* its Hello's ciphers (n_offer) */
  size_t n_offer;                      /* 0: global.cipher = legacy */
  la_auth_session_t ses;
  la_secure_t sec;
  int64_t backoff_ms;
  uint64_t ready_ms; /* loop time the link became ready (last time) */
  uint64_t connects, epoch;
  size_t inflight;
  char last_error[256];
  int quiet_fail; /* the failure was logged already */
  uint64_t rng;   /* jitter generator state (xorshift64*), seeded per process */
};

/* Sets up l (zeroed by the caller, ag, ev, owner, idx, addr_s and addr
 * filled in) with a copy of key when have_key: its timer, backoff and
 * jitter seed. Does not connect. */
void la_uplink_link_init(la_uplink_link_t *l, const la_auth_key_t *key,
                         int have_key);

/* Starts connecting (numeric address); the handshake follows, with a 10 s
 * deadline. A failure goes through la_uplink_link_fail. */
void la_uplink_link_connect(la_uplink_link_t *l);

/* Writes one frame (sealed once the link is encrypted). Returns 0, or
 * LA_ENOMEM / LA_EIO after failing the link (the message counts as sent:
 * it goes again after the reconnect). */
int la_uplink_link_write(la_uplink_link_t *l, const uint8_t *bytes, size_t len);

/* Fails the link with a reason (kept as last_error, logged unless quiet):
 * it closes, tells its owner (failed) and reconnects after its backoff. */
void la_uplink_link_fail(la_uplink_link_t *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Stops the link for good and wipes its secrets; its handles are closed by
 * main.c's walk. */
void la_uplink_link_stop(la_uplink_link_t *l);

/* The name of the link's state ("backoff", "connected", ...). */
const char *la_uplink_link_state_name(const la_uplink_link_t *l);

#endif
