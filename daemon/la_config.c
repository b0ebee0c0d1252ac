/* SPDX-License-Identifier: BSD-3-Clause */
/* la_config.c: the INI parser and key table handling of la_config.h. */
#include "la_config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "la_errcodes.h"

static void la__append(char *err, size_t n, const char *fmt, ...) {
  if (!err || !n) return;
  size_t used = strlen(err);
  if (used + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err + used, n - used, fmt, ap);
  va_end(ap);
}

static int la__parse_num(const char *v, int type, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (end == v || errno || !isfinite(x)) return -1;
  while (*end == ' ') end++;
  double mult = 1;
  if (type == LA_CFG_SIZE) {
    if (!strcasecmp(end, "k") || !strcasecmp(end, "kb") ||
        !strcasecmp(end, "kib")) mult = 1024.0;
    else if (!strcasecmp(end, "m") || !strcasecmp(end, "mb") ||
             !strcasecmp(end, "mib")) mult = 1024.0 * 1024;
    else if (!strcasecmp(end, "g") || !strcasecmp(end, "gb") ||
             !strcasecmp(end, "gib")) mult = 1024.0 * 1024 * 1024;
    else if (*end) return -1;
  } else if (type == LA_CFG_MS) {
    if (!strcmp(end, "ms") || !*end) mult = 1;
    else if (!strcmp(end, "s")) mult = 1000;
    else if (!strcmp(end, "m") || !strcmp(end, "min")) mult = 60000;
    else if (!strcmp(end, "h")) mult = 3600000;
    else if (!strcmp(end, "d")) mult = 86400000;
    else return -1;
  } else if (*end) {
    return -1;
  }
  x *= mult;
  if ((type == LA_CFG_INT || type == LA_CFG_SIZE || type == LA_CFG_MS) &&
      x != floor(x))
    return -1;
  *out = x;
  return 0;
}

/* Stores value into the key's field; on error writes a reason into why. */
static int la__store(const la_cfg_key_t *k, void *obj, const char *v,
                     char *why, size_t n) {
  char *field = (char *)obj + k->offset;
  double x;
  switch (k->type) {
  case LA_CFG_STR:
    if (strlen(v) >= k->size) {
      snprintf(why, n, "value longer than %zu bytes", k->size - 1);
      return -1;
    }
    memcpy(field, v, strlen(v) + 1);
    return 0;
  case LA_CFG_BOOL:
    if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") ||
        !strcasecmp(v, "on") || !strcmp(v, "1"))
      *(int *)field = 1;
    else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") ||
             !strcasecmp(v, "off") || !strcmp(v, "0"))
      *(int *)field = 0;
    else {
      snprintf(why, n, "'%s' is not yes/no, true/false, on/off or 1/0", v);
      return -1;
    }
    return 0;
  default:
    if (la__parse_num(v, k->type, &x) != 0) {
      snprintf(why, n, "'%s' is not a valid %s", v,
               k->type == LA_CFG_SIZE ? "size (e.g. 512k, 64M, 1G)"
               : k->type == LA_CFG_MS ? "duration (e.g. 500ms, 5s, 2m, 1h, 7d)"
               : k->type == LA_CFG_INT ? "integer"
                                       : "number");
      return -1;
    }
    if (x < k->min || x > k->max) {
      snprintf(why, n, "%s outside %.15g..%.15g", v, k->min, k->max);
      return -1;
    }
    if (k->type == LA_CFG_DOUBLE) *(double *)field = x;
    else if (k->type == LA_CFG_SIZE) *(uint64_t *)field = (uint64_t)x;
    else *(int64_t *)field = (int64_t)x;
    return 0;
  }
}

int la_cfg_defaults(const la_cfg_key_t *keys, void *obj, char *err,
                    size_t err_len) {
  char why[160];
  for (const la_cfg_key_t *k = keys; k->name; k++)
    if (la__store(k, obj, k->def ? k->def : "", why, sizeof why) != 0) {
      if (err) snprintf(err, err_len, "default of %s.%s: %s", k->section,
                        k->name, why);
      return LA_ECONFIG;
    }
  return 0;
}

size_t la_cfg_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), r2[64], r1[64], r0[64];
  if (la >= 64 || lb >= 64) return 64;
  for (size_t j = 0; j <= lb; j++) r1[j] = j;
  memcpy(r2, r1, sizeof r2);
  for (size_t i = 1; i <= la; i++) {
    r0[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t best = r1[j - 1] + (a[i - 1] != b[j - 1]);
      if (r1[j] + 1 < best) best = r1[j] + 1;
      if (r0[j - 1] + 1 < best) best = r0[j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          r2[j - 2] + 1 < best)
        best = r2[j - 2] + 1;
      r0[j] = best;
    }
    memcpy(r2, r1, sizeof r2);
    memcpy(r1, r0, sizeof r1);
  }
  return r1[lb];
}

/* The setting closest to name (a "section.name", or a name within
 * section when section is not NULL) when it is close enough to be a typo
 * (at most 2 edits, and fewer than a third of its length), into out as
 * " (did you mean 'agent.listen'?)"; "" when none is. */
static void la__suggest(const la_cfg_key_t *keys, const char *section,
                        const char *name, char *out, size_t len) {
  const la_cfg_key_t *best = NULL;
  size_t best_d = 3;
  for (const la_cfg_key_t *k = keys; k->name; k++) {
    char full[128];
    if (section && strcmp(k->section, section)) continue;
    if (section)
      snprintf(full, sizeof full, "%s", k->name);
    else
      snprintf(full, sizeof full, "%s.%s", k->section, k->name);
    size_t d = la_cfg_distance(name, full);
    if (d < best_d && d * 3 < strlen(full)) best = k, best_d = d;
  }
  if (!best)
    out[0] = '\0';
  else if (section)
    snprintf(out, len, " (did you mean '%s'?)", best->name);
  else
    snprintf(out, len, " (did you mean '%s.%s'?)", best->section, best->name);
}

static const la_cfg_key_t *la__find(const la_cfg_key_t *keys,
                                    const char *section, const char *name,
                                    int *ambiguous) {
  const la_cfg_key_t *hit = NULL;
  *ambiguous = 0;
  for (const la_cfg_key_t *k = keys; k->name; k++) {
    if (strcmp(k->name, name)) continue;
    if (section && strcmp(k->section, section)) continue;
    if (hit) *ambiguous = 1;
    hit = k;
  }
  return *ambiguous ? NULL : hit;
}

int la_cfg_set(const la_cfg_key_t *keys, void *obj, const char *key,
               const char *value, char *err, size_t err_len) {
  char sec[64] = "", why[160];
  const char *name = key, *dot = strchr(key, '.');
  char hint[160];
  if (dot) {
    if ((size_t)(dot - key) >= sizeof sec) {
      la__suggest(keys, NULL, key, hint, sizeof hint);
      snprintf(err, err_len, "unknown setting '%s'%s; --help lists them",
               key, hint);
      return LA_ECONFIG;
    }
    memcpy(sec, key, (size_t)(dot - key));
    sec[dot - key] = '\0';
    name = dot + 1;
  }
  int amb;
  const la_cfg_key_t *k = la__find(keys, dot ? sec : NULL, name, &amb);
  if (!k) {
    if (amb) {
      snprintf(err, err_len,
               "setting '%s' is ambiguous: use section.name (", key);
      const char *sep = "";
      for (const la_cfg_key_t *c = keys; c->name; c++)
        if (!strcmp(c->name, name)) {
          la__append(err, err_len, "%s%s.%s", sep, c->section, c->name);
          sep = ", ";
        }
      la__append(err, err_len, ")");
      return LA_ECONFIG;
    }
    la__suggest(keys, NULL, key, hint, sizeof hint);
    snprintf(err, err_len, "unknown setting '%s'%s; --help lists them", key,
             hint);
    return LA_ECONFIG;
  }
  if (la__store(k, obj, value, why, sizeof why) != 0) {
    snprintf(err, err_len, "%s.%s: %s", k->section, k->name, why);
    return LA_ECONFIG;
  }
  return 0;
}

static char *la__trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

int la_cfg_load(const la_cfg_key_t *keys, void *obj, const char *path,
                char *err, size_t err_len) {
  if (err && err_len) err[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) {
    la__append(err, err_len, "%s: cannot open: %s\n", path, strerror(errno));
    return LA_EIO;
  }
  char line[1024], section[64] = "";
  int lineno = 0, bad = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    if (!strchr(line, '\n') && !feof(f)) {
      la__append(err, err_len, "%s:%d: line longer than %zu bytes\n", path,
                 lineno, sizeof line - 2);
      bad = 1;
      int c;
      while ((c = fgetc(f)) != EOF && c != '\n') {}
      continue;
    }
    char *s = la__trim(line);
    if (!*s || *s == '#' || *s == ';') continue;
    if (*s == '[') {
      char *end = strchr(s, ']');
      if (!end || end[1] || end - s - 1 <= 0 ||
          (size_t)(end - s - 1) >= sizeof section) {
        la__append(err, err_len, "%s:%d: malformed section header\n", path,
                   lineno);
        bad = 1;
        continue;
      }
      *end = '\0';
      snprintf(section, sizeof section, "%s", la__trim(s + 1));
      int known = 0;
      for (const la_cfg_key_t *k = keys; k->name; k++)
        if (!strcmp(k->section, section)) known = 1;
      if (!known) {
        la__append(err, err_len, "%s:%d: unknown section [%s]\n", path,
                   lineno, section);
        bad = 1;
      }
      continue;
    }
    char *eq = strchr(s, '=');
    if (!eq) {
      la__append(err, err_len, "%s:%d: expected 'name = value'\n", path,
                 lineno);
      bad = 1;
      continue;
    }
    *eq = '\0';
    char *name = la__trim(s), *value = la__trim(eq + 1);
    size_t vl = strlen(value);
    if (vl >= 2 && value[0] == '"' && value[vl - 1] == '"') {
      value[vl - 1] = '\0';
      value++;
    }
    int amb;
    const la_cfg_key_t *k = la__find(keys, section, name, &amb);
    if (!k) {
      char hint[160];
      la__suggest(keys, section, name, hint, sizeof hint);
      la__append(err, err_len, "%s:%d: unknown setting '%s' in [%s]%s\n",
                 path, lineno, name, section, hint);
      bad = 1;
      continue;
    }
    char why[160];
    if (la__store(k, obj, value, why, sizeof why) != 0) {
      la__append(err, err_len, "%s:%d: %s: %s\n", path, lineno, name, why);
      bad = 1;
    }
  }
  fclose(f);
  return bad ? LA_ECONFIG : 0;
}

static void la__print_value(const la_cfg_key_t *k, const void *obj, FILE *f) {
  const char *field = (const char *)obj + k->offset;
  switch (k->type) {
  case LA_CFG_STR: fprintf(f, "%s", field); break;
  case LA_CFG_BOOL: fprintf(f, "%s", *(const int *)field ? "yes" : "no"); break;
  case LA_CFG_DOUBLE: fprintf(f, "%.15g", *(const double *)field); break;
  case LA_CFG_SIZE:
    fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)field);
    break;
  case LA_CFG_MS:
    fprintf(f, "%lldms", (long long)*(const int64_t *)field);
    break;
  default: fprintf(f, "%lld", (long long)*(const int64_t *)field); break;
  }
}

void la_cfg_print(const la_cfg_key_t *keys, const void *obj, FILE *f) {
  const char *sec = NULL;
  for (const la_cfg_key_t *k = keys; k->name; k++) {
    if (!sec || strcmp(sec, k->section)) {
      fprintf(f, "%s[%s]\n", sec ? "\n" : "", k->section);
      sec = k->section;
    }
    fprintf(f, "%s = ", k->name);
    la__print_value(k, obj, f);
    fprintf(f, "\n");
  }
}

/* Writes text as words on lines of at most LA__HELP_WIDTH columns, the
 * first continuing a line already col columns wide, the others indented by
 * indent; a word longer than a line stands alone; '\1' is a space that
 * does not break. */
#define LA__HELP_WIDTH 79
static void la__wrap(FILE *f, const char *text, int col, int indent) {
  const char *p = text;
  int first = 1;
  while (*p) {
    while (*p == ' ') p++;
    if (!*p) break;
    int n = (int)strcspn(p, " ");
    if (!first && col + 1 + n > LA__HELP_WIDTH) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
      first = 1;
    }
    if (!first) {
      fputc(' ', f);
      col++;
    }
    for (int i = 0; i < n; i++) fputc(p[i] == '\1' ? ' ' : p[i], f);
    col += n;
    p += n;
    first = 0;
  }
  fputc('\n', f);
}

void la_cfg_help(const la_cfg_key_t *keys, FILE *f) {
  enum { OPT_COL = 2, TEXT_COL = 39 };
  for (const la_cfg_key_t *k = keys; k->name; k++) {
    char opt[96], text[1024];
    snprintf(opt, sizeof opt, "--%s.%s=VALUE", k->section, k->name);
    if (strstr(k->help, "(default:"))
      snprintf(text, sizeof text, "%s", k->help);
    else
      snprintf(text, sizeof text, "%s (default:\1%s)", k->help,
               k->def && *k->def ? k->def : "none");
    int w = fprintf(f, "%*s%s", OPT_COL, "", opt);
    if (w + 1 > TEXT_COL) {
      fprintf(f, "\n%*s", TEXT_COL, "");
    } else {
      fprintf(f, "%*s", TEXT_COL - w, "");
    }
    la__wrap(f, text, TEXT_COL, TEXT_COL);
  }
}
