/* SPDX-License-Identifier: BSD-3-Clause */
/* la_msg_validate.h: the field checks behind la_msg_validate (la_codec.h),
 * in la_msg_validate.c; only la_codec.c calls them.
 */
#ifndef LA_MSG_VALIDATE_H
#define LA_MSG_VALIDATE_H

#include "la_codec.h"

/* la_msg_validate's checks of m's fields, m being a message of the
 * descriptor frame type `type` names (the caller checked that): 0, or
 * LA_EPROTO with the reason in why (n bytes). */
int la_msg_check_fields(uint16_t type, const ProtobufCMessage *m, char *why,
                        size_t n);

#endif /* LA_MSG_VALIDATE_H */
