/* la_errors.c: la_strerror, generated from LA_ERRNO_MAP (la_errcodes.h). */
#include "la_errors.h"

#include "la_errcodes.h"

const char *la_strerror(int code) {
  switch (code) {
  case 0:
    return "success";
#define LA__ERR_CASE(name, val, msg) \
  case val:                          \
    return msg;
    LA_ERRNO_MAP(LA__ERR_CASE)
#undef LA__ERR_CASE
  default:
    return "unknown LA error code";
  }
}
