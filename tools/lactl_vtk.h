/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_vtk.h: `lactl export --format vtk` (lactl_vtk.c): one cycle's
 * weights as a legacy VTK file for ParaView and VisIt. */
#ifndef LACTL_VTK_H
#define LACTL_VTK_H

#include <stdio.h>

#include "lactl_numbering.h"
#include "lactl_util.h"

/* Writes the set t as a VTK document into f: image data of the global grid
 * when every rank registered a grid, else one vertex cell per element in
 * increasing global id; cell arrays "measured", "robust" (when every
 * present rank has robust weights), "rank" and, without a grid,
 * "GlobalIds". num gives the elements' numbering. t's weights choice is
 * switched while writing and restored. Returns LACTL_OK, or LACTL_FAIL
 * after a message on stderr. */
int lactl_vtk_write(FILE *f, lactl_num_t *num, la_traceset_t *t);

#endif /* LACTL_VTK_H */
