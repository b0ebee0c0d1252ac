/* SPDX-License-Identifier: BSD-3-Clause */
/* la_limits.h: the version and the limits the application API, the wire
 * and the daemons share (an application id's bytes, channels per process,
 * a channel name's bytes). Included by the public la.h and installed next
 * to it; the daemons, libla_client and lactl include this header, not la.h,
 * so nothing below the application layer depends on its API.
 */
#ifndef LA_LIMITS_H
#define LA_LIMITS_H

#define LA_VERSION_MAJOR 0
#define LA_VERSION_MINOR 1
#define LA_VERSION_STRING "0.1.0"
#define LA_MAX_APP_ID 128      /* bytes of an application id */
#define LA_MAX_CHANNELS 16     /* channels per application process */
#define LA_MAX_CHANNEL_NAME 32 /* bytes of a channel name */

#endif /* LA_LIMITS_H */
