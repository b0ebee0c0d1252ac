/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_serve.c: `lactl serve`: a read-only live view of a GlobalAgent's
 * Trace-Sets in a browser. It subscribes to the feed (every application,
 * libla_client), loads each application's last --history stored cycles
 * at start, and serves one page (lactl_serve_page.html, embedded) with
 * its JSON and a server-sent event stream (lactl_http.c) from a single
 * poll loop: a set published by the GlobalAgent is reduced and announced
 * to the open pages as soon as it has arrived.
 *
 * Access: 127.0.0.1 by default, and a random token made at start that
 * every request must carry (the URL printed holds it), so that other
 * users of the machine cannot read the profile (docs/security.md).
 * Blocking: the loop waits on the stored-set queries at start (and on an
 * application's ids, once, asked on a connection of their own); the feed
 * is read on a thread of its own (lactl_serve_feed.c) and element maps are
 * reduced on another (lactl_serve_work.c), so the page, its JSON and the
 * event stream are answered while a large set arrives or is reduced
 * (docs/lactl.md).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "la_codec.h"
#include "lactl_bin.h"
#include "lactl_http.h"
#include "lactl_serve.h"
#include "lactl_util.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: lactl serve [--listen HOST:PORT] [--history N] "
          "[--max-connections N]\n"
          "                   [--url-file FILE] [--global HOST:PORT] "
          "[--timeout SECONDS]\n"
          "\n"
          "Serves a live view of the GlobalAgent's Trace-Sets to a browser: "
          "the\n"
          "applications, each one's ranks x cycles load map and its latest "
          "cycle's\n"
          "per-element map, updated as sets are published. Prints the URL "
          "to open,\n"
          "which holds a random token every request needs; runs until "
          "interrupted.\n\n"
          "  --listen HOST:PORT  where to listen (default 127.0.0.1:0, port 0: "
          "any free\n"
          "                      port)\n"
          "  --history N         cycles kept per application, the last N "
          "stored ones\n"
          "                      loaded at start (default 64, 1..1024)\n"
          "  --max-connections N browser connections at once (default 16, "
          "2..256)\n"
          "  --url-file FILE     also write the URL into FILE (mode 0600)\n"
          "  --global HOST:PORT  the GlobalAgent's feed (default: $LA_GLOBAL "
          "or\n"
          "                      127.0.0.1:7463)\n"
          "  --timeout SECONDS   wait up to SECONDS for each stored set "
          "(default 5)\n"
          "\nExit status: 0 interrupted, 1 unreachable or cannot listen, 2 "
          "usage.\n");
}

static volatile sig_atomic_t la__stop;
static void la__on_signal(int sig) {
  la__stop = sig;
}

/* The server's state the HTTP handler reads. */
typedef struct {
  lactl_sv_t *d;
  lactl_http_t *http;
  la_client_t *c; /* requests (an application's ids) on a connection of
                     their own beside the feed's (NULL while lost) */
  uint64_t updates, update_bytes; /* events sent, their bytes */
} la__srv_t;

/* Body of an answer from a memstream. */
typedef struct {
  char *buf;
  size_t len;
  FILE *f;
} la__mem_t;

/* The query's app into app (cap > LA_MAX_ID_LEN; "" when absent). 0, or
 * -1 with why naming what is wrong with it: a NUL byte (%00) or more than
 * LA_MAX_ID_LEN bytes (lactl_http_param refuses both as if absent, so
 * that the answer was "needs app=APP", or for an id that fitted app's
 * buffer an unknown application). */
static int la__app_param(const char *query, char *app, size_t cap, char *why,
                         size_t why_len) {
  char v[LACTL_HTTP_MAX_REQUEST + 1];
  app[0] = '\0';
  if (lactl_http_param(query, "app", v, sizeof v)) {
    if (strlen(v) > LA_MAX_ID_LEN) {
      snprintf(why, why_len, "app=: %zu bytes, more than an application id's "
               "%u", strlen(v), LA_MAX_ID_LEN);
      return -1;
    }
    snprintf(app, cap, "%s", v);
    return 0;
  }
  for (const char *p = query; p && *p;) {
    if (!strncmp(p, "app=", 4)) { /* there, refused: a NUL in it */
      snprintf(why, why_len, "app=: holds a NUL byte (%%00)");
      return -1;
    }
    p = strchr(p, '&');
    if (p) p++;
  }
  return 0;
}

static void la__handle(void *ctx, const char *path, const char *query,
                       lactl_http_resp_t *r) {
  la__srv_t *s = ctx;
  char app[200] = "", why[300] = "";
  la__mem_t m = {0};
  if (!strcmp(path, "/") || !strcmp(path, "/index.html")) {
    size_t n;
    const char *page = lactl_sv_page(&n);
    r->body = malloc(n);
    if (r->body) memcpy(r->body, page, n), r->len = n;
    r->status = r->body ? 200 : 500;
    r->ctype = "text/html; charset=utf-8";
    return;
  }
  if (!strcmp(path, "/events")) {
    r->sse = 1;
    return;
  }
  m.f = open_memstream(&m.buf, &m.len);
  if (!m.f) {
    r->status = 500;
    return;
  }
  int rc = LA_ENOTFOUND, json_err = 0;
  if (la__app_param(query, app, sizeof app, why, sizeof why) != 0) {
    json_err = 1;
    rc = LA_EINVAL;
  } else if (!strcmp(path, "/api/apps")) {
    rc = lactl_sv_apps_json(s->d, m.f);
  } else if (!strcmp(path, "/api/heat")) {
    rc = lactl_sv_heat_json(s->d, app, m.f, why, sizeof why);
  } else if (!strcmp(path, "/api/map")) {
    char kind[16] = "robust", ch[130] = "", agg[8] = "mean", bins[8] = "512";
    lactl_http_param(query, "weights", kind, sizeof kind);
    lactl_http_param(query, "channel", ch, sizeof ch);
    lactl_http_param(query, "agg", agg, sizeof agg);
    lactl_http_param(query, "bins", bins, sizeof bins);
    lactl_sv_map_opts_t o = {.channel = ch};
    uint64_t nb = 0;
    if ((strcmp(kind, "robust") && strcmp(kind, "measured")) ||
        (strcmp(agg, "mean") && strcmp(agg, "max")) ||
        lactl_parse_u64(bins, &nb) || nb < 16 || nb > LACTL_SV_MAP_BINS) {
      snprintf(why, sizeof why,
               "weights=robust|measured, agg=mean|max, bins=16..%d",
               LACTL_SV_MAP_BINS);
      rc = LA_EINVAL;
    } else {
      o.kind = strcmp(kind, "robust") ? LA_WEIGHTS_MEASURED : LA_WEIGHTS_ROBUST;
      o.agg = strcmp(agg, "max") ? LACTL_BIN_MEAN : LACTL_BIN_MAX;
      o.bins = (uint32_t)nb;
      rc = lactl_sv_map_ask(s->d, app, &o, s->c, r->ticket, why, sizeof why);
      if (rc == 0) { /* reduced on the reduction thread: answered later */
        fclose(m.f);
        free(m.buf);
        r->later = 1;
        return;
      }
    }
  } else if (!strcmp(path, "/api/clusters")) {
    json_err = 1;
    if (!app[0]) {
      snprintf(why, sizeof why, "/api/clusters needs app=APP");
      rc = LA_EINVAL;
    } else {
      rc = lactl_sv_classes_ask(s->d, app, r->ticket, why, sizeof why);
      if (rc == 0) { /* on the reduction thread: answered later */
        fclose(m.f);
        free(m.buf);
        r->later = 1;
        return;
      }
    }
  } else {
    snprintf(why, sizeof why, "no such page: %s", path);
  }
  if (fclose(m.f) != 0) {
    free(m.buf);
    r->status = 500;
    return;
  }
  if (rc) {
    free(m.buf);
    m.buf = NULL, m.len = 0;
    m.f = open_memstream(&m.buf, &m.len);
    if (m.f && json_err) { /* {"error": why} */
      fputs("{\"error\":", m.f);
      lactl_json_str(m.f, why);
      fputs("}\n", m.f);
      r->ctype = "application/json";
    } else if (m.f) {
      fprintf(m.f, "%s\n", why);
    }
    if (m.f && fclose(m.f) == 0) r->body = m.buf, r->len = m.len;
    else free(m.buf);
    r->status = rc == LA_ENOTFOUND ? 404
                : rc == LA_ELIMIT  ? 503
                : rc == LA_ENOMEM  ? 500
                                   : 400;
    return;
  }
  r->status = 200;
  r->ctype = "application/json";
  r->body = m.buf, r->len = m.len;
}

/* Sends a map or classes the reduction thread made (lactl_sv_map_poll);
 * an error of the classes is JSON ({"error": ...}), of a map text. */
static void la__reply(void *ctx, uint64_t ticket, int status, char *body,
                      size_t len) {
  la__srv_t *s = ctx;
  lactl_http_reply(s->http, ticket, status,
                   status == 200 || (len && body[0] == '{')
                       ? "application/json"
                       : "text/plain; charset=utf-8",
                   body, len);
  free(body);
}

/* Takes set t into the store and announces it. */
static void la__take(la__srv_t *s, la_traceset_t *t) {
  char *ev;
  size_t n;
  char app[130];
  snprintf(app, sizeof app, "%s", la_traceset_app_id(t));
  uint64_t tag = la_traceset_cycle(t);
  int rc = lactl_sv_take(s->d, t, &ev, &n);
  if (rc == LA_ELIMIT) {
    fprintf(stderr,
            "lactl serve: %s cycle %llu not shown: %d applications "
            "already\n",
            app, (unsigned long long)tag, LACTL_SV_MAX_APPS);
  } else if (rc) {
    fprintf(stderr, "lactl serve: %s cycle %llu not shown: %s\n", app,
            (unsigned long long)tag, la_client_strerror(rc));
  } else if (s->http) {
    lactl_http_broadcast(s->http, "set", ev, n);
    s->updates++, s->update_bytes += n;
  }
  free(ev);
}

/* Loads the last hist stored cycles of every application. */
static int la__load(la__srv_t *s, const lactl_common_t *co, size_t hist) {
  lactl_src_t *src;
  int rc = lactl_src_open("serve", co, &src);
  if (rc) return rc;
  lactl_app_t *apps = NULL;
  size_t na = 0;
  int e = lactl_src_apps(src, &apps, &na);
  if (e) {
    rc = lactl_src_fail("serve", src, e);
    lactl_src_close(src);
    return rc;
  }
  for (size_t i = 0; i < na; i++) {
    lactl_cycle_t *cy = NULL;
    size_t nc = 0;
    if (lactl_src_cycles(src, apps[i].id, 0, UINT64_MAX, &cy, &nc) != 0) {
      fprintf(stderr, "lactl serve: %s: %s\n", apps[i].id,
              lactl_src_error(src));
      continue;
    }
    for (size_t c = nc > hist ? nc - hist : 0; c < nc; c++) {
      la_traceset_t *t;
      if (cy[c].state == LACTL_OPEN) continue; /* it comes by the feed */
      if (lactl_src_set(src, apps[i].id, 0, cy[c].tag, &t) != 0) {
        fprintf(stderr, "lactl serve: %s cycle %llu: %s\n", apps[i].id,
                (unsigned long long)cy[c].tag, lactl_src_error(src));
        continue;
      }
      la__take(s, t);
    }
    free(cy);
  }
  free(apps);
  lactl_src_close(src);
  return LACTL_OK;
}

/* Connects and subscribes to every application's live sets, read by the
 * feed thread *f, and connects *q for requests. */
static int la__subscribe(const char *addr, lactl_sv_feed_t **f,
                         la_client_t **q, char *why, size_t why_len) {
  la_client_t *c = NULL;
  *f = NULL, *q = NULL;
  int rc = la_client_connect(addr, 0, &c);
  if (!rc) rc = la_client_subscribe(c, NULL, 0);
  if (rc) {
    snprintf(why, why_len, "feed %s: %s", addr,
             c ? la_client_error(c) : la_client_strerror(rc));
    la_client_close(c);
    return rc;
  }
  rc = la_client_connect(addr, 0, q);
  if (rc) {
    snprintf(why, why_len, "requests %s: %s", addr, la_client_strerror(rc));
    la_client_close(c);
    return rc;
  }
  rc = lactl_sv_feed_new(c, f);
  if (rc) {
    snprintf(why, why_len, "feed %s: no thread: %s", addr,
             la_client_strerror(rc));
    la_client_close(c), la_client_close(*q);
    *q = NULL;
  }
  return rc;
}

/* Takes the sets the feed thread read; 0, or the code of a lost stream
 * (why says what). */
static int la__drain(la__srv_t *s, lactl_sv_feed_t *f, char *why,
                     size_t why_len) {
  la_traceset_t *t;
  int rc;
  while ((rc = lactl_sv_feed_next(f, &t, why, why_len)) == 1) la__take(s, t);
  return rc;
}

typedef struct {
  lactl_common_t common;
  const char *listen, *url_file;
  uint64_t hist, max_conns;
} la__args_t;

static int la__args(int argc, char **argv, la__args_t *a) {
  static const struct option lo[] = {
      {"listen", 1, 0, 'L'},          {"history", 1, 0, 'H'},
      {"max-connections", 1, 0, 'M'}, {"url-file", 1, 0, 'U'},
      LACTL_COMMON_OPTIONS,           {0, 0, 0, 0}};
  memset(a, 0, sizeof *a);
  a->listen = "127.0.0.1:0", a->hist = 64, a->max_conns = 16;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (lactl_common_opt(&a->common, c, optarg)) continue;
    switch (c) {
      case 'h':
        usage(stdout);
        return LACTL_OK;
      case 'L':
        a->listen = optarg;
        break;
      case 'U':
        a->url_file = optarg;
        break;
      case 'H':
        if (lactl_parse_u64(optarg, &a->hist) || a->hist < 1 || a->hist > 1024)
          return lactl_usage_err("serve", "--history '%s': 1..1024", optarg);
        break;
      case 'M':
        if (lactl_parse_u64(optarg, &a->max_conns) || a->max_conns < 2 ||
            a->max_conns > 256)
          return lactl_usage_err("serve", "--max-connections '%s': 2..256",
                                 optarg);
        break;
      default:
        return lactl_opt_err("serve", argv, lo, "h");
    }
  }
  if (optind < argc)
    return lactl_usage_err("serve", "unexpected argument '%s'", argv[optind]);
  const char *colon = strrchr(a->listen, ':');
  if (!colon || colon == a->listen || !colon[1])
    return lactl_usage_err("serve", "--listen '%s' is not HOST:PORT",
                           a->listen);
  if (a->common.db)
    return lactl_usage_err("serve", "serve reads the live feed, not --db");
  if (a->common.json || a->common.channel)
    return lactl_usage_err("serve",
                           "--json and --channel are the page's "
                           "choice, not serve's");
  return -1;
}

/* Writes url into path, readable by its owner only. */
static int la__url_file(const char *path, const char *url) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  size_t n = strlen(url);
  int ok = write(fd, url, n) == (ssize_t)n && write(fd, "\n", 1) == 1;
  return close(fd) == 0 && ok ? 0 : -1;
}

int lactl_serve_main(int argc, char **argv) {
  la__args_t a;
  int rc = la__args(argc, argv, &a);
  if (rc != -1) return rc;
  lactl_sv_feed_memory(); /* before any thread */
  if (sodium_init() < 0) {
    fprintf(stderr, "lactl serve: libsodium failed to start\n");
    return LACTL_FAIL;
  }
  unsigned char raw[16];
  char token[33];
  randombytes_buf(raw, sizeof raw);
  sodium_bin2hex(token, sizeof token, raw, sizeof raw);
  la__srv_t s = {.d = lactl_sv_new(a.hist)};
  if (!s.d) {
    fprintf(stderr, "lactl serve: out of memory\n");
    return LACTL_FAIL;
  }
  la_client_t *c = NULL;
  lactl_sv_feed_t *feed = NULL;
  const char *addr = lactl_global_addr(a.common.global);
  char why[400], bound[300];
  /* subscribe first, then load the stored cycles: a set published
   * meanwhile waits for the loop (a cycle taken twice replaces its
   * column) */
  if (la__subscribe(addr, &feed, &c, why, sizeof why) != 0) {
    fprintf(stderr, "lactl serve: %s\n", why);
    lactl_sv_free(s.d);
    return LACTL_FAIL;
  }
  rc = la__load(&s, &a.common, a.hist);
  if (rc == LACTL_OK &&
      lactl_http_open(a.listen, (unsigned)a.max_conns, token, la__handle, &s,
                      &s.http, bound, sizeof bound, why, sizeof why) != 0) {
    fprintf(stderr, "lactl serve: %s\n", why);
    rc = LACTL_FAIL;
  }
  char url[400];
  snprintf(url, sizeof url, "http://%s/?token=%s", bound, token);
  if (rc == LACTL_OK && a.url_file && la__url_file(a.url_file, url) != 0) {
    fprintf(stderr, "lactl serve: cannot write %s: %s\n", a.url_file,
            strerror(errno));
    rc = LACTL_FAIL;
  }
  if (rc != LACTL_OK) {
    lactl_http_close(s.http);
    lactl_sv_feed_free(feed);
    la_client_close(c);
    lactl_sv_free(s.d);
    return rc;
  }
  printf("lactl serve: open %s\n", url);
  fflush(stdout);
  struct sigaction sa = {0};
  sa.sa_handler = la__on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  size_t cap = a.max_conns + 3;
  struct pollfd *p = calloc(cap, sizeof *p);
  uint64_t retry_ms = 0;
  while (p && !la__stop) {
    size_t n = 0;
    if (feed)
      p[n++] = (struct pollfd){.fd = lactl_sv_feed_fd(feed), .events = POLLIN};
    int mfd = lactl_sv_map_fd(s.d);
    if (mfd >= 0) p[n++] = (struct pollfd){.fd = mfd, .events = POLLIN};
    size_t h0 = n;
    n += lactl_http_pollfds(s.http, p + n, cap - n);
    int pr = poll(p, n, 1000);
    if (pr < 0 && errno != EINTR) break;
    uint64_t now = lactl_http_now_ms();
    /* the sets the feed thread read */
    if (feed) {
      char lost[300];
      if (la__drain(&s, feed, lost, sizeof lost) != 0) {
        snprintf(why, sizeof why, "feed %s lost: %s; reconnecting", addr,
                 lost);
        fprintf(stderr, "lactl serve: %s\n", why);
        lactl_sv_set_feed(s.d, why);
        lactl_http_broadcast(s.http, "feed", "{}", 2);
        lactl_sv_feed_free(feed);
        la_client_close(c);
        feed = NULL, c = NULL;
        retry_ms = now + 2000;
      }
    }
    s.c = c;
    if (pr > 0)
      lactl_http_service(s.http, p + h0, n - h0, now);
    else
      lactl_http_service(s.http, NULL, 0, now);
    s.c = NULL;
    /* maps the reduction thread made, kept ones, the next reduction */
    lactl_sv_map_poll(s.d, c, la__reply, &s);
    if (!feed && now >= retry_ms) {
      if (la__subscribe(addr, &feed, &c, why, sizeof why) == 0) {
        lactl_sv_set_feed(s.d, "");
        lactl_http_broadcast(s.http, "feed", "{}", 2);
      } else {
        retry_ms = now + 2000;
      }
    }
  }
  free(p);
  lactl_http_stats_t st;
  lactl_http_stats(s.http, &st);
  lactl_sv_map_stats_t ms;
  lactl_sv_map_stats(s.d, &ms);
  fprintf(stderr,
          "lactl serve: stopped; %llu requests (%llu refused without the "
          "token, %llu connections closed for a limit), %llu updates sent "
          "(%llu bytes); %llu element maps reduced (%llu stopped for a "
          "newer set), %llu answered from kept ones\n",
          (unsigned long long)st.requests, (unsigned long long)st.refused,
          (unsigned long long)st.limited, (unsigned long long)s.updates,
          (unsigned long long)s.update_bytes, (unsigned long long)ms.started,
          (unsigned long long)ms.superseded, (unsigned long long)ms.cached);
  lactl_http_close(s.http);
  lactl_sv_feed_free(feed);
  la_client_close(c);
  lactl_sv_free(s.d);
  return LACTL_OK;
}
