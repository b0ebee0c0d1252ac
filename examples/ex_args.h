/* SPDX-License-Identifier: BSD-3-Clause */
/* ex_args.h: the examples' command-line parsing, one table per program,
 * and the options the solver examples share (ex_run_parse, ex_run_usage).
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

/* The exit status after parsing the arguments: rc is ex_parse_args's
 * result (0 run, 1 after --help, 2 usage error); a grid of n planes must
 * give each of the size ranks one (message on rank 0). Returns -1 to run,
 * else the status to exit with after MPI_Finalize. */
static inline int ex_exit_status(const char *prog, int rc, long n, int rank,
                                 int size) {
  if (rc == 0 && n < size) {
    if (rank == 0)
      fprintf(stderr, "%s: --n %ld is smaller than the %d ranks\n", prog, n,
              size);
    rc = 2;
  }
  return rc == 0 ? -1 : rc == 1 ? 0 : 2;
}

/* The options of the solver examples (wavetoy, heavy, multiloop). */
typedef struct ex_run_opts_s {
  long n;     /* --n: cells per dimension */
  long steps; /* --steps: time steps */
  int use_la; /* 0 with --no-la or --floor */
  int floor;  /* --floor: cells timed by hand, no LA (where offered) */
  int quiet;  /* --quiet: print only the checksum line */
} ex_run_opts_t;

/* A solver example's usage text: the synopsis, what (its description, whole
 * lines), the defaults of --n and --steps, --floor where has_floor. */
static inline void ex_run_usage(FILE *f, const char *prog, const char *what,
                                long n, long steps, int has_floor) {
  fprintf(f,
          "usage: mpiexec -n P %s [--n NX] [--steps S] [--no-la] %s"
          "[--quiet]\n%s"
          "  --n NX      cells per dimension (default %ld, at least P)\n"
          "  --steps S   time steps (default %ld)\n"
          "  --no-la     make no LA call at all (uninstrumented baseline)\n",
          prog, has_floor ? "[--floor] " : "", what, n, steps);
  if (has_floor)
    fprintf(f,
            "  --floor     no LA; time each cell with two raw timer reads "
            "and a\n"
            "              store into a local array (the overhead study's "
            "floor)\n");
  fprintf(f,
          "  --quiet     print only the checksum line\n"
          "  --help      this text\n"
          "LA reads LA_AGENT, LA_PERIOD, LA_METRIC, LA_DISABLE, "
          "LA_VERBOSE, ...\n"
          "(see examples/README.md). Without a LocalAgent the program "
          "runs unprofiled.\n");
}

/* Parses a solver example's options into o, whose n and steps hold the
 * defaults; --n up to max_n (and at least size), --steps up to max_steps,
 * --floor where has_floor. Returns as ex_exit_status: -1 to run. */
static inline int ex_run_parse(const char *prog, int argc, char **argv,
                               int rank, int size, void (*usage)(FILE *),
                               ex_run_opts_t *o, long max_n, long max_steps,
                               int has_floor) {
  o->use_la = 1;
  o->floor = 0;
  o->quiet = 0;
  const ex_long_opt_t longs[] = {{"--n", &o->n, max_n},
                                 {"--steps", &o->steps, max_steps},
                                 {NULL, NULL, 0}};
  const ex_flag_opt_t flags[] = {{"--no-la", &o->use_la, 0},
                                 {"--quiet", &o->quiet, 1},
                                 {has_floor ? "--floor" : NULL, &o->use_la, 0},
                                 {"--floor", &o->floor, 1},
                                 {NULL, NULL, 0}};
  int rc = ex_parse_args(prog, argc, argv, rank, usage, longs, flags);
  return ex_exit_status(prog, rc, o->n, rank, size);
}

/* Takes "--name WORD" or "--name=WORD" out of argv (shifting the rest down,
 * *argc decreases) where WORD is one of choices (NULL-terminated): *dst is
 * its index. The last occurrence wins; *dst stays as it was when there is
 * none. Returns 0, or 2 after a message on rank 0 when WORD is missing or
 * not a choice. For an example's own word options, before ex_run_parse. */
static inline int ex_take_choice(const char *prog, int *argc, char **argv,
                                 int rank, const char *name,
                                 const char *const *choices, int *dst) {
  for (int a = 1; a < *argc;) {
    size_t len = ex_arg_is(argv[a], name);
    if (!len) {
      a++;
      continue;
    }
    int eq = argv[a][len] == '=', used = eq ? 1 : 2;
    const char *val =
        eq ? argv[a] + len + 1 : (a + 1 < *argc ? argv[a + 1] : "");
    int found = -1;
    for (int c = 0; choices[c]; c++)
      if (!strcmp(val, choices[c])) found = c;
    if (found < 0) {
      if (rank == 0) {
        fprintf(stderr, "%s: %s expects one of", prog, name);
        for (int c = 0; choices[c]; c++)
          fprintf(stderr, "%s %s", c ? "," : "", choices[c]);
        fprintf(stderr, "\n");
      }
      return 2;
    }
    *dst = found;
    if (!eq && a + 1 >= *argc) used = 1;
    for (int b = a; b + used <= *argc; b++) argv[b] = argv[b + used];
    *argc -= used;
  }
  return 0;
}

#endif
