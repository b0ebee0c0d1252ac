/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_spec.c: compaction parameters: defaults, range checks, and the
 * text form used in configuration files, registration and lactl:
 *   MODE[:OPT[,OPT...]]   e.g. "polyline:cv=0.05,connected", "maxerr:eps=2"
 * Parsing resets to the defaults first and names the token it rejects;
 * formatting writes the canonical form that parses back to the same
 * parameters. Nothing here compacts.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact.h"
#include "la_errors.h"

void la_compact_params_default(la_compact_params_t *p) {
  memset(p, 0, sizeof(*p));
  p->mode = LA_COMPACT_POLYLINE;
  p->cv = 0.1;
  p->epsilon = 0;
  p->relative = 0;
  p->connected = 0;
  p->outliers = 1;
}

int la_compact_params_check(const la_compact_params_t *p, char *why,
                            size_t why_len) {
  if (p == NULL) return la_errorf(why, why_len, LA_EINVAL, "no parameters");
  if (p->mode < LA_COMPACT_DEFAULT || p->mode > LA_COMPACT_LOSSLESS)
    return la_errorf(why, why_len, LA_EINVAL, "unknown mode %d", p->mode);
  if (!(p->cv >= 0 && p->cv < INFINITY))
    return la_errorf(why, why_len, LA_EINVAL, "cv %g: must be finite and >= 0",
                     p->cv);
  if (!(p->epsilon >= 0 && p->epsilon < INFINITY))
    return la_errorf(why, why_len, LA_EINVAL,
                     "epsilon %g: must be finite and >= 0", p->epsilon);
  if (!(p->quantum >= 0 && p->quantum < INFINITY))
    return la_errorf(why, why_len, LA_EINVAL,
                     "quantum %g: must be finite and >= 0", p->quantum);
  return 0;
}

int la_compact_effective_mode(const la_compact_params_t *p) {
  int mode = p->mode == LA_COMPACT_DEFAULT ? LA_COMPACT_POLYLINE : p->mode;

  if ((mode == LA_COMPACT_POLYLINE && p->cv == 0) ||
      (mode == LA_COMPACT_MAXERR && p->epsilon == 0))
    return LA_COMPACT_LOSSLESS;
  return mode;
}

const char *la_compact_mode_name(int mode) {
  switch (mode) {
    case LA_COMPACT_DEFAULT:
      return "default";
    case LA_COMPACT_POLYLINE:
      return "polyline";
    case LA_COMPACT_MAXERR:
      return "maxerr";
    case LA_COMPACT_LOSSLESS:
      return "lossless";
  }
  return "?";
}

/* Parses a finite double >= 0 from the whole of s[0..len). Returns 0, -1
 * (not such a number) or -2 (a nonzero number below the smallest double,
 * which strtod() would round to 0). A subnormal result is a value like any
 * other (strtod() sets ERANGE for it too): fmt_num() writes such values, so
 * they must read back. */
static int parse_num(const char *s, size_t len, double *v) {
  char buf[64], *end;

  if (len == 0 || len >= sizeof(buf)) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  errno = 0;
  *v = strtod(buf, &end);
  if (end == buf || *end != 0 || !(*v >= 0 && *v < INFINITY)) return -1;
  if (errno == ERANGE && *v == 0) return -2; /* underflow to zero */
  if (errno != 0 && errno != ERANGE) return -1;
  return 0;
}

static int tok_is(const char *s, size_t len, const char *word) {
  return strlen(word) == len && memcmp(s, word, len) == 0;
}

/* The value of the option s[0..len) = "name=NUMBER" (the key is klen
 * bytes), which only mode `only` takes (mode is the spec's). Returns 0, or
 * LA_EINVAL with the reason in why. */
static int num_option(const char *s, size_t len, size_t klen, const char *name,
                      int mode, int only, double *v, char *why,
                      size_t why_len) {
  if (mode != only)
    return la_errorf(why, why_len, LA_EINVAL, "'%.*s': %s is for %s", (int)len,
                     s, name, la_compact_mode_name(only));
  int rc = parse_num(s + klen + 1, len - klen - 1, v);
  if (rc == -2)
    return la_errorf(why, why_len, LA_EINVAL,
                     "'%.*s': %s is below the smallest double (%g) but not 0",
                     (int)len, s, name, 0x1p-1074);
  if (rc != 0)
    return la_errorf(why, why_len, LA_EINVAL,
                     "'%.*s': %s must be a number >= 0", (int)len, s, name);
  return 0;
}

int la_compact_spec_parse(const char *spec, la_compact_params_t *p, char *why,
                          size_t why_len) {
  const char *s, *colon;
  size_t mlen;
  int has_eps = 0;

  if (spec == NULL || p == NULL)
    return la_errorf(why, why_len, LA_EINVAL, "no spec");
  la_compact_params_default(p);
  colon = strchr(spec, ':');
  mlen = colon ? (size_t)(colon - spec) : strlen(spec);
  if (tok_is(spec, mlen, "polyline") || tok_is(spec, mlen, "default"))
    p->mode = LA_COMPACT_POLYLINE;
  else if (tok_is(spec, mlen, "maxerr"))
    p->mode = LA_COMPACT_MAXERR;
  else if (tok_is(spec, mlen, "lossless"))
    p->mode = LA_COMPACT_LOSSLESS;
  else
    return la_errorf(why, why_len, LA_EINVAL,
                     "unknown mode '%.*s' (polyline, maxerr or lossless)",
                     (int)mlen, spec);
  for (s = colon ? colon + 1 : spec + mlen; colon != NULL;) {
    const char *end = strchr(s, ','), *eq;
    size_t len = end ? (size_t)(end - s) : strlen(s);
    size_t klen;
    double v;

    eq = memchr(s, '=', len);
    klen = eq ? (size_t)(eq - s) : len;
    if (len == 0)
      return la_errorf(why, why_len, LA_EINVAL, "empty option in '%s'", spec);
    if (eq && tok_is(s, klen, "cv")) {
      if (num_option(s, len, klen, "cv", p->mode, LA_COMPACT_POLYLINE, &v, why,
                     why_len))
        return LA_EINVAL;
      p->cv = v;
    } else if (eq && (tok_is(s, klen, "eps") || tok_is(s, klen, "epsilon"))) {
      if (num_option(s, len, klen, "eps", p->mode, LA_COMPACT_MAXERR, &v, why,
                     why_len))
        return LA_EINVAL;
      p->epsilon = v;
      has_eps = 1;
    } else if (!eq &&
               (tok_is(s, len, "relative") || tok_is(s, len, "absolute"))) {
      if (p->mode != LA_COMPACT_MAXERR)
        return la_errorf(why, why_len, LA_EINVAL, "'%.*s': only for maxerr",
                         (int)len, s);
      p->relative = s[0] == 'r';
    } else if (!eq && p->mode != LA_COMPACT_LOSSLESS &&
               (tok_is(s, len, "connected") || tok_is(s, len, "disjoint"))) {
      p->connected = s[0] == 'c';
    } else if (!eq && p->mode != LA_COMPACT_LOSSLESS &&
               (tok_is(s, len, "outliers") || tok_is(s, len, "no-outliers"))) {
      p->outliers = s[0] == 'o';
    } else {
      return la_errorf(why, why_len, LA_EINVAL, "unknown option '%.*s' for %s",
                       (int)len, s, la_compact_mode_name(p->mode));
    }
    if (end == NULL) break;
    s = end + 1;
  }
  if (p->mode == LA_COMPACT_MAXERR && !has_eps)
    return la_errorf(why, why_len, LA_EINVAL, "maxerr needs eps=X");
  return 0;
}

/* Shortest %g form of v that reads back as v ("20", not "2e+01"). */
static void fmt_num(char *buf, size_t len, double v) {
  char tmp[40];
  int prec;

  snprintf(buf, len, "%.17g", v);
  for (prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
    if (strtod(tmp, NULL) == v && strlen(tmp) < strlen(buf))
      snprintf(buf, len, "%s", tmp);
  }
}

int la_compact_spec_format(const la_compact_params_t *p, char *buf,
                           size_t len) {
  char num[40];
  int mode, w;

  if (la_compact_params_check(p, NULL, 0) != 0 || buf == NULL) return LA_EINVAL;
  mode = p->mode == LA_COMPACT_DEFAULT ? LA_COMPACT_POLYLINE : p->mode;
  if (mode == LA_COMPACT_LOSSLESS) {
    w = snprintf(buf, len, "lossless");
  } else {
    fmt_num(num, sizeof(num), mode == LA_COMPACT_POLYLINE ? p->cv : p->epsilon);
    w = snprintf(buf, len, "%s:%s=%s%s%s%s", la_compact_mode_name(mode),
                 mode == LA_COMPACT_POLYLINE ? "cv" : "eps", num,
                 mode == LA_COMPACT_MAXERR && p->relative ? ",relative" : "",
                 p->connected ? ",connected" : "",
                 p->outliers ? "" : ",no-outliers");
  }
  if (w < 0 || (size_t)w >= len) return LA_ELIMIT;
  return w;
}
