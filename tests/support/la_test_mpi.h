/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_mpi.h: what tests that run MPI jobs against real daemons share:
 * starting a job in the background in its own process
 * group (so a teardown kills every rank with one kill(-pid)), and waiting
 * until a LocalAgent is linked to its GlobalAgent(s). Test use only.
 */
#ifndef LA_TEST_MPI_H
#define LA_TEST_MPI_H

#include <stddef.h>
#include <sys/types.h>

#include "la_test_daemon.h"

/* Starts argv (argv[0] looked up on PATH) in the background, in a process
 * group of its own, with env_add (NAME=VALUE strings, NULL-terminated, may
 * be NULL) added to the environment and stdout and stderr into the file
 * out. Returns the pid (also the group id), or -1. */
pid_t la_test_spawn_group(const char *const *argv, const char *const *env_add,
                          const char *out);

/* Starts the LocalAgent la as node host, linked to global (one host:port
 * or a list of shards) with the secret file, on an ephemeral port, its
 * spool in its directory, debug log, reconnecting within 20-200 ms; its
 * address into addr (n bytes). Returns 0 or -1. */
int la_test_start_la(la_test_daemon_t *la, const char *global,
                     const char *secret, const char *host, int timeout_ms,
                     char *addr, size_t n);

/* Appends one program of an mpiexec command line to a: ":" when sep (a
 * later program of an MPMD line), "-n np", "env" and the NAME=VALUE
 * strings of env (NULL-terminated; NULL or empty: no env), then the
 * wavetoy example at path wavetoy with "--n n --steps steps". */
void la_test_wavetoy_ranks(la_td_argv_t *a, int sep, int np,
                           const char *const *env, const char *wavetoy, int n,
                           int steps);

/* Waits up to timeout_ms until the LocalAgent's status row global_link
 * says "connected" (every GlobalAgent of its list). Returns 0, or -1 with
 * the last state in state (n bytes). */
int la_test_wait_linked(la_test_daemon_t *la, int timeout_ms, char *state,
                        size_t n);

#endif /* LA_TEST_MPI_H */
