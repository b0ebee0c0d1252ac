/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_args.h: the one command line every bench program takes.
 *
 *   bench_X [OUT.json]
 *
 * OUT.json is where the program writes its measurements (each program has
 * its own default under build/bench/). -h/--help prints this usage; any other
 * argument that starts with '-' is refused rather than taken for a file
 * name, so a mistyped option never creates a file called "--help".
 * Beside it, what every bench program does with its files: open the output
 * and make a scratch directory, with the error said the same way.
 */
#ifndef LA_BENCH_ARGS_H
#define LA_BENCH_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The output path for a bench program with arguments argv[first..argc),
 * or exit(0) after the usage for -h/--help, or exit(2) for any other
 * option or for extra arguments. */
static inline const char *la_bench_out_path(int argc, char **argv, int first,
                                            const char *dflt) {
  const char *name = argc > 0 ? argv[0] : "bench";
  if (argc > first + 1) {
    fprintf(stderr, "%s: one argument at most (the output file), got %d\n",
            name, argc - first);
    exit(2);
  }
  if (argc <= first) return dflt;
  const char *a = argv[first];
  if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
    printf(
        "usage: %s [OUT.json]\n  writes the measurements to OUT.json "
        "(default %s) and prints a table\n",
        name, dflt);
    exit(0);
  }
  if (a[0] == '-') {
    fprintf(stderr, "%s: unknown option '%s' (usage: %s [OUT.json])\n", name, a,
            name);
    exit(2);
  }
  return a;
}

/* Opens the output file for writing, or says why not (perror) and returns
 * NULL. */
static inline FILE *la_bench_open_out(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) perror(path);
  return f;
}

/* Makes a fresh directory $TMPDIR/NAME.XXXXXX (/tmp without TMPDIR) into
 * dir (n bytes). Returns 0, or -1 after saying why (perror). */
static inline int la_bench_tmpdir(const char *name, char *dir, size_t n) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, n, "%s/%s.XXXXXX", tmp ? tmp : "/tmp", name);
  if (mkdtemp(dir)) return 0;
  fprintf(stderr, "%s: mkdtemp: %s\n", name, strerror(errno));
  return -1;
}

#endif
