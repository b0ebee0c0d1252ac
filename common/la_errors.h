/* la_errors.h: the text of LA's error codes (the LA_ERRNO_MAP list of
 * la_errcodes.h), for every component: libla's LA_strerror, the daemons, lactl
 * and the client library all answer from this one list. */
#ifndef LA_ERRORS_H
#define LA_ERRORS_H

/* Text of an LA_E* code; "success" for 0, "unknown LA error code" else. */
const char *la_strerror(int code);

#endif
