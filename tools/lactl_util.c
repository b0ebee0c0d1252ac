/* lactl_util.c: lactl's shared helpers (see lactl_util.h): the two data
 * sources behind one interface, common options, cycle selections, JSON,
 * time and number formatting, output files.
 *
 * The feed source asks the GlobalAgent (Query apps / cycles / traceset)
 * through libla_client; the store source opens the SQLite file read-only
 * (an SQLite URI with mode=ro) and asks globalagent/store.h, the same code
 * the GlobalAgent answers those queries with. Both hand back the same
 * structures; a Trace-Set from the store is turned into a la_traceset_t
 * exactly as a received one is. Error texts are made here, not taken from
 * either side, so both sources fail with the same words.
 */
#include "lactl_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sqlite3.h>

#include "../globalagent/store.h"
#include "la_client_internal.h"
#include "la_errors.h"

struct lactl_src {
  la_client_t *c; /* feed source, or */
  la_store_t *st; /* store source */
  char where[300];
  char err[600];
};

/* ------------------------------------------------------------- options */

int lactl_common_opt(lactl_common_t *o, int c, const char *arg) {
  switch (c) {
    case LACTL_OPT_GLOBAL:
      o->global = arg;
      return 1;
    case LACTL_OPT_DB:
      o->db = arg;
      return 1;
    case LACTL_OPT_JSON:
      o->json = 1;
      return 1;
    default:
      return 0;
  }
}

int lactl_usage_err(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "lactl %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (try 'lactl %s --help')\n", cmd);
  return LACTL_USAGE;
}

const char *lactl_global_addr(const char *opt) {
  if (opt && *opt) return opt;
  const char *e = getenv("LA_GLOBAL");
  return e && *e ? e : LA_CLIENT_DEFAULT_ADDR;
}

int lactl_parse_weights(const char *s, int *kind) {
  if (!strcmp(s, "measured")) *kind = LA_WEIGHTS_MEASURED;
  else if (!strcmp(s, "robust")) *kind = LA_WEIGHTS_ROBUST;
  else return -1;
  return 0;
}

int lactl_parse_u64(const char *s, uint64_t *v) {
  if (!s || *s < '0' || *s > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  if (errno || *end) return -1;
  *v = x;
  return 0;
}

int lactl_parse_sel(const char *s, int range_ok, lactl_sel_t *sel) {
  memset(sel, 0, sizeof *sel);
  if (!s || !strcmp(s, "latest")) {
    sel->latest = 1;
    return 0;
  }
  const char *colon = strchr(s, ':');
  if (!colon) {
    if (lactl_parse_u64(s, &sel->first)) return -1;
    sel->last = sel->first;
    return 0;
  }
  if (!range_ok) return -1;
  char a[32];
  size_t la = (size_t)(colon - s);
  if (la >= sizeof a) return -1;
  memcpy(a, s, la);
  a[la] = 0;
  sel->range = 1;
  sel->first = 0;
  sel->last = UINT64_MAX;
  if (la && lactl_parse_u64(a, &sel->first)) return -1;
  if (colon[1] && lactl_parse_u64(colon + 1, &sel->last)) return -1;
  return sel->first <= sel->last ? 0 : -1;
}

/* -------------------------------------------------------------- source */

static int la__fail(lactl_src_t *s, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int la__fail(lactl_src_t *s, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err, sizeof s->err, fmt, ap);
  va_end(ap);
  return rc;
}

/* The failure of a call on the source: its own detail. */
static int la__src_err(lactl_src_t *s, int rc) {
  if (s->c)
    return la__fail(s, rc, "%s: %s", s->where,
                    *la_client_error(s->c) ? la_client_error(s->c)
                                           : la_client_strerror(rc));
  return la__fail(
      s, rc, "%s: %s", s->where,
      *la_store_errmsg(s->st) ? la_store_errmsg(s->st) : la_strerror(rc));
}

/* "file:PATH?mode=ro" with PATH percent-encoded where URIs need it. */
static int la__ro_uri(const char *path, char *buf, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  int n = snprintf(buf, len, "file:");
  if (n < 0 || (size_t)n >= len) return -1;
  o = (size_t)n;
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                (*p >= '0' && *p <= '9') || strchr("/-_.~", *p);
    if (o + 4 >= len) return -1;
    if (plain) {
      buf[o++] = (char)*p;
    } else {
      buf[o++] = '%';
      buf[o++] = hex[*p >> 4];
      buf[o++] = hex[*p & 15];
    }
  }
  n = snprintf(buf + o, len - o, "?mode=ro");
  return n < 0 || (size_t)n >= len - o ? -1 : 0;
}

static int la__open_db(const char *cmd, lactl_src_t *s, const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    fprintf(stderr, "lactl %s: %s: %s\n", cmd, path, strerror(errno));
    return LACTL_FAIL;
  }
  if (!S_ISREG(sb.st_mode)) {
    fprintf(stderr, "lactl %s: %s: not a regular file\n", cmd, path);
    return LACTL_FAIL;
  }
  /* Read-only through an SQLite URI (mode=ro): lactl never writes to a
   * store, and never creates one (the file exists). */
  sqlite3_config(SQLITE_CONFIG_URI, 1);
  char uri[4200], why[600] = "";
  if (la__ro_uri(path, uri, sizeof uri) != 0) {
    fprintf(stderr, "lactl %s: %s: path too long\n", cmd, path);
    return LACTL_FAIL;
  }
  if (la_store_open(uri, 0, &s->st, why, sizeof why) != 0) {
    /* The store names the URI: name the file instead. */
    size_t ul = strlen(uri);
    const char *rest = strncmp(why, uri, ul) ? why : why + ul;
    if (strstr(rest, "readonly"))
      rest = ": not an LA store (empty, or without LA's schema)";
    fprintf(stderr, "lactl %s: cannot read the store %s%s%s\n", cmd, path,
            rest == why && *why ? ": " : "", rest);
    return LACTL_FAIL;
  }
  snprintf(s->where, sizeof s->where, "%s", path);
  return LACTL_OK;
}

int lactl_src_open(const char *cmd, const lactl_common_t *o,
                   lactl_src_t **out) {
  *out = NULL;
  lactl_src_t *s = calloc(1, sizeof *s);
  if (!s) {
    fprintf(stderr, "lactl %s: out of memory\n", cmd);
    return LACTL_FAIL;
  }
  if (o->db) {
    if (la__open_db(cmd, s, o->db) != LACTL_OK) {
      free(s);
      return LACTL_FAIL;
    }
    *out = s;
    return LACTL_OK;
  }
  const char *addr = lactl_global_addr(o->global);
  int rc = la_client_connect(addr, LA_CLIENT_DEFAULT_TIMEOUT_MS, &s->c);
  if (rc != 0) {
    if (rc == LA_EINVAL) {
      fprintf(stderr, "lactl %s: --global '%s' is not HOST:PORT\n", cmd, addr);
      free(s);
      return LACTL_USAGE;
    }
    fprintf(stderr,
            "lactl %s: cannot reach the GlobalAgent at %s: %s (is "
            "la-globalagent running? --global HOST:PORT names its feed "
            "port, --db FILE reads a store)\n",
            cmd, addr, la_client_strerror(rc));
    free(s);
    return LACTL_FAIL;
  }
  snprintf(s->where, sizeof s->where, "GlobalAgent %s", addr);
  *out = s;
  return LACTL_OK;
}

void lactl_src_close(lactl_src_t *s) {
  if (!s) return;
  la_client_close(s->c);
  la_store_close(s->st);
  free(s);
}

const char *lactl_src_error(const lactl_src_t *s) {
  return s ? s->err : "";
}

int lactl_src_fail(const char *cmd, lactl_src_t *s, int rc) {
  fprintf(stderr, "lactl %s: %s\n", cmd,
          s && s->err[0] ? s->err : la_client_strerror(rc));
  return LACTL_FAIL;
}

int lactl_app_ended(const lactl_app_t *a) {
  return a->nprocs > 0 && a->ranks_ended >= (int)a->nprocs;
}

const char *lactl_state_name(int state) {
  return state == LACTL_COMPLETE  ? "complete"
         : state == LACTL_PARTIAL ? "partial"
                                  : "open";
}

int lactl_set_state(const la_traceset_t *t) {
  if (la_traceset_complete(t)) return LACTL_COMPLETE;
  return la_traceset_time_ns(t) ? LACTL_PARTIAL : LACTL_OPEN;
}

/* Copies the text between a and b (exclusive) into dst (cut to cap). */
static void la__copy(char *dst, size_t cap, const char *a, const char *b) {
  size_t n = (size_t)(b - a);
  if (n >= cap) n = cap - 1;
  memcpy(dst, a, n);
  dst[n] = 0;
}

/* Last occurrence of needle in [from, to). */
static const char *la__rfind(const char *from, const char *to,
                             const char *needle) {
  const char *hit = NULL;
  for (const char *p = from; (p = strstr(p, needle)) && p < to; p++) hit = p;
  return hit;
}

/* Parses an "apps" row of the feed (globalagent/feed.c):
 * "name=N nprocs=U elements=U metric=M unit=U cycles=U complete=U
 * partial=U ranks_started=D ranks_ended=D". Names may hold spaces: each
 * text field ends where the fixed part that follows it parses. */
static int la__parse_app(const char *key, const char *v, lactl_app_t *a) {
  memset(a, 0, sizeof *a);
  snprintf(a->id, sizeof a->id, "%s", key);
  if (strncmp(v, "name=", 5)) return -1;
  const char *end = v + strlen(v), *np = NULL, *p;
  unsigned long long el = 0, cy = 0, co = 0, pa = 0;
  int k;
  for (p = v + 4; (p = strstr(p, " nprocs=")); p++) {
    k = 0;
    if (sscanf(p, " nprocs=%u elements=%llu metric=%n", &a->nprocs, &el, &k) ==
            2 &&
        k > 0) {
      np = p;
      break;
    }
  }
  if (!np) return -1;
  la__copy(a->name, sizeof a->name, v + 5, np);
  const char *metric = np + k;
  const char *cyc = la__rfind(metric, end, " cycles=");
  const char *unit = cyc ? la__rfind(metric, cyc, " unit=") : NULL;
  if (!unit) return -1;
  la__copy(a->metric, sizeof a->metric, metric, unit);
  la__copy(a->unit, sizeof a->unit, unit + 6, cyc);
  if (sscanf(cyc,
             " cycles=%llu complete=%llu partial=%llu ranks_started=%d "
             "ranks_ended=%d",
             &cy, &co, &pa, &a->ranks_started, &a->ranks_ended) != 5)
    return -1;
  a->elements = el;
  a->cycles = cy;
  a->complete = co;
  a->partial = pa;
  return 0;
}

int lactl_src_apps(lactl_src_t *s, lactl_app_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (s->st) {
    la_store_app_t *a = NULL;
    size_t na = 0;
    int rc = la_store_apps(s->st, &a, &na);
    if (rc) return la__src_err(s, rc);
    lactl_app_t *v = calloc(na ? na : 1, sizeof *v);
    if (!v) {
      free(a);
      return la__fail(s, LA_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < na; i++) {
      snprintf(v[i].id, sizeof v[i].id, "%s", a[i].app_id);
      snprintf(v[i].name, sizeof v[i].name, "%s", a[i].app_name);
      snprintf(v[i].metric, sizeof v[i].metric, "%s", a[i].metric);
      snprintf(v[i].unit, sizeof v[i].unit, "%s", a[i].unit);
      v[i].nprocs = a[i].nprocs;
      v[i].elements = a[i].n_elements_total;
      v[i].cycles = a[i].cycles;
      v[i].complete = a[i].sets_complete;
      v[i].partial = a[i].sets_partial;
      v[i].ranks_started = a[i].ranks_started;
      v[i].ranks_ended = a[i].ranks_ended;
    }
    free(a);
    *out = v;
    *n = na;
    return 0;
  }
  la_client_rows_t *r = NULL;
  int rc = la_client_list(s->c, "apps", NULL, &r);
  if (rc) return la__src_err(s, rc);
  size_t nr = la_client_rows_count(r);
  lactl_app_t *v = calloc(nr ? nr : 1, sizeof *v);
  if (!v) {
    la_client_rows_free(r);
    return la__fail(s, LA_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < nr; i++) {
    if (la__parse_app(la_client_rows_key(r, i), la_client_rows_value(r, i),
                      &v[i])) {
      rc = la__fail(s, LA_EPROTO, "%s: cannot read the apps row '%s'", s->where,
                    la_client_rows_key(r, i));
      la_client_rows_free(r);
      free(v);
      return rc;
    }
  }
  la_client_rows_free(r);
  *out = v;
  *n = nr;
  return 0;
}

int lactl_src_app(lactl_src_t *s, const char *id, lactl_app_t *out) {
  lactl_app_t *v;
  size_t n;
  int rc = lactl_src_apps(s, &v, &n);
  if (rc) return rc;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(v[i].id, id)) {
      *out = v[i];
      free(v);
      return 0;
    }
  free(v);
  return la__fail(s, LA_ENOTFOUND,
                  "%s: no application '%s' ('lactl apps' lists them)", s->where,
                  id);
}

/* Query{what=cycles, app_id, cycle_tag=first, cycle_last=last} on the
 * feed; rows "TAG" -> "state=S ranks=U missing=U". */
static int la__feed_cycles(lactl_src_t *s, const char *app, uint64_t first,
                           uint64_t last, lactl_cycle_t **out, size_t *n) {
  La__Query q = LA__QUERY__INIT;
  q.what = (char *)"cycles";
  q.app_id = (char *)app;
  q.has_cycle_tag = 1;
  q.cycle_tag = first;
  q.has_cycle_last = 1;
  q.cycle_last = last;
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  int rc =
      la__client_request(s->c, LA__MSG_TYPE__MSG_QUERY, &q.base, &type, &m);
  if (rc) return la__src_err(s, rc);
  if (type != LA__MSG_TYPE__MSG_QUERY_REPLY) {
    la_msg_free(m);
    return la__fail(s, LA_EPROTO, "%s: unexpected %s to a query", s->where,
                    la_msg_name(type));
  }
  La__QueryReply *r = (La__QueryReply *)m;
  if (r->status < 0) {
    rc = la__fail(
        s, r->status, "%s: %s", s->where,
        r->message && *r->message ? r->message : la_strerror(r->status));
    la_msg_free(m);
    return rc;
  }
  lactl_cycle_t *v = calloc(r->n_rows ? r->n_rows : 1, sizeof *v);
  if (!v) {
    la_msg_free(m);
    return la__fail(s, LA_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < r->n_rows; i++) {
    char st[16] = "";
    if (lactl_parse_u64(r->rows[i]->key, &v[i].tag) ||
        sscanf(r->rows[i]->value, "state=%15s ranks=%u missing=%u", st,
               &v[i].present, &v[i].missing) != 3 ||
        (strcmp(st, "open") && strcmp(st, "complete") &&
         strcmp(st, "partial"))) {
      rc = la__fail(s, LA_EPROTO, "%s: cannot read the cycles row '%s'",
                    s->where, r->rows[i]->key);
      free(v);
      la_msg_free(m);
      return rc;
    }
    v[i].state = !strcmp(st, "complete")  ? LACTL_COMPLETE
                 : !strcmp(st, "partial") ? LACTL_PARTIAL
                                          : LACTL_OPEN;
    /* the rest of the row (a GlobalAgent that records none sends none) */
    const char *why = strstr(r->rows[i]->value, " reasons=");
    if (why) snprintf(v[i].reasons, sizeof v[i].reasons, "%s", why + 9);
  }
  *n = r->n_rows;
  *out = v;
  la_msg_free(m);
  return 0;
}

int lactl_src_cycles(lactl_src_t *s, const char *app, uint64_t first,
                     uint64_t last, lactl_cycle_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  lactl_app_t a;
  int rc = lactl_src_app(s, app, &a);
  if (rc) return rc;
  if (s->c) return la__feed_cycles(s, app, first, last, out, n);
  la_store_cycle_t *c = NULL;
  size_t nc = 0;
  rc = la_store_cycles(s->st, app, first, last, &c, &nc);
  if (rc) return la__src_err(s, rc);
  lactl_cycle_t *v = calloc(nc ? nc : 1, sizeof *v);
  if (!v) {
    free(c);
    return la__fail(s, LA_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < nc; i++) {
    v[i].tag = c[i].cycle_tag;
    v[i].state = !c[i].closed    ? LACTL_OPEN
                 : c[i].complete ? LACTL_COMPLETE
                                 : LACTL_PARTIAL;
    v[i].present = c[i].ranks_present;
    v[i].missing = c[i].n_missing;
    snprintf(v[i].reasons, sizeof v[i].reasons, "%s", c[i].reasons);
  }
  free(c);
  *out = v;
  *n = nc;
  return 0;
}

/* Names what was not found: the application, or the cycle. */
static int la__set_notfound(lactl_src_t *s, const char *app, int latest,
                            uint64_t cycle) {
  lactl_app_t a;
  if (lactl_src_app(s, app, &a) != 0) return LA_ENOTFOUND;
  if (latest)
    return la__fail(s, LA_ENOTFOUND, "%s: %s has no cycle stored", s->where,
                    app);
  return la__fail(s, LA_ENOTFOUND,
                  "%s: %s has no cycle %llu ('lactl cycles %s' lists them)",
                  s->where, app, (unsigned long long)cycle, app);
}

int lactl_src_set(lactl_src_t *s, const char *app, int latest, uint64_t cycle,
                  la_traceset_t **out) {
  *out = NULL;
  if (!app || !*app || strlen(app) > LA_MAX_ID_LEN)
    return la__fail(s, LA_EINVAL, "'%s' is not an application id",
                    app ? app : "");
  int rc;
  if (s->c) {
    rc = latest ? la_client_latest(s->c, app, out)
                : la_client_get(s->c, app, cycle, out);
    if (rc == LA_ENOTFOUND) return la__set_notfound(s, app, latest, cycle);
    return rc ? la__src_err(s, rc) : 0;
  }
  if (latest) {
    rc = la_store_latest_cycle(s->st, app, LA_STORE_LATEST_ANY, &cycle);
    if (rc == LA_ENOTFOUND) return la__set_notfound(s, app, 1, 0);
    if (rc) return la__src_err(s, rc);
  }
  La__TraceSet *m = NULL;
  rc = la_store_load_set(s->st, app, cycle, &m);
  if (rc == LA_ENOTFOUND) return la__set_notfound(s, app, 0, cycle);
  if (rc) return la__src_err(s, rc);
  char why[256] = "";
  rc = la_traceset_from_message(m, out, why, sizeof why);
  la_store_free_set(m);
  if (rc)
    return la__fail(s, rc, "%s: %s cycle %llu does not decode: %s", s->where,
                    app, (unsigned long long)cycle,
                    why[0] ? why : la_strerror(rc));
  return 0;
}

int lactl_src_select(lactl_src_t *s, const char *app, const lactl_sel_t *sel,
                     uint64_t **tags, size_t *n) {
  *tags = NULL;
  *n = 0;
  if (!sel->range) {
    uint64_t tag = sel->first;
    if (sel->latest) {
      la_traceset_t *t;
      int rc = lactl_src_set(s, app, 1, 0, &t);
      if (rc) return rc;
      tag = la_traceset_cycle(t);
      la_traceset_free(t);
    }
    *tags = malloc(sizeof **tags);
    if (!*tags) return la__fail(s, LA_ENOMEM, "out of memory");
    (*tags)[0] = tag;
    *n = 1;
    return 0;
  }
  lactl_cycle_t *c;
  size_t nc;
  int rc = lactl_src_cycles(s, app, sel->first, sel->last, &c, &nc);
  if (rc) return rc;
  if (nc == 0) {
    free(c);
    return la__fail(s, LA_ENOTFOUND, "%s: %s has no cycle in %llu..%llu",
                    s->where, app, (unsigned long long)sel->first,
                    (unsigned long long)sel->last);
  }
  *tags = malloc(nc * sizeof **tags);
  if (!*tags) {
    free(c);
    return la__fail(s, LA_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < nc; i++) (*tags)[i] = c[i].tag;
  *n = nc;
  free(c);
  return 0;
}

/* ----------------------------------------------------------- formatting */

void lactl_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch == '\n')
      fputs("\\n", f);
    else if (ch == '\t')
      fputs("\\t", f);
    else if (ch < 0x20 || ch == 0x7f)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

void lactl_json_num(FILE *f, double v) {
  if (v == v && v - v == 0)
    fprintf(f, "%.17g", v);
  else
    fputs("null", f);
}

const char *lactl_fmt_time(uint64_t ns, char *buf, size_t len) {
  if (ns == 0) {
    snprintf(buf, len, "-");
    return buf;
  }
  time_t sec = (time_t)(ns / 1000000000u);
  struct tm tm;
  gmtime_r(&sec, &tm);
  char d[24];
  strftime(d, sizeof d, "%Y-%m-%d %H:%M:%S", &tm);
  snprintf(buf, len, "%s.%03u UTC", d, (unsigned)(ns % 1000000000u / 1000000u));
  return buf;
}

const char *lactl_fmt_num(double v, int prec, char *buf, size_t len) {
  if (v != v)
    snprintf(buf, len, "-");
  else if (fabs(v) >= pow(10, prec) && fabs(v) < 1e15) /* no exponent */
    snprintf(buf, len, "%.0f", v);
  else
    snprintf(buf, len, "%.*g", prec, v);
  return buf;
}

const char *lactl_fmt_ratio(double v, char *buf, size_t len) {
  if (v >= 100 && v < 1e15)
    snprintf(buf, len, "%.0f", v);
  else
    lactl_fmt_num(v, 3, buf, len);
  return buf;
}

const char *lactl_fmt_ranks(const uint32_t *r, size_t n, char *buf,
                            size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (size_t i = 0; i < n; i++) {
    char one[16];
    int k = snprintf(one, sizeof one, "%s%u", i ? "," : "", r[i]);
    if (o + (size_t)k + 4 >= len) {
      snprintf(buf + o, len - o, ",...");
      break;
    }
    memcpy(buf + o, one, (size_t)k + 1);
    o += (size_t)k;
  }
  return buf;
}

FILE *lactl_out_open(const char *cmd, const char *path) {
  if (!path || !strcmp(path, "-")) return stdout;
  FILE *f = fopen(path, "w");
  if (!f) fprintf(stderr, "lactl %s: %s: %s\n", cmd, path, strerror(errno));
  return f;
}

int lactl_out_close(const char *cmd, const char *path, FILE *f) {
  int bad = ferror(f);
  if (f == stdout)
    bad |= fflush(f) != 0;
  else
    bad |= fclose(f) != 0;
  if (bad) {
    fprintf(stderr, "lactl %s: writing %s failed\n", cmd,
            f == stdout || !path ? "the output" : path);
    return LACTL_FAIL;
  }
  return LACTL_OK;
}

/* ---------------------------------------------------------------- table */

struct lactl_table {
  int ncols;
  char align[16];
  size_t nrows, cap; /* rows, the heads being row 0 */
  char **cell;       /* nrows * ncols */
};

lactl_table_t *lactl_table_new(int ncols, const char *const *heads,
                               const char *align) {
  if (ncols < 1 || ncols > 15) return NULL;
  lactl_table_t *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->ncols = ncols;
  snprintf(t->align, sizeof t->align, "%s", align);
  if (lactl_table_row(t, heads)) {
    lactl_table_free(t);
    return NULL;
  }
  return t;
}

int lactl_table_row(lactl_table_t *t, const char *const *cells) {
  if (t->nrows == t->cap) {
    size_t nc = t->cap ? 2 * t->cap : 16;
    char **v = realloc(t->cell, nc * (size_t)t->ncols * sizeof *v);
    if (!v) return -1;
    t->cell = v;
    t->cap = nc;
  }
  char **row = t->cell + t->nrows * (size_t)t->ncols;
  for (int i = 0; i < t->ncols; i++) {
    row[i] = strdup(cells[i] ? cells[i] : "");
    if (!row[i]) {
      while (i-- > 0) free(row[i]);
      return -1;
    }
  }
  t->nrows++;
  return 0;
}

void lactl_table_print(FILE *f, const lactl_table_t *t, int indent) {
  int w[16] = {0};
  size_t len = (size_t)indent + 1;
  for (int i = 0; i < t->ncols; i++) {
    for (size_t r = 0; r < t->nrows; r++) {
      int n = (int)strlen(t->cell[r * (size_t)t->ncols + (size_t)i]);
      if (n > w[i]) w[i] = n;
    }
    len += (size_t)w[i] + 2;
  }
  char *line = malloc(len + 1);
  if (!line) return;
  for (size_t r = 0; r < t->nrows; r++) {
    size_t o = (size_t)snprintf(line, len + 1, "%*s", indent, "");
    for (int i = 0; i < t->ncols; i++) {
      const char *c = t->cell[r * (size_t)t->ncols + (size_t)i];
      o += (size_t)snprintf(line + o, len + 1 - o,
                            t->align[i] == 'r' ? "%*s  " : "%-*s  ", w[i], c);
    }
    while (o > 0 && line[o - 1] == ' ') o--; /* no trailing blanks */
    line[o] = 0;
    fprintf(f, "%s\n", line);
  }
  free(line);
}

void lactl_table_free(lactl_table_t *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++) free(t->cell[i]);
  free(t->cell);
  free(t);
}
