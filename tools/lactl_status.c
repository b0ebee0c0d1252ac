/* lactl_status.c: `lactl status [--agent HOST:PORT] [--json]`: asks a
 * LocalAgent (default: $LA_AGENT or 127.0.0.1:7461) or a GlobalAgent for its
 * status and prints the key/value rows, aligned for a terminal or as one
 * JSON object for scripts. Exit 0, 1 when the daemon cannot be reached or
 * answers badly, 2 on usage errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la_codec.h"
#include "la_errors.h"
#include "la_sockio.h"
#include "lactl_util.h"

int lactl_status_main(int argc, char **argv) {
  const char *addr = getenv("LA_AGENT");
  int json = 0, timeout_ms = 3000;
  if (!addr || !*addr) addr = "127.0.0.1:7461";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--agent") && i + 1 < argc) addr = argv[++i];
    else if (!strncmp(argv[i], "--agent=", 8)) addr = argv[i] + 8;
    else if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("usage: lactl status [--agent HOST:PORT] [--json]\n\n"
             "Shows the status of the LA daemon at HOST:PORT (default: "
             "$LA_AGENT or 127.0.0.1:7461):\ncounters, queue depths, links "
             "and one row per registered application rank.\n");
      return 0;
    } else {
      fprintf(stderr, "lactl status: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  char host[200];
  uint16_t port;
  if (la_hostport_parse(addr, host, sizeof host, &port) != 0) {
    fprintf(stderr, "lactl status: '%s' is not HOST:PORT\n", addr);
    return 2;
  }
  int fd = la_tcp_connect(host, port, timeout_ms);
  if (fd < 0) {
    fprintf(stderr, "lactl status: cannot reach %s: %s\n", addr,
            la_strerror(fd));
    return 1;
  }
  La__StatusRequest req = LA__STATUS_REQUEST__INIT;
  uint16_t type;
  ProtobufCMessage *m = NULL;
  char why[256] = "";
  int rc = la_send_msg(fd, LA__MSG_TYPE__MSG_STATUS_REQUEST, &req.base,
                       timeout_ms);
  if (rc == 0)
    rc = la_recv_msg(fd, 16u << 20, timeout_ms, &type, &m, why, sizeof why);
  close(fd);
  if (rc != 0 || type != LA__MSG_TYPE__MSG_STATUS_REPLY) {
    fprintf(stderr, "lactl status: %s: %s\n", addr,
            rc ? (why[0] ? why : la_strerror(rc)) : "unexpected answer");
    la_msg_free(m);
    return 1;
  }
  La__StatusReply *r = (La__StatusReply *)m;
  if (json) {
    printf("{\"daemon\": ");
    lactl_json_str(stdout, r->daemon);
    for (size_t i = 0; i < r->n_entries; i++) {
      printf(", ");
      lactl_json_str(stdout, r->entries[i]->key);
      printf(": ");
      lactl_json_str(stdout, r->entries[i]->value);
    }
    printf("}\n");
  } else {
    size_t w = 0;
    for (size_t i = 0; i < r->n_entries; i++)
      if (strlen(r->entries[i]->key) > w) w = strlen(r->entries[i]->key);
    printf("%s at %s\n", r->daemon, addr);
    for (size_t i = 0; i < r->n_entries; i++)
      printf("  %-*s  %s\n", (int)w, r->entries[i]->key,
             r->entries[i]->value);
  }
  la_msg_free(m);
  return 0;
}
