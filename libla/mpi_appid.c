/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_appid.c: one application id for every rank of an MPI job, agreed by
 * MPI itself.
 *
 * The launcher's environment (appid.c) names a job on every rank only under
 * some launchers (Slurm, PMIx); under MPICH's Hydra each node's ranks see
 * their own launcher proxy, so a job over two nodes would register as two
 * applications. Where MPI is initialised when LA_register runs (the
 * documented order: MPI_Init, then LA_register on every rank), rank 0 of
 * MPI_COMM_WORLD derives the id (la__app_id_job: the launcher's job id, or
 * its proxy's pid and start time and its host name, so a job started twice
 * gets two ids) and broadcasts it with PMPI_Bcast; every rank takes it.
 *
 * libla does not link MPI (non-MPI programs and Fortran use it too): the
 * PMPI_ entry points are looked up at run time with dlsym(RTLD_DEFAULT),
 * and the handles MPI_COMM_WORLD and MPI_BYTE depend on the library's ABI:
 *   - MPICH and its derivatives (Intel MPI, MVAPICH, Cray MPICH), told by
 *     MPI_Get_library_version: handles are ints, MPI_COMM_WORLD 0x44000000
 *     and MPI_BYTE 0x4c00010d (mpich/mpi.h);
 *   - Open MPI: handles are pointers to the exported objects
 *     ompi_mpi_comm_world and ompi_mpi_byte.
 * Anything else (no MPI in the process, MPI not initialised or already
 * finalised, a library not recognised, the MPI standard ABI of MPI 5 whose
 * handles differ) is not asked: the caller falls back to appid.c. A handle
 * of the wrong ABI would make MPI abort the job, so recognition is strict.
 *
 * Deliberately does not decide whether to take part: the broadcast is a
 * collective, and lifecycle.c calls it from state that is the same on every
 * rank (see LA_register in la.h). It uses no communicator of its own (one
 * would need a collective to create) and sends nothing but the one
 * broadcast of LA_MAX_APP_ID + 1 bytes.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "la_internal.h"

#define LA__MPICH_COMM_WORLD 0x44000000
#define LA__MPICH_BYTE 0x4c00010d
#define LA__MPI_VERSION_MAX 8192 /* MPICH's MPI_MAX_LIBRARY_VERSION_STRING */

typedef int (*la__mpi_flag_fn)(int *);
typedef int (*la__mpi_version_fn)(char *, int *);
/* MPICH ABI: integer handles */
typedef int (*la__mpich_rank_fn)(int, int *);
typedef int (*la__mpich_bcast_fn)(void *, int, int, int, int);
/* Open MPI ABI: pointer handles */
typedef int (*la__ompi_rank_fn)(void *, int *);
typedef int (*la__ompi_bcast_fn)(void *, int, void *, int, void *);

static void *la__sym(const char *name) {
  return dlsym(RTLD_DEFAULT, name);
}

/* Whether MPI_Get_library_version names an MPICH-ABI library. */
static int la__mpich_family(void) {
  la__mpi_version_fn ver =
      (la__mpi_version_fn)la__sym("PMPI_Get_library_version");
  if (!ver) return 0;
  static char v[LA__MPI_VERSION_MAX + 1];
  int n = 0;
  memset(v, 0, sizeof v);
  if (ver(v, &n) != 0) return 0;
  v[LA__MPI_VERSION_MAX] = '\0';
  return strstr(v, "MPICH") || strstr(v, "MVAPICH") ||
         strstr(v, "Intel(R) MPI");
}

int la__mpi_app_id(const char *app_name, const char *own_id, char *out,
                   size_t len, const char **why) {
  const char *dummy;
  if (!why) why = &dummy;
  out[0] = '\0';
  la__mpi_flag_fn initialized = (la__mpi_flag_fn)la__sym("PMPI_Initialized");
  la__mpi_flag_fn finalized = (la__mpi_flag_fn)la__sym("PMPI_Finalized");
  void *rank_fn = la__sym("PMPI_Comm_rank");
  void *bcast_fn = la__sym("PMPI_Bcast");
  if (!initialized || !finalized || !rank_fn || !bcast_fn) {
    *why = "no MPI library in the process";
    return 0;
  }
  int init = 0, fin = 0;
  if (initialized(&init) != 0 || !init) {
    *why = "MPI is not initialised";
    return 0;
  }
  if (finalized(&fin) != 0 || fin) {
    *why = "MPI is finalised";
    return 0;
  }
  /* the MPI 5 standard ABI (libmpi_abi) has other handle values */
  if (la__sym("MPI_Abi_get_version") || la__sym("PMPI_Abi_get_version")) {
    *why = "the MPI standard ABI is not supported";
    return 0;
  }
  void *ompi_world = la__sym("ompi_mpi_comm_world");
  void *ompi_byte = la__sym("ompi_mpi_byte");
  int ompi = ompi_world && ompi_byte;
  if (!ompi && !la__mpich_family()) {
    *why = "MPI library not recognised (neither MPICH's ABI nor Open MPI's)";
    return 0;
  }

  char buf[LA_MAX_APP_ID + 1];
  int rank = -1;
  int rc = ompi ? ((la__ompi_rank_fn)rank_fn)(ompi_world, &rank)
                : ((la__mpich_rank_fn)rank_fn)(LA__MPICH_COMM_WORLD, &rank);
  memset(buf, 0, sizeof buf);
  if (rc == 0 && rank == 0) {
    size_t nl = app_name ? strlen(app_name) : 0;
    if (own_id && *own_id)
      snprintf(buf, sizeof buf, "%s", own_id);
    else if (nl == 0 || nl > 64 || la__app_id_job(app_name, buf, sizeof buf))
      buf[0] = '\0'; /* none: every rank derives its own */
  }
  /* Every rank enters the broadcast, whatever happened above: a rank that
   * left here would leave the others waiting. */
  rc = ompi ? ((la__ompi_bcast_fn)bcast_fn)(buf, (int)sizeof buf, ompi_byte,
                                             0, ompi_world)
            : ((la__mpich_bcast_fn)bcast_fn)(buf, (int)sizeof buf,
                                              LA__MPICH_BYTE, 0,
                                              LA__MPICH_COMM_WORLD);
  buf[LA_MAX_APP_ID] = '\0';
  if (rc != 0) {
    *why = "MPI_Bcast failed";
    return 1;
  }
  snprintf(out, len, "%s", buf);
  *why = ompi ? "agreed over Open MPI" : "agreed over MPICH";
  return 1;
}
