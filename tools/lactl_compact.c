/* lactl_compact.c: `lactl compact`: reads a series (raw little-endian
 * doubles or one number per line, from a file or stdin, or a synthetic
 * series), compacts it with the chosen mode and parameters, and prints the
 * segments count, bytes, bits per value, ratio to raw doubles, the achieved
 * errors and the speed; --segments lists the segments, --json writes one
 * JSON object for scripts. Users tune cv and epsilon with it.
 *
 * It does not talk to any agent; everything it does goes through
 * common/la_compact.h, the same engine the LocalAgent runs.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "la_compact.h"
#include "la_time.h"
#include "lactl_format.h"

enum { FMT_AUTO, FMT_F64, FMT_TEXT };

typedef struct {
  la_compact_params_t p;
  int format, segments, json, reps;
  const char *synthetic;
  const char *path;
} opts_t;

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: lactl compact [OPTIONS] FILE|-\n"
      "       lactl compact [OPTIONS] --synthetic KIND[:N[:SEED]]\n"
      "\n"
      "Compacts one series with LA's compaction engine and reports the "
      "result.\n"
      "FILE holds raw little-endian doubles or one number per line ('#' starts "
      "a\n"
      "comment); '-' reads stdin.\n"
      "\n"
      "  --spec SPEC        parameters as text, e.g. "
      "polyline:cv=0.05,connected,\n"
      "                     maxerr:eps=2, maxerr:eps=0.01,relative, lossless\n"
      "  --mode MODE        polyline (default), maxerr or lossless\n"
      "  --cv X             polyline: bound on RMSE/|mean| per segment (0.1);\n"
      "                     0 means lossless\n"
      "  --eps X            maxerr: bound on |error| (0 means lossless)\n"
      "  --relative         maxerr: the bound is X * |value|\n"
      "  --connected        segments share their end points\n"
      "  --no-outliers      do not keep isolated points verbatim\n"
      "  --quantum Q        polyline: the values are whole multiples of Q\n"
      "                     (timer ticks x ns per tick): rough stretches are\n"
      "                     stored exactly as integers where that is smaller\n"
      "  --format F         auto (default), f64 or text\n"
      "  --synthetic KIND   use a synthetic series: mesh, steps, ramps, sine,\n"
      "                     spikes, constant, noise, walk (N default 1000000)\n"
      "  --segments         list the segments\n"
      "  --json             print one JSON object instead of the table\n"
      "  --reps N           time N runs and report the median (default 5)\n"
      "  -h, --help         this text\n"
      "\n"
      "Exit status: 0 done, 1 compaction failed, 2 bad usage or input.\n");
}

static int bad(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "lactl compact: ");
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  return 2;
}

static int parse_double(const char *s, double *v) {
  char *end;

  errno = 0;
  *v = strtod(s, &end);
  return end == s || *end != 0 || errno != 0 ? -1 : 0;
}

static int parse_opts(int argc, char **argv, opts_t *o) {
  static const struct option lo[] = {{"spec", 1, 0, 's'},
                                     {"mode", 1, 0, 'm'},
                                     {"cv", 1, 0, 'c'},
                                     {"eps", 1, 0, 'e'},
                                     {"relative", 0, 0, 'r'},
                                     {"connected", 0, 0, 'C'},
                                     {"no-outliers", 0, 0, 'O'},
                                     {"format", 1, 0, 'f'},
                                     {"segments", 0, 0, 'S'},
                                     {"json", 0, 0, 'j'},
                                     {"synthetic", 1, 0, 'y'},
                                     {"reps", 1, 0, 'R'},
                                     {"quantum", 1, 0, 'q'},
                                     {"help", 0, 0, 'h'},
                                     {0, 0, 0, 0}};
  char why[200];
  double v;
  int c, have_eps = 0;

  memset(o, 0, sizeof(*o));
  la_compact_params_default(&o->p);
  o->reps = 5;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    switch (c) {
      case 's':
        if (la_compact_spec_parse(optarg, &o->p, why, sizeof(why)) != 0)
          return bad("--spec: %s%s", why, "");
        have_eps = o->p.epsilon > 0;
        break;
      case 'm':
        if (strcmp(optarg, "polyline") == 0)
          o->p.mode = LA_COMPACT_POLYLINE;
        else if (strcmp(optarg, "maxerr") == 0)
          o->p.mode = LA_COMPACT_MAXERR;
        else if (strcmp(optarg, "lossless") == 0)
          o->p.mode = LA_COMPACT_LOSSLESS;
        else
          return bad("--mode '%s': polyline, maxerr or lossless%s", optarg, "");
        break;
      case 'c':
      case 'e':
        if (parse_double(optarg, &v) != 0 || !(v >= 0 && v < INFINITY))
          return bad("--%s '%s': not a number >= 0", c == 'c' ? "cv" : "eps",
                     optarg);
        if (c == 'c')
          o->p.cv = v;
        else
          o->p.epsilon = v, have_eps = 1;
        break;
      case 'q':
        if (parse_double(optarg, &v) != 0 || !(v > 0 && v < INFINITY))
          return bad("--quantum '%s': not a number > 0%s", optarg, "");
        o->p.quantum = v;
        break;
      case 'r':
        o->p.relative = 1;
        break;
      case 'C':
        o->p.connected = 1;
        break;
      case 'O':
        o->p.outliers = 0;
        break;
      case 'f':
        if (strcmp(optarg, "auto") == 0)
          o->format = FMT_AUTO;
        else if (strcmp(optarg, "f64") == 0)
          o->format = FMT_F64;
        else if (strcmp(optarg, "text") == 0)
          o->format = FMT_TEXT;
        else
          return bad("--format '%s': auto, f64 or text%s", optarg, "");
        break;
      case 'S':
        o->segments = 1;
        break;
      case 'j':
        o->json = 1;
        break;
      case 'y':
        o->synthetic = optarg;
        break;
      case 'R':
        o->reps = atoi(optarg);
        if (o->reps < 1 || o->reps > 1000)
          return bad("--reps '%s': between 1 and 1000%s", optarg, "");
        break;
      case 'h':
        usage(stdout);
        return -1;
      default:
        return bad("unknown or incomplete option '%s'%s", argv[optind - 1], "");
    }
  }
  if (o->p.mode == LA_COMPACT_MAXERR && !have_eps)
    return bad("maxerr needs --eps X (or --spec maxerr:eps=X)%s%s", "", "");
  if (o->p.relative && o->p.mode != LA_COMPACT_MAXERR)
    return bad("--relative is only for maxerr%s%s", "", "");
  if (o->p.quantum > 0 && o->p.mode != LA_COMPACT_POLYLINE &&
      o->p.mode != LA_COMPACT_DEFAULT)
    return bad("--quantum is only for polyline%s%s", "", "");
  if (o->synthetic == NULL) {
    if (optind != argc - 1)
      return bad(optind >= argc ? "no input FILE (or - for stdin)%s%s"
                                : "one input FILE only ('%s' is extra)%s",
                 optind < argc ? argv[optind + 1] : "", "");
    o->path = argv[optind];
  } else if (optind != argc) {
    return bad("--synthetic takes no FILE ('%s')%s", argv[optind], "");
  }
  return 0;
}

static int read_all(const char *path, char **buf, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  size_t cap = 1 << 16, n = 0, r;
  char *b, *q;

  if (f == NULL) return bad("%s: %s", path, strerror(errno));
  b = malloc(cap + 1);
  while (b != NULL && (r = fread(b + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) {
      q = realloc(b, 2 * cap + 1);
      if (q == NULL) break;
      b = q;
      cap *= 2;
    }
  }
  if (b == NULL || ferror(f) || n == cap) {
    if (f != stdin) fclose(f);
    free(b);
    return bad("%s: cannot read it all%s", path, "");
  }
  if (f != stdin) fclose(f);
  b[n] = 0;
  *buf = b;
  *len = n;
  return 0;
}

/* Text unless a byte outside printable ASCII and whitespace shows up. */
static int looks_text(const char *b, size_t len) {
  size_t i;

  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)b[i];
    if (!(c == '\n' || c == '\r' || c == '\t' || (c >= 32 && c < 127)))
      return 0;
  }
  return 1;
}

static int parse_text(const char *path, char *b, double **x, size_t *n) {
  size_t cap = 1024, line = 0;
  char *s = b, *nl, *end;
  double *v = malloc(cap * sizeof(double)), *q;

  *n = 0;
  while (v != NULL && *s) {
    line++;
    nl = strchr(s, '\n');
    if (nl) *nl = 0;
    end = strchr(s, '#');
    if (end) *end = 0;
    while (*s == ' ' || *s == '\t' || *s == '\r') s++;
    if (*s) {
      double d = strtod(s, &end);
      while (*end == ' ' || *end == '\t' || *end == '\r' || *end == ',') end++;
      if (end == s || *end) {
        char msg[32];
        snprintf(msg, sizeof(msg), "%zu", line);
        fprintf(stderr, "lactl compact: %s:%s: not a number: '%.40s'\n", path,
                msg, s);
        free(v);
        return 2;
      }
      if (*n == cap) {
        q = realloc(v, 2 * cap * sizeof(double));
        if (q == NULL) break;
        v = q;
        cap *= 2;
      }
      v[(*n)++] = d;
    }
    if (!nl) break;
    s = nl + 1;
  }
  if (v == NULL || (*s && *n == cap)) {
    free(v);
    return bad("%s: out of memory%s", path, "");
  }
  *x = v;
  return 0;
}

static int load(const opts_t *o, double **x, size_t *n, const char **kind) {
  char *b;
  size_t len, i;
  int rc, fmt = o->format;

  if ((rc = read_all(o->path, &b, &len)) != 0) return rc;
  if (fmt == FMT_AUTO) fmt = len > 0 && looks_text(b, len) ? FMT_TEXT : FMT_F64;
  if (fmt == FMT_TEXT) {
    *kind = "text";
    rc = parse_text(o->path, b, x, n);
    free(b);
    return rc;
  }
  *kind = "f64";
  if (len % 8) {
    free(b);
    return bad(
        "%s: %s bytes is not a whole number of doubles (use "
        "--format text for numbers in text)",
        o->path, len % 8 ? "its size in" : "");
  }
  *n = len / 8;
  *x = malloc((*n ? *n : 1) * sizeof(double));
  if (*x == NULL) {
    free(b);
    return bad("%s: out of memory%s", o->path, "");
  }
  for (i = 0; i < *n; i++) { /* little-endian on any host */
    uint64_t u = 0;
    int k;
    for (k = 7; k >= 0; k--) u = u << 8 | (unsigned char)b[8 * i + (size_t)k];
    memcpy(&(*x)[i], &u, 8);
  }
  free(b);
  return 0;
}

static int synth(const char *arg, double **x, size_t *n) {
  char name[32];
  unsigned long long nn = 1000000, seed = 1;
  const char *c = strchr(arg, ':');
  size_t len = c ? (size_t)(c - arg) : strlen(arg);
  int kind;

  if (len >= sizeof(name))
    return bad("--synthetic '%s': unknown kind%s", arg, "");
  memcpy(name, arg, len);
  name[len] = 0;
  if ((kind = la_compact_synth_kind(name)) < 0)
    return bad(
        "--synthetic '%s': unknown kind (mesh, steps, ramps, sine, "
        "spikes, constant, noise, walk)%s",
        name, "");
  if (c && sscanf(c + 1, "%llu:%llu", &nn, &seed) < 1)
    return bad("--synthetic '%s': KIND[:N[:SEED]]%s", arg, "");
  if (nn > (1ull << 31)) return bad("--synthetic '%s': N too large%s", arg, "");
  *n = (size_t)nn;
  *x = malloc((*n ? *n : 1) * sizeof(double));
  if (*x == NULL) return bad("out of memory%s%s", "", "");
  la_compact_synth(kind, *n, seed, *x);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void print_segments(const la_trace_t *t, int json) {
  size_t i, ns = la_trace_segment_count(t);
  la_trace_segment_t s;

  if (!json)
    printf("\n%8s %12s %10s %-8s %14s %14s %6s\n", "segment", "first", "count",
           "kind", "first value", "last value", "exc");
  for (i = 0; i < ns; i++) {
    la_trace_segment(t, i, &s);
    if (json)
      printf(
          "%s\n    {\"first\": %llu, \"count\": %llu, \"kind\": \"%s\", "
          "\"v0\": %.17g, \"v1\": %.17g, \"exceptions\": %llu}",
          i ? "," : "", (unsigned long long)s.first,
          (unsigned long long)s.count,
          s.kind == LA_SEG_LINE ? "line" : "verbatim",
          isfinite(s.v0) ? s.v0 : 0, isfinite(s.v1) ? s.v1 : 0,
          (unsigned long long)s.exceptions);
    else
      printf("%8zu %12llu %10llu %-8s %14.6g %14.6g %6llu\n", i,
             (unsigned long long)s.first, (unsigned long long)s.count,
             s.kind == LA_SEG_LINE ? "line" : "verbatim", s.v0, s.v1,
             (unsigned long long)s.exceptions);
  }
}

/* JSON has no NaN or Inf: write null. */
static void jnum(const char *key, double v, const char *sep) {
  if (isfinite(v))
    printf("  \"%s\": %.17g%s\n", key, v, sep);
  else
    printf("  \"%s\": null%s\n", key, sep);
}

static void report(const opts_t *o, const char *src, const char *kind, size_t n,
                   const la_compact_result_t *r, double ns,
                   const la_trace_t *t) {
  char spec[96];
  la_compact_params_t used = o->p;
  double bits = n ? 8.0 * (double)r->len / (double)n : 0;
  double ratio = r->len ? 8.0 * (double)n / (double)r->len : 0;

  if (r->mode == LA_COMPACT_LOSSLESS) used.mode = LA_COMPACT_LOSSLESS;
  la_compact_spec_format(&used, spec, sizeof(spec));
  if (o->json) {
    printf("{\n  \"input\": ");
    lactl_json_str(stdout, src); /* a path may hold quotes */
    printf(",\n  \"format\": \"%s\",\n", kind);
    printf("  \"count\": %zu,\n  \"spec\": \"%s\",\n", n, spec);
    printf("  \"segments\": %zu,\n  \"exceptions\": %zu,\n", r->segments,
           r->exceptions);
    printf("  \"quantized\": %llu,\n", (unsigned long long)r->quantized);
    printf("  \"bytes\": %zu,\n  \"raw_bytes\": %zu,\n", r->len, 8 * n);
    jnum("bits_per_value", bits, ",");
    jnum("ratio_to_raw", ratio, ",");
    jnum("max_abs_error", r->error.max_abs, ",");
    jnum("rmse", r->error.rmse, ",");
    jnum("cv", r->error.cv, ",");
    jnum("sum", r->stats.sum, ",");
    jnum("min", r->stats.min, ",");
    jnum("max", r->stats.max, ",");
    jnum("ns_per_point", ns, o->segments ? "," : "");
    if (o->segments) {
      printf("  \"segment_list\": [");
      print_segments(t, 1);
      printf("\n  ]\n");
    }
    printf("}\n");
    return;
  }
  printf("input        %s (%zu values, %s)\n", src, n, kind);
  printf("parameters   %s\n", spec);
  printf("segments     %zu (%zu exceptions kept verbatim)\n", r->segments,
         r->exceptions);
  if (o->p.quantum > 0)
    printf("quantized    %llu points stored exactly (quantum %.17g)\n",
           (unsigned long long)r->quantized, o->p.quantum);
  printf("bytes        %zu (raw doubles: %zu)\n", r->len, 8 * n);
  printf("bits/value   %.4f\n", bits);
  printf("ratio        %.1fx smaller than raw doubles\n", ratio);
  printf("max |error|  %.6g\n", r->error.max_abs);
  printf("RMSE         %.6g\n", r->error.rmse);
  printf("CV           %.6g (RMSE / |mean|, whole series)\n", r->error.cv);
  printf("sum          %.17g (exact statistics travel with the trace)\n",
         r->stats.sum);
  printf("speed        %.2f ns/point (CPU time, median of %d runs)\n", ns,
         o->reps);
  if (o->segments) print_segments(t, 0);
}

int lactl_compact_main(int argc, char **argv) {
  opts_t o;
  double *x = NULL, *times = NULL, ns;
  size_t n = 0;
  const char *kind = "synthetic";
  la_compact_result_t r;
  la_trace_t *t = NULL;
  char why[200];
  int rc, i;

  if ((rc = parse_opts(argc, argv, &o)) != 0) return rc < 0 ? 0 : rc;
  rc = o.synthetic ? synth(o.synthetic, &x, &n) : load(&o, &x, &n, &kind);
  if (rc != 0) return rc;
  times = malloc((size_t)o.reps * sizeof(double));
  memset(&r, 0, sizeof(r));
  for (i = 0; times != NULL && i < o.reps; i++) {
    double t0;
    la_compact_result_free(&r);
    t0 = (double)la_thread_cpu_ns();
    if ((rc = la_compact(x, n, &o.p, &r)) != 0) break;
    times[i] = ((double)la_thread_cpu_ns() - t0) / (double)(n ? n : 1);
  }
  if (times == NULL || rc != 0) {
    fprintf(stderr, "lactl compact: %s\n",
            rc == LA_EINVAL   ? "invalid parameters"
            : rc == LA_ELIMIT ? "series too long"
                              : "out of memory");
    free(times);
    free(x);
    return 1;
  }
  qsort(times, (size_t)o.reps, sizeof(double), cmp_double);
  ns = times[o.reps / 2];
  if ((rc = la_trace_open(r.bytes, r.len, &t, why, sizeof(why))) != 0) {
    fprintf(stderr, "lactl compact: the encoding does not decode: %s\n", why);
    rc = 1;
  } else {
    report(&o, o.synthetic ? o.synthetic : o.path, kind, n, &r, ns, t);
  }
  la_trace_close(t);
  la_compact_result_free(&r);
  free(times);
  free(x);
  return rc;
}
