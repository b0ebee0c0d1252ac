/* SPDX-License-Identifier: BSD-3-Clause */
/* settings.h: the GlobalAgent's configuration: one struct, one key table.
 * Every key has a default, an INI name and a --section.key=value option;
 * docs/globalagent.md lists them. */
#ifndef LA_GLOBALAGENT_SETTINGS_H
#define LA_GLOBALAGENT_SETTINGS_H

#include <stdint.h>

#include "la_config.h"

typedef struct la_ga_settings {
  /* [agents]: LocalAgent connections */
  char agent_listen[256];
  char agent_port_file[512];
  char secret_file[512];
  char cipher[16]; /* agents.cipher: auto, xchacha20, aes256gcm */
  int64_t max_agents;
  uint64_t agent_max_frame;
  int64_t handshake_ms;
  int64_t agent_max_handshakes_per_addr; /* unauthenticated, one address */
  uint64_t agent_handshake_max_frame;    /* frames before authentication */
  uint64_t agent_max_output;             /* bytes queued to one agent */
  uint64_t ingest_memory; /* frames read, not yet handled (all agents) */
  /* [feed]: subscribers, queries, status */
  char feed_listen[256];
  char feed_port_file[512];
  int64_t max_subscribers;
  uint64_t feed_max_frame;
  uint64_t sub_queue_bytes;
  uint64_t feed_part_bytes;           /* frames of a set sent in parts */
  int64_t feed_max_per_addr;          /* feed connections of one address */
  uint64_t feed_handshake_max_frame;  /* frames before a valid request */
  uint64_t feed_max_output;           /* bytes queued to one connection */
  int64_t feed_idle_ms;               /* non-subscribers: idle timeout */
  int64_t feed_query_jobs; /* stored sets loaded on the pool at once */
  uint64_t feed_memory;          /* held for all feed connections */
  uint64_t feed_memory_per_addr; /* of it, one address's */
  /* [stitch] */
  int64_t set_timeout_ms;
  int64_t max_open_sets;
  int64_t max_apps; /* applications stitched at once */
  int64_t closed_cache; /* closed keys remembered in memory (read at start) */
  uint64_t publish_memory; /* open sets' traces held for publishing */
  uint64_t max_open_memory; /* open sets' bookkeeping (bitmaps) at most */
  /* [store] */
  char db[512];
  char db_url[1024]; /* PostgreSQL, shared by shards ("" = SQLite at db) */
  int fsync;
  int64_t batch_max;
  int64_t gather_ms; /* a small batch waits this long for more (0: off) */
  /* [appid] (docs/security.md, "Application ids across nodes") */
  int require_owner;              /* a RankStart without owner_uid under
                                     a bound id is refused */
  int64_t refused_retention_ms;   /* refusals older are forgotten */
  int64_t refused_max_per_agent;  /* refusals kept per LocalAgent */
  int representatives;       /* store closed sets by representatives */
  double representatives_tol; /* their signature distance */
  /* [history] (docs/history.md) */
  int64_t history_full_cycles; /* recent cycles per rank kept in full */
  /* [daemon] */
  char pid_file[512];
  /* [metrics]: the HTTP endpoint (daemon/la_metrics_http.h) */
  char metrics_listen[256];     /* host:port ("" = off) */
  char metrics_port_file[512];  /* write the bound port here ("" = don't) */
  int64_t metrics_interval_ms;  /* snapshot period */
  int64_t metrics_max_conns;    /* HTTP connections open at most */
  int64_t metrics_max_apps;     /* applications labelled at most */
  /* [log] */
  char log_target[16];
  char log_level[16];
} la_ga_settings_t;

extern const la_cfg_key_t la_ga_keys[];

#endif
