/* SPDX-License-Identifier: BSD-3-Clause */
/* la_errcodes.h: LA's error codes, the one list every component answers
 * from. Every LA function returns 0 or one of these negative codes.
 *
 * It sits below everything: libla's public la.h includes it (so it is
 * installed next to la.h), and the lower layers (wire/, compact/, daemon/)
 * and the daemons use it without depending on libla. la_strerror (wire/la_errors.c), LA_strerror and
 * la_client_strerror are generated from LA_ERRNO_MAP, as is the Fortran
 * module's mirror check (tests/unit/test_fortran.c). Values are part of
 * the API and of the wire format (statuses and Error codes): never
 * renumber, only append.
 */
#ifndef LA_ERRCODES_H
#define LA_ERRCODES_H

/* Error codes: one list, from which LA_strerror() is generated. */
#define LA_ERRNO_MAP(XX)                                                     \
  XX(EINVAL, -1, "invalid argument")                                         \
  XX(ESTATE, -2, "call not valid in this state")                             \
  XX(ENOAGENT, -3, "no LA agent reachable")                                  \
  XX(EREFUSED, -4, "refused by the peer")                                    \
  XX(EAGENTLOST, -5, "connection to the LocalAgent lost; profiling stopped") \
  XX(EIPC, -6, "shared memory or semaphore operation failed")                \
  XX(ENOEVENT, -7, "performance counter event not available")                \
  XX(EPAPI, -8, "PAPI call failed")                                          \
  XX(ERANGE, -9, "element index out of range")                               \
  XX(ENOMEM, -10, "out of memory")                                           \
  XX(EDISABLED, -11, "profiling disabled")                                   \
  XX(EPROTO, -12, "malformed message")                                       \
  XX(EMSGSIZE, -13, "message larger than the allowed maximum")               \
  XX(ETRUNC, -14, "truncated data")                                          \
  XX(ETIMEDOUT, -15, "timed out")                                            \
  XX(EIO, -16, "input/output error")                                         \
  XX(EAUTH, -17, "authentication failed")                                    \
  XX(ENOTFOUND, -18, "not found")                                            \
  XX(ELIMIT, -19, "configured limit reached")                                \
  XX(ECONFIG, -20, "invalid configuration")                                  \
  XX(EVERSION, -21, "version mismatch")                                      \
  XX(ESKIPPED, -22, "cycle skipped: no free buffer")

/* clang-format off */
enum {
#define LA__ERR_ENUM(name, val, msg) LA_##name = (val),
  LA_ERRNO_MAP(LA__ERR_ENUM)
#undef LA__ERR_ENUM
  LA__ERR_LAST = -23 /* below every code: a valid code c has c > this */
};
/* clang-format on */

#endif /* LA_ERRCODES_H */
