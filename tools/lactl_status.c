/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_status.c: `lactl status [--agent HOST:PORT | --global [HOST:PORT]]
 * [--json]`: asks a LocalAgent (default: $LA_AGENT or 127.0.0.1:7461) or
 * the GlobalAgent (--global: $LA_GLOBAL or 127.0.0.1:7463) for its status.
 * For people: the daemon's rows aligned, then the GlobalAgent's connected
 * LocalAgents and applications as tables. --json: one object rendered from
 * the typed reply (counters and gauges as numbers, per-application, per-rank
 * and per-agent rows as arrays; docs/schema/status.schema.json); nothing is
 * parsed from the text rows. Exit 0, 1 when the daemon cannot be reached or
 * answers badly, 2 on usage errors. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la_codec.h"
#include "la_errors.h"
#include "la_sockio.h"
#include "lactl_util.h"

static void la__usage(FILE *f) {
  fprintf(f,
          "usage: lactl status [--agent HOST:PORT | --global [HOST:PORT]] "
          "[--json]\n\n"
          "Shows the status of an LA daemon: counters, queue depths, links, "
          "the\napplications and their ranks; of the GlobalAgent also the "
          "LocalAgents\nconnected, the Trace-Sets and the store.\n\n"
          "  --agent HOST:PORT   the daemon to ask (default: $LA_AGENT or "
          "127.0.0.1:7461)\n"
          "  --global [HOST:PORT]  ask the GlobalAgent's feed (default: "
          "$LA_GLOBAL or\n"
          "                      127.0.0.1:7463)\n"
          "  --json              one JSON object "
          "(docs/schema/status.schema.json)\n");
}

/* "name": value of the typed metrics of one kind, as one JSON object. */
static void la__json_kind(FILE *f, const La__StatusReply *r,
                          La__StatusKind kind) {
  int first = 1;
  fputc('{', f);
  for (size_t i = 0; i < r->n_metrics; i++) {
    const La__StatusMetric *m = r->metrics[i];
    if (m->kind != kind) continue;
    fputs(first ? "" : ", ", f);
    first = 0;
    lactl_json_str(f, m->name);
    fputs(": ", f);
    if (kind == LA__STATUS_KIND__STATUS_INFO)
      lactl_json_str(f, m->text);
    else if (m->has_real)
      lactl_json_num(f, m->real);
    else
      fprintf(f, "%" PRId64, m->integer);
  }
  /* a daemon without typed values: its rows, as text */
  for (size_t i = 0; r->n_metrics == 0 &&
                     kind == LA__STATUS_KIND__STATUS_INFO && i < r->n_entries;
       i++) {
    fputs(i ? ", " : "", f);
    lactl_json_str(f, r->entries[i]->key);
    fputs(": ", f);
    lactl_json_str(f, r->entries[i]->value);
  }
  fputc('}', f);
}

static void la__json_apps(FILE *f, const La__StatusReply *r) {
  fputs("[", f);
  for (size_t i = 0; i < r->n_apps; i++) {
    const La__StatusApp *a = r->apps[i];
    fputs(i ? ", {\"app_id\": " : "{\"app_id\": ", f);
    lactl_json_str(f, a->app_id);
    if (a->has_nprocs) fprintf(f, ", \"nprocs\": %u", a->nprocs);
    if (a->has_ranks_ended) fprintf(f, ", \"ranks_ended\": %u", a->ranks_ended);
    if (!a->has_nprocs) {
      fputs(", \"ranks\": [", f);
      for (size_t k = 0; k < a->n_ranks; k++) {
        const La__StatusRank *x = a->ranks[k];
        fprintf(f,
                "%s{\"rank\": %u, \"pid\": %d, \"elements\": %" PRIu64
                ", \"cycles\": %" PRIu64 ", \"skipped\": %" PRIu64
                ", \"waits\": %" PRIu64 ", \"in_flight\": %d}",
                k ? ", " : "", x->rank, x->pid, x->elements, x->cycles,
                x->skipped, x->waits, x->in_flight);
      }
      fputs("]", f);
    }
    fputs("}", f);
  }
  fputs("]", f);
}

static void la__json(FILE *f, const La__StatusReply *r, const char *addr) {
  fputs("{\"daemon\": ", f);
  lactl_json_str(f, r->daemon);
  fputs(", \"address\": ", f);
  lactl_json_str(f, addr);
  fputs(", \"info\": ", f);
  la__json_kind(f, r, LA__STATUS_KIND__STATUS_INFO);
  fputs(", \"counters\": ", f);
  la__json_kind(f, r, LA__STATUS_KIND__STATUS_COUNTER);
  fputs(", \"gauges\": ", f);
  la__json_kind(f, r, LA__STATUS_KIND__STATUS_GAUGE);
  fputs(", \"apps\": ", f);
  la__json_apps(f, r);
  if (strcmp(r->daemon, "la-globalagent") == 0) {
    fputs(", \"agents\": [", f);
    for (size_t i = 0; i < r->n_agents; i++) {
      const La__StatusAgent *g = r->agents[i];
      fputs(i ? ", {\"host\": " : "{\"host\": ", f);
      lactl_json_str(f, g->host);
      fputs(", \"address\": ", f);
      lactl_json_str(f, g->address);
      fprintf(f, ", \"messages\": %" PRIu64 ", \"acked_seq\": %" PRIu64 "}",
              g->messages, g->acked_seq);
    }
    fputs("], \"missing_reasons\": [", f);
    for (size_t i = 0; i < r->n_missing; i++) {
      fputs(i ? ", {\"reason\": " : "{\"reason\": ", f);
      lactl_json_str(f, r->missing[i]->reason);
      fprintf(f, ", \"count\": %" PRIu64 "}", r->missing[i]->count);
    }
    fputs("]", f);
  }
  fputs("}\n", f);
}

/* For people: the rows, then the GlobalAgent's agents and applications. */
static void la__text(FILE *f, const La__StatusReply *r, const char *addr) {
  size_t w = 0;
  for (size_t i = 0; i < r->n_entries; i++)
    if (strlen(r->entries[i]->key) > w) w = strlen(r->entries[i]->key);
  fprintf(f, "%s at %s\n", r->daemon, addr);
  for (size_t i = 0; i < r->n_entries; i++)
    fprintf(f, "  %-*s  %s\n", (int)w, r->entries[i]->key,
            r->entries[i]->value);
  if (r->n_agents) {
    static const char *const heads[] = {"host", "address", "messages",
                                        "acked_seq"};
    lactl_table_t *t = lactl_table_new(4, heads, "llrr");
    for (size_t i = 0; t && i < r->n_agents; i++) {
      char m[24], s[24];
      snprintf(m, sizeof m, "%" PRIu64, r->agents[i]->messages);
      snprintf(s, sizeof s, "%" PRIu64, r->agents[i]->acked_seq);
      const char *cells[] = {r->agents[i]->host, r->agents[i]->address, m, s};
      lactl_table_row(t, cells);
    }
    fprintf(f, "LocalAgents connected:\n");
    if (t) lactl_table_print(f, t, 4);
    lactl_table_free(t);
  }
  size_t n_ga_apps = 0;
  for (size_t i = 0; i < r->n_apps; i++) n_ga_apps += r->apps[i]->has_nprocs;
  if (n_ga_apps) {
    static const char *const heads[] = {"app_id", "nprocs", "ranks_ended"};
    lactl_table_t *t = lactl_table_new(3, heads, "lrr");
    for (size_t i = 0; t && i < r->n_apps; i++) {
      if (!r->apps[i]->has_nprocs) continue;
      char n[16], e[16];
      snprintf(n, sizeof n, "%u", r->apps[i]->nprocs);
      snprintf(e, sizeof e, "%u", r->apps[i]->ranks_ended);
      const char *cells[] = {r->apps[i]->app_id, n, e};
      lactl_table_row(t, cells);
    }
    fprintf(f, "applications running:\n");
    if (t) lactl_table_print(f, t, 4);
    lactl_table_free(t);
  }
}

int lactl_status_main(int argc, char **argv) {
  const char *addr = getenv("LA_AGENT");
  int json = 0, timeout_ms = 3000, global = 0;
  const char *global_addr = NULL;
  if (!addr || !*addr) addr = "127.0.0.1:7461";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--agent") && i + 1 < argc)
      addr = argv[++i];
    else if (!strncmp(argv[i], "--agent=", 8))
      addr = argv[i] + 8;
    else if (!strcmp(argv[i], "--global")) {
      global = 1;
      if (i + 1 < argc && argv[i + 1][0] != '-') global_addr = argv[++i];
    } else if (!strncmp(argv[i], "--global=", 9)) {
      global = 1;
      global_addr = argv[i] + 9;
    } else if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      la__usage(stdout);
      return LACTL_OK;
    } else {
      return lactl_usage_err("status", "unknown argument '%s'", argv[i]);
    }
  }
  if (global) addr = lactl_global_addr(global_addr);
  char host[200];
  uint16_t port;
  if (la_hostport_parse(addr, host, sizeof host, &port) != 0) {
    fprintf(stderr, "lactl status: '%s' is not HOST:PORT\n", addr);
    return LACTL_USAGE;
  }
  int fd = la_tcp_connect(host, port, timeout_ms);
  if (fd < 0) {
    if (global)
      fprintf(stderr,
              "lactl status: cannot reach the GlobalAgent at %s: %s (is "
              "la-globalagent running? --global HOST:PORT names its feed "
              "port, feed.listen)\n",
              addr, la_strerror(fd));
    else
      fprintf(stderr,
              "lactl status: cannot reach the LocalAgent at %s: %s (is "
              "la-localagent running? --agent HOST:PORT or $LA_AGENT names "
              "its port, agent.listen; --global asks the GlobalAgent)\n",
              addr, la_strerror(fd));
    return LACTL_FAIL;
  }
  La__StatusRequest req = LA__STATUS_REQUEST__INIT;
  uint16_t type;
  ProtobufCMessage *m = NULL;
  char why[256] = "";
  int rc =
      la_send_msg(fd, LA__MSG_TYPE__MSG_STATUS_REQUEST, &req.base, timeout_ms);
  if (rc == 0)
    rc = la_recv_msg(fd, 16u << 20, timeout_ms, &type, &m, why, sizeof why);
  close(fd);
  if (rc != 0 || type != LA__MSG_TYPE__MSG_STATUS_REPLY) {
    fprintf(stderr, "lactl status: %s: %s\n", addr,
            rc ? (why[0] ? why : la_strerror(rc)) : "unexpected answer");
    la_msg_free(m);
    return LACTL_FAIL;
  }
  La__StatusReply *r = (La__StatusReply *)m;
  if (global && strcmp(r->daemon, "la-globalagent") != 0) {
    fprintf(stderr, "lactl status: %s is %s, not the GlobalAgent's feed\n",
            addr, r->daemon);
    la_msg_free(m);
    return LACTL_FAIL;
  }
  if (json)
    la__json(stdout, r, addr);
  else
    la__text(stdout, r, addr);
  la_msg_free(m);
  return LACTL_OK;
}
