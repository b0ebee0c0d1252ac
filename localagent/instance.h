/* SPDX-License-Identifier: BSD-3-Clause */
/* instance.h: the LocalAgent's instance id (Hello.instance), made once and
 * kept in its log directory, so that two LocalAgents with one host name
 * are told apart by the GlobalAgent and a restart keeps its identity. */
#ifndef LA_INSTANCE_H
#define LA_INSTANCE_H

#include <stddef.h>

#include "la_codec.h"

/* Reads dir/instance, or makes a new random id and writes it there (made:
 * 1). With dir "" (no log) the id is new for this run only (made: 1).
 * out: LA_INSTANCE_LEN lowercase hex digits. Returns 0, LA_ECONFIG (the
 * file holds no id: why names it and says to remove it) or LA_EIO (why
 * names the file and the system's reason). */
int la_instance_load(const char *dir, char out[LA_INSTANCE_LEN + 1],
                     int *made, char *why, size_t why_len);

#endif /* LA_INSTANCE_H */
