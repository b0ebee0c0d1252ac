/* SPDX-License-Identifier: BSD-3-Clause */
/* settings.h: the LocalAgent's configuration: one struct, one key table.
 * Every key has a default, an INI name ([section] key) and a command-line
 * option (--section.key=value); docs/localagent.md lists them. */
#ifndef LA_LOCALAGENT_SETTINGS_H
#define LA_LOCALAGENT_SETTINGS_H

#include <stdint.h>

#include "la_config.h"

typedef struct la_la_settings {
  /* [agent] */
  char listen[256];        /* host:port of RegService/DXService; port 0 = any */
  char port_file[512];     /* write the bound port here ("" = don't) */
  char pid_file[512];
  char host[128];          /* node name reported upstream ("" = hostname) */
  int64_t max_connections; /* open connections, all kinds */
  int64_t max_per_uid;     /* unregistered connections of one peer uid */
  uint64_t max_output;     /* bytes queued to one connection */
  uint64_t handshake_max_frame; /* frames before registration */
  int64_t idle_ms;         /* tool connections: closed after this idle */
  int64_t max_apps;        /* registered application processes */
  int64_t max_apps_per_uid; /* of them, one peer uid's */
  uint64_t max_frame;      /* bytes of one frame from an application */
  uint64_t max_elements;   /* elements of one registration */
  uint64_t max_ids_memory; /* element ids held for registrations, bytes */
  uint64_t max_memory;     /* registrations' memory estimate, all users */
  uint64_t max_memory_per_uid; /* of it, one peer uid's */
  int64_t handshake_ms;    /* a connection must register or ask within this */
  int64_t threads;         /* compaction threads (pool.h) */
  int64_t worker_nice;     /* nice of the compaction threads */
  int worker_idle;         /* compaction threads in SCHED_IDLE */
  char max_backlog[16];    /* a rank's cycles held: auto, off, 1..15 */
  char behind[16];         /* a cycle beyond it: coarse or drop */
  char cpus[256];          /* CPU list the daemon is confined to ("" all) */
  int64_t drain_ms;        /* SIGTERM: longest wait for acks before exit */
  /* [compaction] */
  char compact[128];       /* default spec when the application sets none */
  /* [robust] */
  int robust;              /* robust weights for the time metric */
  double robust_tol;       /* relative band (robust.h tol) */
  int64_t robust_confirm;  /* suspect cycles that make a real rise */
  int robust_trust;        /* detection on: an unflagged rise at once */
  double robust_cv;        /* polyline cv of the robust weights, if tighter */
  /* [history] (docs/history.md) */
  uint64_t history_memory; /* decoded representatives, all ranks, bytes */
  int64_t history_reps;    /* representatives per rank */
  /* [global] */
  char global[256];        /* GlobalAgent host:port ("" = none, spool only) */
  char secret_file[512];
  char cipher[16]; /* global.cipher: auto, xchacha20, aes256gcm, legacy */
  int64_t reconnect_min_ms, reconnect_max_ms;
  uint64_t queue_bytes;    /* unacknowledged messages kept in memory */
  char spool_dir[512];
  uint64_t spool_bytes;
  int spool_fsync;
  int64_t spool_fsync_ms;  /* fsync interval of the log; 0 = every append */
  /* [metrics]: the HTTP endpoint (daemon/la_metrics_http.h) */
  char metrics_listen[256];     /* host:port ("" = off) */
  char metrics_port_file[512];  /* write the bound port here ("" = don't) */
  int64_t metrics_interval_ms;  /* snapshot period */
  int64_t metrics_max_conns;    /* HTTP connections open at most */
  /* [log] */
  char log_target[16];
  char log_level[16];
} la_la_settings_t;

extern const la_cfg_key_t la_la_keys[];

#endif
