/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_compact.c: `lactl compact`: reads a series (raw little-endian
 * doubles or one number per line, from a file or stdin, or a synthetic
 * series), compacts it with the chosen mode and parameters, and prints the
 * segments count, bytes, bits per value, ratio to raw doubles, the achieved
 * errors and the speed; --segments lists the segments, --json writes one
 * JSON object for scripts; --sweep compacts with each of several cv or
 * epsilon values and prints one line per setting; --decoded writes the
 * reconstruction. Users tune cv and epsilon with it.
 *
 * Text or binary (--format auto): the input is text when, after an
 * optional UTF-8 byte order mark, it is valid UTF-8 with no control
 * character but tab, CR, LF, VT and FF (so a non-ASCII comment keeps a
 * text file text); anything else is raw little-endian doubles. A text
 * number that overflows a double (1e999) is an error naming its line.
 *
 * It does not talk to any agent; everything it does goes through
 * compact/la_compact.h, the same engine the LocalAgent runs.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "la_compact.h"
#include "la_time.h"
#include "lactl_format.h"
#include "lactl_opts.h"

enum { FMT_AUTO, FMT_F64, FMT_TEXT };

enum { SWEEP_NONE, SWEEP_CV, SWEEP_EPS };

typedef struct {
  la_compact_params_t p;
  int format, segments, json, reps;
  const char *synthetic;
  const char *path;
  const char *decoded; /* --decoded FILE: the reconstruction, as text */
  double eps_range;    /* --eps P%range: P (percent); < 0: not given */
  int sweep;           /* SWEEP_* */
  double sweep_v[64];  /* the values swept; as percents with sweep_range */
  int sweep_n, sweep_range;
  int decoded_fd; /* with --decoded -: the real stdout (report on stderr) */
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
      "  --eps X            maxerr: bound on |error| (0 means lossless);\n"
      "                     X%%range: X percent of the series' range\n"
      "                     (max - min), e.g. --eps 1%%range\n"
      "  --relative         maxerr: the bound is X * |value|\n"
      "  --connected        segments share their end points\n"
      "  --no-outliers      do not keep isolated points verbatim\n"
      "  --quantum Q        polyline: the values are whole multiples of Q\n"
      "                     (timer ticks x ns per tick): rough stretches are\n"
      "                     stored exactly as integers where that is smaller\n"
      "  --format F         auto (default), f64 or text; auto: text when the\n"
      "                     input (after a UTF-8 BOM) is UTF-8 without "
      "control\n"
      "                     characters other than whitespace\n"
      "  --synthetic KIND   use a synthetic series: mesh, steps, ramps, sine,\n"
      "                     spikes, constant, noise, walk (N default 1000000)\n"
      "  --segments         list the segments\n"
      "  --sweep cv=LIST    compact with each cv of LIST (comma-separated), "
      "or\n"
      "  --sweep eps=LIST   each epsilon (maxerr; X%%range allowed); one line\n"
      "                     of size and error per setting\n"
      "  --decoded FILE     write the decoded values, one per line (- stdout;\n"
      "                     the report then goes to stderr)\n"
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

/* An epsilon: "X" (absolute) or "X%range" (*range = 1, X in percent).
 * 0 or -1. */
static int parse_eps(const char *s, double *v, int *range) {
  char buf[64];
  size_t n = strlen(s);
  *range = n > 6 && strcmp(s + n - 6, "%range") == 0;
  if (*range) {
    if (n - 6 >= sizeof(buf)) return -1;
    memcpy(buf, s, n - 6);
    buf[n - 6] = 0;
    s = buf;
  }
  return parse_double(s, v) != 0 || !(*v >= 0 && *v < INFINITY) ? -1 : 0;
}

/* --sweep KEY=V1,V2,...: fills o->sweep*. 0 or -1. */
static int parse_sweep(const char *arg, opts_t *o) {
  char buf[1024], *tok, *save = NULL;
  int eps = strncmp(arg, "eps=", 4) == 0, range;

  if (!eps && strncmp(arg, "cv=", 3) != 0) return -1;
  if (strlen(arg) >= sizeof(buf)) return -1;
  strcpy(buf, arg + (eps ? 4 : 3));
  o->sweep = eps ? SWEEP_EPS : SWEEP_CV;
  o->sweep_n = 0;
  for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    double v;
    if (o->sweep_n == 64 || parse_eps(tok, &v, &range) != 0) return -1;
    if (range && (!eps || (o->sweep_n && !o->sweep_range))) return -1;
    if (!range && o->sweep_range) return -1;
    o->sweep_range = range;
    o->sweep_v[o->sweep_n++] = v;
  }
  return o->sweep_n ? 0 : -1;
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
                                     {"sweep", 1, 0, 'W'},
                                     {"decoded", 1, 0, 'D'},
                                     {"help", 0, 0, 'h'},
                                     {0, 0, 0, 0}};
  char why[200];
  double v;
  int c, have_eps = 0, range, have_mode = 0;
  /* given on the command line (for the warnings below) */
  int g_cv = 0, g_eps = 0, g_conn = 0, g_outl = 0;

  memset(o, 0, sizeof(*o));
  la_compact_params_default(&o->p);
  o->reps = 5;
  o->eps_range = -1;
  o->decoded_fd = -1;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    switch (c) {
      case 's':
        if (la_compact_spec_parse(optarg, &o->p, why, sizeof(why)) != 0)
          return bad("--spec: %s%s", why, "");
        have_eps = o->p.epsilon > 0;
        have_mode = 1;
        break;
      case 'm':
        have_mode = 1;
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
        if (parse_double(optarg, &v) != 0 || !(v >= 0 && v < INFINITY))
          return bad("--%s '%s': not a number >= 0", "cv", optarg);
        o->p.cv = v;
        g_cv = 1;
        break;
      case 'e':
        if (parse_eps(optarg, &v, &range) != 0)
          return bad("--%s '%s': not a number >= 0 (or X%%range)", "eps",
                     optarg);
        o->p.epsilon = range ? 0 : v;
        o->eps_range = range ? v : -1;
        have_eps = g_eps = 1;
        break;
      case 'W':
        if (parse_sweep(optarg, o) != 0)
          return bad(
              "--sweep '%s': cv=X,Y,... or eps=X,Y,... (up to 64 "
              "values >= 0; eps=X%%range,Y%%range,...)%s",
              optarg, "");
        break;
      case 'D':
        o->decoded = optarg;
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
        g_conn = 1;
        break;
      case 'O':
        o->p.outliers = 0;
        g_outl = 1;
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
        return lactl_opt_err("compact", argv, lo, "h");
    }
  }
  /* a sweep sets the mode it sweeps, unless one was asked for */
  if (o->sweep == SWEEP_CV && !have_mode) o->p.mode = LA_COMPACT_POLYLINE;
  if (o->sweep == SWEEP_EPS && !have_mode) o->p.mode = LA_COMPACT_MAXERR;
  if (o->sweep == SWEEP_CV && o->p.mode != LA_COMPACT_POLYLINE &&
      o->p.mode != LA_COMPACT_DEFAULT)
    return bad("--sweep cv= is for polyline%s%s", "", "");
  if (o->sweep == SWEEP_EPS && o->p.mode != LA_COMPACT_MAXERR)
    return bad("--sweep eps= is for maxerr%s%s", "", "");
  if (o->sweep == SWEEP_EPS) have_eps = 1;
  if (o->sweep && o->decoded)
    return bad("--decoded writes one setting's values, not a sweep's%s%s", "",
               "");
  /* options the chosen mode does not use: said, not silently dropped */
  {
    int m = o->p.mode == LA_COMPACT_DEFAULT ? LA_COMPACT_POLYLINE : o->p.mode;
    const char *mn = m == LA_COMPACT_MAXERR     ? "maxerr"
                     : m == LA_COMPACT_LOSSLESS ? "lossless"
                                                : "polyline";
    if (g_eps && m != LA_COMPACT_MAXERR)
      fprintf(stderr,
              "lactl compact: warning: --eps applies to maxerr only (--mode "
              "maxerr); ignored with %s\n",
              mn);
    if (g_cv && m != LA_COMPACT_POLYLINE)
      fprintf(stderr,
              "lactl compact: warning: --cv applies to polyline only; "
              "ignored with %s\n",
              mn);
    if ((g_conn || g_outl) && m == LA_COMPACT_LOSSLESS)
      fprintf(stderr,
              "lactl compact: warning: --%s does not apply to lossless; "
              "ignored\n",
              g_conn ? "connected" : "no-outliers");
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

/* The length of a UTF-8 byte order mark at b (0 or 3). */
static size_t bom_len(const char *b, size_t len) {
  return len >= 3 && memcmp(b, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

/* Text when b (after a BOM) is valid UTF-8 (no overlong forms, no
 * surrogates) without control characters but tab, LF, VT, FF and CR. */
static int looks_text(const char *b, size_t len) {
  const unsigned char *u = (const unsigned char *)b;
  size_t i = bom_len(b, len);

  while (i < len) {
    unsigned c = u[i], k, cp;
    if (c < 0x80) {
      if ((c < 32 && !(c >= 9 && c <= 13)) || c == 127) return 0;
      i++;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF)
      k = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
      k = 2, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
      k = 3, cp = c & 0x07;
    else
      return 0;
    for (unsigned j = 1; j <= k; j++) {
      if (i + j >= len || (u[i + j] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (u[i + j] & 0x3F);
    }
    if ((k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
      return 0;
    i += k + 1;
  }
  return 1;
}

static int parse_text(const char *path, char *b, double **x, size_t *n) {
  size_t cap = 1024, line = 0;
  char *s = b + bom_len(b, strlen(b)), *nl, *end;
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
      errno = 0;
      double d = strtod(s, &end);
      if (errno == ERANGE && isinf(d)) {
        fprintf(stderr,
                "lactl compact: %s:%zu: '%.*s' is out of the range of a "
                "double\n",
                path, line, (int)(end - s > 40 ? 40 : end - s), s);
        free(v);
        return 2;
      }
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
  char *b = NULL; /* set by read_all (gcc -O1 -fsanitize=thread cannot tell) */
  size_t len = 0, i;
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

/* max - min of the finite values of x (0 when none). */
static double range_of(const double *x, size_t n) {
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i])) {
      if (x[i] < lo) lo = x[i];
      if (x[i] > hi) hi = x[i];
    }
  return hi >= lo ? hi - lo : 0;
}

/* --sweep: one compaction per value, one line (or JSON object) each. */
static int sweep(const opts_t *o, const char *src, const char *kind,
                 const double *x, size_t n) {
  double range = range_of(x, n);
  int rc = 0;

  if (o->json)
    printf(
        "{\"input\": \"%s\", \"format\": \"%s\", \"count\": %zu, "
        "\"sweep\": [",
        src, kind, n);
  else
    printf(
        "input %s (%zu values, %s)\n%-10s %-10s %10s %10s %9s %12s %12s "
        "%10s\n",
        src, n, kind, o->sweep == SWEEP_CV ? "cv" : "eps",
        o->sweep_range ? "(absolute)" : "", "bytes", "bits/value", "ratio",
        "max|error|", "RMSE", "CV");
  for (int k = 0; k < o->sweep_n; k++) {
    la_compact_params_t p = o->p;
    la_compact_result_t r;
    double v = o->sweep_v[k];
    char given[32];
    snprintf(given, sizeof(given), "%g%s", v, o->sweep_range ? "%range" : "");
    if (o->sweep == SWEEP_CV)
      p.cv = v;
    else
      p.epsilon = o->sweep_range ? v / 100 * range : v;
    memset(&r, 0, sizeof(r));
    if ((rc = la_compact(x, n, &p, &r)) != 0) {
      fprintf(stderr, "lactl compact: %s=%s: %s\n",
              o->sweep == SWEEP_CV ? "cv" : "eps", given,
              rc == LA_EINVAL ? "invalid parameters" : "compaction failed");
      la_compact_result_free(&r);
      break;
    }
    double bits = n ? 8.0 * (double)r.len / (double)n : 0;
    double ratio = r.len ? 8.0 * (double)n / (double)r.len : 0;
    double used = o->sweep == SWEEP_CV ? p.cv : p.epsilon;
    if (o->json) {
      printf(
          "%s\n  {\"%s\": %.17g, \"bytes\": %zu, \"bits_per_value\": %.17g, "
          "\"ratio_to_raw\": %.17g, \"max_abs_error\": %.17g, \"rmse\": "
          "%.17g, \"cv\": %.17g}",
          k ? "," : "", o->sweep == SWEEP_CV ? "cv" : "eps", used, r.len, bits,
          ratio, isfinite(r.error.max_abs) ? r.error.max_abs : 0,
          isfinite(r.error.rmse) ? r.error.rmse : 0,
          isfinite(r.error.cv) ? r.error.cv : 0);
    } else {
      char u[32] = "";
      if (o->sweep_range) snprintf(u, sizeof(u), "(%.6g)", used);
      printf("%-10s %-10s %10zu %10.4f %8.1fx %12.6g %12.6g %10.6g\n", given, u,
             r.len, bits, ratio, r.error.max_abs, r.error.rmse, r.error.cv);
    }
    la_compact_result_free(&r);
  }
  if (o->json) printf("\n]}\n");
  return rc ? 1 : 0;
}

/* --decoded: the reconstruction of t, one %.17g value per line. */
static int write_decoded(const char *path, const la_trace_t *t, size_t n) {
  FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
  double *y = malloc((n ? n : 1) * sizeof(double));
  int bad_w = f == NULL || y == NULL;

  if (!bad_w && la_trace_decode(t, 0, n, y) != 0) bad_w = 1;
  for (size_t i = 0; !bad_w && i < n; i++)
    if (fprintf(f, "%.17g\n", y[i]) < 0) bad_w = 1;
  free(y);
  if (f == stdout) {
    if (fflush(f) != 0) bad_w = 1;
  } else if (f && fclose(f) != 0) {
    bad_w = 1;
  }
  if (bad_w) {
    fprintf(stderr, "lactl compact: --decoded %s: %s\n", path,
            errno ? strerror(errno) : "cannot write the decoded values");
    return 1;
  }
  return 0;
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
  if (o.sweep) {
    rc = sweep(&o, o.synthetic ? o.synthetic : o.path, kind, x, n);
    free(x);
    return rc;
  }
  if (o.eps_range >= 0) o.p.epsilon = o.eps_range / 100 * range_of(x, n);
  /* with --decoded -, stdout carries the values and the report stderr */
  if (o.decoded && strcmp(o.decoded, "-") == 0) {
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    if (saved < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      free(x);
      return bad("cannot redirect the report%s%s", "", "");
    }
    o.decoded_fd = saved;
  }
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
    if (o.decoded) {
      fflush(stdout);
      if (o.decoded_fd >= 0) dup2(o.decoded_fd, STDOUT_FILENO);
      rc = write_decoded(o.decoded, t, n);
    }
  }
  la_trace_close(t);
  la_compact_result_free(&r);
  free(times);
  free(x);
  return rc;
}
