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

/* argv = defaults then extra, into out (room for max entries + NULL). */
static int la_ts_args(const char **out, int max, const char *const *defs,
                      const char *const *extra) {
  int n = 0;
  for (; defs && *defs; defs++)
    if (n < max) out[n++] = *defs;
  for (; extra && *extra; extra++)
    if (n < max) out[n++] = *extra;
  out[n] = NULL;
  return n;
}

int la_ts_start_global(la_test_stack_t *s, const char *const *extra) {
  const char *agents_pf = s->agents_pf, *feed_pf = s->feed_pf;
  char a[4][700];
  snprintf(a[0], sizeof a[0], "--agents.port_file=%s", agents_pf);
  snprintf(a[1], sizeof a[1], "--feed.port_file=%s", feed_pf);
  snprintf(a[2], sizeof a[2], "--store.path=%s", s->db);
  snprintf(a[3], sizeof a[3], "--agents.secret_file=%s", s->secret);
  const char *defs[] = {"--agents.listen=127.0.0.1:0",
                        a[0],
                        a[1],
                        a[2],
                        a[3],
                        "--feed.listen=127.0.0.1:0",
                        "--store.fsync=no",
                        NULL};
  const char *argv[48];
  la_ts_args(argv, 47, defs, extra);
  int fp = la_td_start(s->ga, argv, feed_pf, LA_TS_WAIT_MS);
  int ap = fp > 0 ? la_td_read_port(agents_pf, LA_TS_WAIT_MS) : -1;
  if (ap < 0) return -1;
  snprintf(s->feed_addr, sizeof s->feed_addr, "127.0.0.1:%d", fp);
  snprintf(s->ga_addr, sizeof s->ga_addr, "127.0.0.1:%d", ap);
  return 0;
}

int la_ts_start_local(la_test_stack_t *s, const char *const *extra) {
  char pf[600], log_dir[600], b[4][700];
  la_td_path(s->la, "port", pf, sizeof pf);
  la_td_path(s->la, "log", log_dir, sizeof log_dir);
  snprintf(b[0], sizeof b[0], "--agent.port_file=%s", pf);
  snprintf(b[1], sizeof b[1], "--global.spool_dir=%s", log_dir);
  snprintf(b[2], sizeof b[2], "--global.address=%s", s->ga_addr);
  snprintf(b[3], sizeof b[3], "--global.secret_file=%s", s->secret);
  const char *defs[] = {"--agent.listen=127.0.0.1:0",  b[0], b[1], b[2], b[3],
                        "--global.reconnect_min=20ms", NULL};
  const char *argv[48];
  la_ts_args(argv, 47, defs, extra);
  remove(pf); /* a restart must not read the previous run's port */
  return la_td_start(s->la, argv, pf, LA_TS_WAIT_MS) > 0 ? 0 : -1;
}

int la_ts_stop_local(la_test_stack_t *s) {
  return s->la ? la_td_stop(s->la, 10000) : 0;
}

void la_ts_free(la_test_stack_t *s) {
  la_td_free(s->la);
  la_td_free(s->ga);
  s->la = s->ga = NULL;
}
