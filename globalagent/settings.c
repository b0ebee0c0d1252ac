/* SPDX-License-Identifier: BSD-3-Clause */
/* settings.c: the GlobalAgent's key table (defaults, ranges, help). */
#include "settings.h"

#include <stddef.h>

#include "la_metrics_http.h"

#define S(sec, name, field, def, help) \
  {sec, name, LA_CFG_STR, offsetof(la_ga_settings_t, field), \
   sizeof(((la_ga_settings_t *)0)->field), def, 0, 0, help}
#define N(sec, name, type, field, def, lo, hi, help) \
  {sec, name, type, offsetof(la_ga_settings_t, field), 0, def, lo, hi, help}

const la_cfg_key_t la_ga_keys[] = {
  S("agents", "listen", agent_listen, "127.0.0.1:7462",
    "address for LocalAgents (port 0: any); use the front end's cluster "
    "address in production"),
  S("agents", "port_file", agent_port_file, "", "file to write the port into"),
  S("agents", "secret_file", secret_file, "",
    "shared secret LocalAgents must prove (mode 0600); empty: accept any"),
  S("agents", "cipher", cipher, "auto",
    "cipher of the encrypted links, chosen from what each LocalAgent "
    "offers: auto (AES-256-GCM where both CPUs have it, else "
    "XChaCha20-Poly1305), aes256gcm or xchacha20 (only that one: a "
    "LocalAgent that does not offer it is refused)"),
  N("agents", "max_connections", LA_CFG_INT, max_agents, "1024", 1, 65536,
    "LocalAgent connections"),
  N("agents", "max_frame", LA_CFG_SIZE, agent_max_frame, "64M", 1024,
    1073741824.0, "largest frame from a LocalAgent"),
  N("agents", "handshake_timeout", LA_CFG_MS, handshake_ms, "5s", 10, 3600000,
    "a connection must authenticate (or a subscriber speak) within this"),
  N("agents", "max_handshakes_per_address", LA_CFG_INT,
    agent_max_handshakes_per_addr, "8", 1, 65536,
    "connections from one address not yet authenticated"),
  N("agents", "handshake_max_frame", LA_CFG_SIZE, agent_handshake_max_frame,
    "4k", 256, 1073741824.0, "largest frame before authentication"),
  N("agents", "max_output", LA_CFG_SIZE, agent_max_output, "1M", 4096,
    1073741824.0, "bytes queued to one LocalAgent that does not read; "
    "beyond, it is disconnected"),
  N("agents", "ingest_memory", LA_CFG_SIZE, ingest_memory, "64M", 65536,
    1099511627776.0, "bytes of frames read from LocalAgents and not yet "
    "handled (decrypted and checked on the thread pool); beyond, or beyond "
    "a quarter of it for one LocalAgent, connections are not read until "
    "it drains"),
  S("feed", "listen", feed_listen, "127.0.0.1:7463",
    "address for subscribers, queries and status (port 0: any)"),
  S("feed", "port_file", feed_port_file, "", "file to write the port into"),
  N("feed", "max_connections", LA_CFG_INT, max_subscribers, "256", 1, 65536,
    "subscriber and tool connections"),
  N("feed", "max_frame", LA_CFG_SIZE, feed_max_frame, "64k", 1024, 16777216.0,
    "largest frame from a subscriber"),
  N("feed", "queue_bytes", LA_CFG_SIZE, sub_queue_bytes, "64M", 0,
    1099511627776.0, "bytes queued to one subscriber before sets are dropped "
    "for it (counted and reported to it)"),
  N("feed", "part_bytes", LA_CFG_SIZE, feed_part_bytes, "1M", 4096,
    16777216.0, "largest frame of a Trace-Set sent in parts (to subscribers "
    "that take parts: libla_client); a set of any size streams in frames "
    "of this size"),
  N("feed", "max_connections_per_address", LA_CFG_INT, feed_max_per_addr,
    "64", 1, 65536, "feed connections from one address"),
  N("feed", "handshake_max_frame", LA_CFG_SIZE, feed_handshake_max_frame,
    "4k", 256, 16777216.0, "largest frame before a valid request"),
  N("feed", "max_output", LA_CFG_SIZE, feed_max_output, "16M", 4096,
    1099511627776.0, "bytes queued to a query or status connection that "
    "does not read (a subscriber's limit is queue_bytes); beyond, it gets "
    "an Error naming the limit and is closed"),
  N("feed", "idle_timeout", LA_CFG_MS, feed_idle_ms, "60s", 10, 86400000,
    "a query or status connection that sends nothing for this long is "
    "closed (live subscribers have no idle timeout)"),
  N("feed", "memory", LA_CFG_SIZE, feed_memory, "512M", 1048576,
    1099511627776.0, "bytes held for all feed connections together: frames "
    "queued to them and Trace-Sets queued in parts (a set shared by "
    "subscribers counted once); beyond, a set is refused (a query's "
    "LA_ELIMIT, a SetNotice) and a reply closes its connection with an "
    "Error; read at start"),
  N("feed", "memory_per_address", LA_CFG_SIZE, feed_memory_per_addr, "128M",
    65536, 1099511627776.0, "of feed.memory, what the connections of one "
    "address may hold for themselves alone (frames queued to them, query "
    "answers, a subscription's stored sets); read at start"),
  N("feed", "query_jobs", LA_CFG_INT, feed_query_jobs, "2", 1, 64,
    "stored Trace-Sets (queries, a subscription's stored sets) loaded and "
    "encoded on the thread pool at once, each with its own read connection "
    "to the store; more wait their turn; at most one less than the pool's "
    "threads (UV_THREADPOOL_SIZE, 4 by default); read at start"),
  N("stitch", "timeout", LA_CFG_MS, set_timeout_ms, "30s", 1, 86400000,
    "a Trace-Set still missing ranks after this closes as partial"),
  N("stitch", "max_open_sets", LA_CFG_INT, max_open_sets, "100000", 1,
    100000000, "open Trace-Sets kept; beyond, the oldest closes as partial"),
  N("stitch", "max_apps", LA_CFG_INT, max_apps, "10000", 1, 1000000,
    "applications stitched at once (ranks started, not all ended); the "
    "messages of one more are stored but not stitched, counted in "
    "apps_refused"),
  N("stitch", "closed_cache", LA_CFG_INT, closed_cache, "65536", 1, 16777216,
    "closed Trace-Set keys remembered in memory (older ones are looked up "
    "in the store); read at start"),
  N("stitch", "max_open_memory", LA_CFG_SIZE, max_open_memory, "256M", 4096,
    1099511627776.0, "memory of the open Trace-Sets' bookkeeping (a bit "
    "per rank each); beyond, the oldest closes as partial; read at start"),
  N("stitch", "publish_memory", LA_CFG_SIZE, publish_memory, "1G", 0,
    1099511627776.0, "bytes of open Trace-Sets' traces kept in memory to "
    "publish them without reading them back from the store; a set that "
    "does not fit is published from the store; read at start"),
  S("store", "path", db, "/var/lib/la-globalagent/la.db",
    "SQLite database file (WAL mode)"),
  S("store", "url", db_url, "",
    "PostgreSQL database (libpq URI or key=value string) instead of "
    "store.path; GlobalAgent shards share one (docs/sharding.md)"),
  N("store", "fsync", LA_CFG_BOOL, fsync, "yes", 0, 1,
    "fsync every commit (durable against power loss); no: against crashes"),
  N("store", "batch_max", LA_CFG_INT, batch_max, "1000", 1, 1000000,
    "messages per group commit at most"),
  N("store", "gather", LA_CFG_MS, gather_ms, "10ms", 0, 1000,
    "a group commit of a few messages, one of them a trace of a Trace-Set "
    "still missing ranks, waits this long for more before it is committed "
    "(its Acks wait too; a batch that closes a set never waits); 0: off"),
  N("appid", "require_owner", LA_CFG_BOOL, require_owner, "no", 0, 1,
    "yes: a RankStart that says no owner uid (an older LocalAgent) under "
    "an app id bound to a uid is refused like another uid's (its "
    "LocalAgent is not told: it would not understand); no: such ranks are "
    "neither bound nor checked"),
  N("appid", "refused_retention", LA_CFG_MS, refused_retention_ms, "7d",
    1000, 31622400000.0, "a refused rank's record is forgotten after this "
    "(its RankEnd forgets it at once)"),
  N("appid", "refused_max_per_agent", LA_CFG_INT, refused_max_per_agent,
    "10000", 1, 100000000, "refused ranks' records kept per LocalAgent; "
    "beyond, the oldest are forgotten (counted in appid_refused_pruned)"),
  N("store", "representatives", LA_CFG_BOOL, representatives, "no", 0, 1,
    "once a Trace-Set closed, keep of each behaviour class of its ranks "
    "only the representative's segments; the other members become "
    "their class, representative and scale, totals exact "
    "(docs/clusters.md)"),
  N("store", "representatives_tol", LA_CFG_DOUBLE, representatives_tol,
    "0.05", 0, 2, "signature distance (0..2) below which two ranks "
    "behave alike"),
  N("history", "full_cycles", LA_CFG_INT, history_full_cycles, "16", 0,
    4294967295.0, "a rank's most recent cycles kept in full; an older one "
    "its LocalAgent found within bound of a representative is kept as a "
    "reference to it (docs/history.md)"),
  S("daemon", "pid_file", pid_file, "", "file to write the pid into"),
  LA_METRICS_CFG_KEYS(S, N),
  N("metrics", "max_apps", LA_CFG_INT, metrics_max_apps, "256", 0, 100000,
    "applications given their own series (label app); the rest are counted "
    "in app_series_dropped"),
  S("log", "target", log_target, "stderr", "stderr or syslog"),
  S("log", "level", log_level, "info", "error, warn, info or debug"),
  {0, 0, 0, 0, 0, 0, 0, 0, 0},
};
