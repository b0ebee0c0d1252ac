/* SPDX-License-Identifier: BSD-3-Clause */
/* store_errors.c: how the store's files report a failure: the reason
 * written into the store's error text (la_store_errmsg), the code returned
 * (contracts in store_internal.h). Below every other store file, calling
 * none of them, so the store's lifecycle (store.c) and its parts
 * (store_write.c, store_history.c, ...) all use it without depending on
 * each other.
 */
#include <stdarg.h>
#include <stdio.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"

int la__store_sqlerr(la_store_t *s, const char *what) {
  la__store_fmt(s->err, sizeof s->err, "%s: %s", what, la_db_errmsg(s->db));
  if (s->in_batch) s->failed = 1;
  return LA_EIO;
}

int la__store_corrupt(la_store_t *s, const char *fmt, ...) {
  int k = snprintf(s->err, sizeof s->err, "corrupt database: ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err + k, sizeof s->err - (size_t)k, fmt, ap);
  va_end(ap);
  return LA_EIO;
}

int la__store_no_app(la_store_t *s, int rc, const char *app_id,
                     const char *what) {
  if (rc != LA_DB_DONE) return la__store_sqlerr(s, what);
  la__store_fmt(s->err, sizeof s->err, "no application %s", app_id);
  return LA_ENOTFOUND;
}

int la__store_run(la_store_t *s, la_db_stmt_t *st, const char *what) {
  int rc = la_db_step(st);
  int r = 0;
  if (rc != LA_DB_DONE && rc != LA_DB_ROW) r = la__store_sqlerr(s, what);
  la_db_reset(st);
  return r;
}
