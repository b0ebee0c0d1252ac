/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_appid_app.c: the smallest MPI program that registers with libla:
 * MPI_Init, LA_register on every rank, prints "rank R id ID", LA_finalize,
 * MPI_Finalize. test_mpi_appid compiles it at run time with each MPI
 * library's compiler wrapper found (mpicc for MPICH, mpicc.openmpi for
 * Open MPI) against build/lib/libla.a, so that both ABIs of
 * libla/mpi_appid.c run for real. No agent is needed: the id is chosen
 * before libla connects, and LA_appId keeps it when the agent is missing.
 */
#include <mpi.h>
#include <stdio.h>

#include "la.h"

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = LA_register("appidtest", rank, size, 4);
  printf("rank %d id %s rc %d\n", rank, LA_appId(), rc);
  fflush(stdout);
  LA_finalize();
  MPI_Finalize();
  return 0;
}
