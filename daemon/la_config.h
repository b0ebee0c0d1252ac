/* SPDX-License-Identifier: BSD-3-Clause */
/* la_config.h: table-driven INI configuration for the daemons.
 *
 * A daemon describes its settings once, as a table of keys (section, name,
 * type, offset into its settings struct, default, range, help). From that
 * table this module fills the defaults, parses an INI file (reporting every
 * error as "file:line: message", not just the first), applies command-line
 * overrides "--section.name=value" (every key is also an option), prints the
 * effective configuration (--check-config) and the option help. It knows
 * nothing of what the keys mean and does no I/O but reading the file.
 *
 * INI syntax: "[section]" headers, "name = value" lines, "#" or ";"
 * comments, surrounding blanks ignored, values may be double-quoted.
 */
#ifndef LA_CONFIG_H
#define LA_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
  LA_CFG_STR,    /* char[size] */
  LA_CFG_INT,    /* int64_t, in [min, max] */
  LA_CFG_SIZE,   /* uint64_t bytes; suffixes k, M, G (powers of 1024) */
  LA_CFG_BOOL,   /* int: yes/no, true/false, on/off, 1/0 */
  LA_CFG_DOUBLE, /* double, in [min, max] */
  LA_CFG_MS      /* int64_t milliseconds; suffixes ms, s, m */
};

typedef struct la_cfg_key {
  const char *section;
  const char *name;
  int type;
  size_t offset; /* offsetof(settings struct, field) */
  size_t size;   /* LA_CFG_STR: capacity of the char array */
  const char *def;
  double min, max; /* numeric range (inclusive) */
  const char *help;
} la_cfg_key_t;

/* Keys end with an entry whose name is NULL. */

/* Sets every key to its default. Returns 0, or LA_ECONFIG if a default is
 * invalid (a bug in the table; message in err). */
/* Edit distance of a and b (insertions, deletions, substitutions and
 * swaps of two neighbours: optimal string alignment), for names of at most
 * 63 characters; 64 when longer. What a typo's suggestion is measured by
 * (settings here, lactl's options). */
size_t la_cfg_distance(const char *a, const char *b);

int la_cfg_defaults(const la_cfg_key_t *keys, void *obj, char *err,
                    size_t err_len);

/* Parses the INI file. Every problem is appended to err (one
 * "file:line: message" per line, truncated to err_len). Returns 0, LA_EIO
 * when the file cannot be read, or LA_ECONFIG. */
int la_cfg_load(const la_cfg_key_t *keys, void *obj, const char *path,
                char *err, size_t err_len);

/* Sets "section.name" (or a unique "name") to value. Returns 0 or
 * LA_ECONFIG with a message naming the key. */
int la_cfg_set(const la_cfg_key_t *keys, void *obj, const char *key,
               const char *value, char *err, size_t err_len);

/* Prints the effective configuration as an INI file. */
void la_cfg_print(const la_cfg_key_t *keys, const void *obj, FILE *f);

/* Prints "--section.name=VALUE  help (default: X)" for every key. */
void la_cfg_help(const la_cfg_key_t *keys, FILE *f);

#endif /* LA_CONFIG_H */
