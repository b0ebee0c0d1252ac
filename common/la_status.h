/* la_status.h: builds a StatusReply (key/value rows) for `lactl status`;
 * both daemons' control.c fill one with their counters. */
#ifndef LA_STATUS_H
#define LA_STATUS_H

#include "la_codec.h"

/* A new, empty reply for the named daemon; NULL when out of memory. */
La__StatusReply *la_status_new(const char *daemon);
/* Appends a row (value formatted, at most 255 bytes). Out of memory: the
 * row is left out. */
void la_status_row(La__StatusReply *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void la_status_free(La__StatusReply *r);

#endif
