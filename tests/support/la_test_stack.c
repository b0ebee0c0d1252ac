/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_stack.c: the real GlobalAgent + LocalAgent pair for tests and
 * benchmarks (see la_test_stack.h). */
#include "la_test_stack.h"

#include <stdio.h>
#include <string.h>

#include "la_auth.h"

#define LA_TS_WAIT_MS 60000

int la_ts_ga_files(const la_test_daemon_t *ga, size_t len, char *secret,
                   char *db, char *agents_pf, char *feed_pf) {
  char why[256];
  la_td_path(ga, "secret", secret, len);
  la_td_path(ga, "la.db", db, len);
  la_td_path(ga, "agents.port", agents_pf, len);
  la_td_path(ga, "feed.port", feed_pf, len);
  if (la_auth_generate_secret_file(secret, why, sizeof why) != 0) {
    fprintf(stderr, "secret: %s\n", why);
    return -1;
  }
  return 0;
}

int la_ts_init(la_test_stack_t *s) {
  memset(s, 0, sizeof *s);
  if (la_auth_init() != 0) return -1;
  s->ga = la_td_new("la-globalagent");
  s->la = la_td_new("la-localagent");
  if (!s->ga || !s->la) return -1;
  return la_ts_ga_files(s->ga, sizeof s->db, s->secret, s->db, s->agents_pf,
                        s->feed_pf);
}

void la_ts_ga_args(la_td_argv_t *a, const char *agents_pf, const char *feed_pf,
                   const char *db, const char *secret) {
  la_td_argv_add(a, "--agents.port_file=%s", agents_pf);
  la_td_argv_add(a, "--feed.port_file=%s", feed_pf);
  la_td_argv_add(a, "--store.path=%s", db);
  if (secret) la_td_argv_add(a, "--agents.secret_file=%s", secret);
}

void la_ts_la_args(la_td_argv_t *a, const char *port_file, const char *spool,
                   const char *global, const char *secret) {
  la_td_argv_add(a, "--agent.listen=127.0.0.1:0");
  la_td_argv_add(a, "--agent.port_file=%s", port_file);
  la_td_argv_add(a, "--global.spool_dir=%s", spool);
  la_td_argv_add(a, "--global.address=%s", global);
  if (secret) la_td_argv_add(a, "--global.secret_file=%s", secret);
  /* tests hand cycles over microseconds apart and expect each one stored:
   * no backlog limit (a test of the default adds --agent.max_backlog=auto,
   * the later option winning) */
  la_td_argv_add(a, "--agent.max_backlog=off");
}

void la_ts_la_test_opts(la_td_argv_t *a) {
  la_td_argv_add(a, "--log.level=debug");
  la_td_argv_add(a, "--global.reconnect_min=20ms");
  la_td_argv_add(a, "--global.reconnect_max=200ms");
}

int la_ts_start_global(la_test_stack_t *s, const char *const *extra) {
  la_td_argv_t a;
  la_td_argv_init(&a);
  la_td_argv_add(&a, "--agents.listen=127.0.0.1:0");
  la_td_argv_add(&a, "--feed.listen=127.0.0.1:0");
  la_ts_ga_args(&a, s->agents_pf, s->feed_pf, s->db, s->secret);
  la_td_argv_add(&a, "--store.fsync=no");
  la_td_argv_extend(&a, extra);
  int fp = la_td_start(s->ga, a.v, s->feed_pf, LA_TS_WAIT_MS);
  int ap = fp > 0 ? la_td_read_port(s->agents_pf, LA_TS_WAIT_MS) : -1;
  if (ap < 0) return -1;
  snprintf(s->feed_addr, sizeof s->feed_addr, "127.0.0.1:%d", fp);
  snprintf(s->ga_addr, sizeof s->ga_addr, "127.0.0.1:%d", ap);
  return 0;
}

int la_ts_start_local(la_test_stack_t *s, const char *const *extra) {
  la_td_argv_t a;
  char pf[600], log_dir[600];
  la_td_path(s->la, "port", pf, sizeof pf);
  la_td_path(s->la, "log", log_dir, sizeof log_dir);
  la_td_argv_init(&a);
  la_ts_la_args(&a, pf, log_dir, s->ga_addr, s->secret);
  la_td_argv_add(&a, "--global.reconnect_min=20ms");
  la_td_argv_extend(&a, extra);
  remove(pf); /* a restart must not read the previous run's port */
  return la_td_start(s->la, a.v, pf, LA_TS_WAIT_MS) > 0 ? 0 : -1;
}

int la_ts_stop_local(la_test_stack_t *s) {
  return s->la ? la_td_stop(s->la, 10000) : 0;
}

void la_ts_free(la_test_stack_t *s) {
  la_td_free(s->la);
  la_td_free(s->ga);
  s->la = s->ga = NULL;
}
