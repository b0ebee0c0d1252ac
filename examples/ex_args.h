/* ex_args.h: the examples' command-line parsing, one table per program.
 *
 * Integer options take "--name N" or "--name=N" with 1 <= N <= max; flags
 * set an int (several entries may share a name: "--floor" both turns LA off
 * and the floor on). "--help"/"-h" prints the usage. Messages go out on rank
 * 0 only, prefixed with the program's name. Not part of LA: it keeps the
 * examples short so that what they show is the instrumentation.
 */
#ifndef EX_ARGS_H
#define EX_ARGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name; /* "--steps" */
  long *dst;
  long max;
} ex_long_opt_t;

typedef struct {
  const char *name; /* "--no-la" */
  int *dst;
  int value;
} ex_flag_opt_t;

/* Length of name when arg is "name" or "name=...", else 0. */
static inline size_t ex_arg_is(const char *arg, const char *name) {
  size_t len = strlen(name);
  return !strncmp(arg, name, len) && (!arg[len] || arg[len] == '=') ? len : 0;
}

/* Parses argv with the two tables (each ends with a NULL name). Returns 0
 * to run, 1 after --help, 2 on a usage error. */
static inline int ex_parse_args(const char *prog, int argc, char **argv,
                                int rank, void (*usage)(FILE *),
                                const ex_long_opt_t *longs,
                                const ex_flag_opt_t *flags) {
  for (int a = 1; a < argc; a++) {
    const char *arg = argv[a];
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      if (rank == 0) usage(stdout);
      return 1;
    }
    int is_flag = 0;
    for (const ex_flag_opt_t *f = flags; f->name; f++)
      if (!strcmp(arg, f->name)) {
        *f->dst = f->value;
        is_flag = 1;
      }
    if (is_flag) continue;
    const ex_long_opt_t *l = longs;
    size_t len = 0;
    while (l->name && !(len = ex_arg_is(arg, l->name))) l++;
    if (!l->name) {
      if (rank == 0) {
        fprintf(stderr, "%s: unknown option '%s'\n", prog, arg);
        usage(stderr);
      }
      return 2;
    }
    const char *val =
        arg[len] == '=' ? arg + len + 1 : (a + 1 < argc ? argv[++a] : NULL);
    char *end;
    long x = val && *val ? strtol(val, &end, 10) : 0;
    if (!val || !*val || *end || x < 1 || x > l->max) {
      if (rank == 0)
        fprintf(stderr, "%s: %.*s expects an integer in 1..%ld\n", prog,
                (int)len, arg, l->max);
      return 2;
    }
    *l->dst = x;
  }
  return 0;
}

#endif
