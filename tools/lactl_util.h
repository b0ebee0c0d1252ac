/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_util.h: what lactl's subcommands share, in three parts:
 * lactl_opts.h (exit statuses, common options, argument parsing),
 * lactl_source.h (the data source: the GlobalAgent's feed or a store file)
 * and lactl_format.h (JSON, numbers, times, output files, tables).
 * Subcommands include this header.
 */
#ifndef LACTL_UTIL_H
#define LACTL_UTIL_H

#include "lactl_format.h"
#include "lactl_opts.h"
#include "lactl_source.h"

#endif /* LACTL_UTIL_H */
