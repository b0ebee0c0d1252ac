/* SPDX-License-Identifier: BSD-3-Clause */
/* settings.c: the LocalAgent's key table (defaults, ranges, help). */
#include "settings.h"

#include <stddef.h>

#include "la_metrics_http.h"

#define S(sec, name, field, def, help) \
  {sec, name, LA_CFG_STR, offsetof(la_la_settings_t, field), \
   sizeof(((la_la_settings_t *)0)->field), def, 0, 0, help}
#define N(sec, name, type, field, def, lo, hi, help) \
  {sec, name, type, offsetof(la_la_settings_t, field), 0, def, lo, hi, help}

const la_cfg_key_t la_la_keys[] = {
  S("agent", "listen", listen, "127.0.0.1:7461",
    "address of the registration and data-ready services (port 0: any)"),
  S("agent", "port_file", port_file, "",
    "file to write the bound port into"),
  S("agent", "pid_file", pid_file, "", "file to write the daemon's pid into"),
  S("agent", "host", host, "", "node name sent to the GlobalAgent (default: hostname)"),
  N("agent", "max_connections", LA_CFG_INT, max_connections, "512", 1, 65536,
    "open connections of all kinds"),
  N("agent", "max_connections_per_uid", LA_CFG_INT, max_per_uid, "128", 1,
    65536, "connections of one user (peer uid) that are not registered "
    "applications: tools, status queries, handshakes"),
  N("agent", "max_output", LA_CFG_SIZE, max_output, "256k", 4096,
    1073741824.0, "bytes queued to one connection that does not read; "
    "beyond, it is closed"),
  N("agent", "handshake_max_frame", LA_CFG_SIZE, handshake_max_frame, "4k",
    256, 1 << 30, "largest frame accepted before a connection registered "
    "(and from tools)"),
  N("agent", "idle_timeout", LA_CFG_MS, idle_ms, "30s", 10, 86400000,
    "a tool connection that sends nothing for this long is closed"),
  N("agent", "max_apps", LA_CFG_INT, max_apps, "256", 1, 65536,
    "registered application processes"),
  N("agent", "max_apps_per_uid", LA_CFG_INT, max_apps_per_uid, "224", 1,
    65536,
    "registered application processes of one user: the rest of max_apps "
    "stays for others (at least one rank per core of one job)"),
  /* at least 40k: libla sends its ids in ElementIds chunks of up to
   * LA_ELEMENT_IDS_CHUNK ids of 9 bytes each (la_codec.h) */
  N("agent", "max_frame", LA_CFG_SIZE, max_frame, "64k", 40960, 1 << 30,
    "largest frame accepted from an application or tool (at least 40k: "
    "an application's ids arrive in chunks of up to 37 KiB)"),
  N("agent", "max_elements", LA_CFG_SIZE, max_elements, "64M", 1,
    4294967296.0, "largest element count of one registration"),
  N("agent", "max_ids_memory", LA_CFG_SIZE, max_ids_memory, "256M", 0,
    1099511627776.0, "bytes of applications' element ids held while they "
    "arrive (8 per element); a registration beyond is refused"),
  N("agent", "max_memory", LA_CFG_SIZE, max_memory, "16G", 0,
    1099511627776.0, "memory registrations may take at the agent, all "
    "users (an estimate per registration from its elements and channels); "
    "a registration beyond is refused"),
  N("agent", "max_memory_per_uid", LA_CFG_SIZE, max_memory_per_uid, "14G",
    0, 1099511627776.0, "of it, one user's (peer uid) registrations: the "
    "rest of max_memory stays for others"),
  N("agent", "handshake_timeout", LA_CFG_MS, handshake_ms, "5s", 10, 3600000,
    "a new connection must register or query within this"),
  N("agent", "threads", LA_CFG_INT, threads, "2", 1, 128,
    "compaction threads"),
  N("agent", "worker_nice", LA_CFG_INT, worker_nice, "10", 0, 19,
    "nice value of the compaction threads (their work preempts ranks)"),
  N("agent", "worker_idle", LA_CFG_BOOL, worker_idle, "no", 0, 1,
    "run the compaction threads in SCHED_IDLE (only on idle CPU time)"),
  S("agent", "max_backlog", max_backlog, "auto",
    "cycles of one rank held for compaction at most; a cycle beyond is "
    "taken coarsely or dropped (agent.behind), so the application never "
    "waits for the agent: auto (its buffers LA_BUFFERS - 3, at least 1), "
    "off (no limit: the application waits for a buffer) or 1..15"),
  S("agent", "behind", behind, "coarse",
    "a cycle beyond max_backlog: coarse (taken in blocks of cells summed "
    "as the buffer is zeroed, stored with exact totals and marked coarse) "
    "or drop (recorded missing)"),
  S("agent", "cpus", cpus, "",
    "CPU list the daemon is confined to, e.g. 3 or 0,2-3 (empty: all)"),
  N("agent", "drain_timeout", LA_CFG_MS, drain_ms, "5s", 0, 3600000,
    "on SIGTERM, longest wait for the GlobalAgent's acks before spooling"),
  S("compaction", "default", compact, "polyline:cv=0.1",
    "compaction when the application asks for none (docs/compaction.md)"),
  N("robust", "enable", LA_CFG_BOOL, robust, "yes", 0, 1,
    "robust per-element weights beside the measured values (time metric)"),
  N("robust", "tolerance", LA_CFG_DOUBLE, robust_tol, "0.25", 0, 10,
    "relative band around an element's estimate; above it a value is "
    "suspect"),
  N("robust", "confirm", LA_CFG_INT, robust_confirm, "3", 1, 254,
    "consecutive agreeing suspect cycles that make a real rise of cost "
    "where interference detection is off (on: an unflagged rise is "
    "believed at once)"),
  N("robust", "trust_unflagged", LA_CFG_BOOL, robust_trust, "yes", 0, 1,
    "with interference detection on, a rise the probe did not flag is "
    "believed at once; no: it waits robust.confirm cycles too"),
  N("robust", "cv", LA_CFG_DOUBLE, robust_cv, "0.02", 0, 10,
    "polyline bound of the robust weights' compaction, when tighter than "
    "the measured values' (balancers rank elements by them); 0: the same"),
  N("history", "memory", LA_CFG_SIZE, history_memory, "256M", 0,
    1099511627776.0, "decoded representatives kept to store near-identical "
    "cycles as references (8 bytes per element, twice with robust weights, "
    "per representative); a rank beyond goes without; 0: off"),
  N("history", "representatives", LA_CFG_INT, history_reps, "4", 1, 16,
    "representatives per rank (the least recently used gives way)"),
  S("global", "address", global, "127.0.0.1:7462",
    "GlobalAgent host:port, or several shards host:port,host:port (each "
    "application goes to one, docs/sharding.md); empty: keep traces in the "
    "spool"),
  S("global", "secret_file", secret_file, "",
    "shared secret for the GlobalAgent (mode 0600)"),
  S("global", "cipher", cipher, "auto",
    "ciphers offered to the GlobalAgent for the encrypted link: auto "
    "(AES-256-GCM where this CPU has it, and XChaCha20-Poly1305), "
    "aes256gcm or xchacha20 (that one only), or legacy (no offer: the "
    "handshake of agents before cipher negotiation, XChaCha20, for an "
    "older GlobalAgent)"),
  N("global", "reconnect_min", LA_CFG_MS, reconnect_min_ms, "100ms", 10,
    3600000, "first reconnection delay"),
  N("global", "reconnect_max", LA_CFG_MS, reconnect_max_ms, "5s", 10, 3600000,
    "longest reconnection delay (exponential backoff)"),
  N("global", "queue_bytes", LA_CFG_SIZE, queue_bytes, "256M", 0,
    1099511627776.0, "copies of unacknowledged messages kept in memory (the log has them all)"),
  S("global", "spool_dir", spool_dir, "/var/spool/la-localagent",
    "log directory for messages the GlobalAgent has not acknowledged"),
  N("global", "spool_bytes", LA_CFG_SIZE, spool_bytes, "4G", 0,
    1099511627776.0, "largest log size; beyond it traces are refused, "
    "counted and recorded missing"),
  N("global", "spool_fsync", LA_CFG_BOOL, spool_fsync, "yes", 0, 1,
    "fsync the log (every spool_fsync_interval) against node crashes"),
  N("global", "spool_fsync_interval", LA_CFG_MS, spool_fsync_ms, "1s", 0,
    3600000, "longest time an appended trace waits for fsync; 0: fsync "
    "every append"),
  LA_METRICS_CFG_KEYS(S, N),
  S("log", "target", log_target, "stderr", "stderr or syslog"),
  S("log", "level", log_level, "info", "error, warn, info or debug"),
  {0, 0, 0, 0, 0, 0, 0, 0, 0},
};
