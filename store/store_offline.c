/* SPDX-License-Identifier: BSD-3-Clause */
/* store_offline.c: opening a GlobalAgent's store to read it offline, with
 * no GlobalAgent (lactl --db, la-replay --db): an SQLite file read-only
 * through an SQLite URI (mode=ro: never written, never created, its
 * schema never made), or a PostgreSQL database with every transaction
 * read-only (libpq's options), so an empty database is not given LA's
 * schema either. The reasons name the file as the user gave it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "store.h"
#include "store_db.h"
#include "la_errcodes.h"

/* "file:PATH?mode=ro" with PATH percent-encoded where URIs need it. */
static int la__ro_uri(const char *path, char *buf, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  int n = snprintf(buf, len, "file:");
  if (n < 0 || (size_t)n >= len) return -1;
  o = (size_t)n;
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                (*p >= '0' && *p <= '9') || strchr("/-_.~", *p);
    if (o + 4 >= len) return -1;
    if (plain) {
      buf[o++] = (char)*p;
    } else {
      buf[o++] = '%';
      buf[o++] = hex[*p >> 4];
      buf[o++] = hex[*p & 15];
    }
  }
  n = snprintf(buf + o, len - o, "?mode=ro");
  return n < 0 || (size_t)n >= len - o ? -1 : 0;
}

static int la__open_pg(const char *url, la_store_t **out, char *why,
                       size_t why_len) {
  static const char ro[] = "-c default_transaction_read_only=on";
  char conn[4400], w[600] = "";
  int uri =
      !strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11);
  if (uri)
    snprintf(conn, sizeof conn,
             "%s%soptions=-c%%20default_transaction_read_only%%3Don", url,
             strchr(url, '?') ? "&" : "?");
  else
    snprintf(conn, sizeof conn, "%s options='%s'", url, ro);
  int rc = la_store_open(conn, 0, out, w, sizeof w);
  if (rc)
    snprintf(why, why_len, "cannot read the store: %s",
             strstr(w, "read-only") ? "not an LA store (no LA schema)" : w);
  return rc;
}

int la_store_open_offline(const char *path, la_store_t **out, char *why,
                          size_t why_len) {
  *out = NULL;
  if (la_db_is_pg_url(path)) return la__open_pg(path, out, why, why_len);
  struct stat sb;
  if (stat(path, &sb) != 0) {
    snprintf(why, why_len, "%s: %s", path, strerror(errno));
    return LA_ENOTFOUND;
  }
  if (!S_ISREG(sb.st_mode)) {
    snprintf(why, why_len, "%s: not a regular file", path);
    return LA_EINVAL;
  }
  sqlite3_config(SQLITE_CONFIG_URI, 1);
  char uri[4200], w[600] = "";
  if (la__ro_uri(path, uri, sizeof uri) != 0) {
    snprintf(why, why_len, "%s: path too long", path);
    return LA_EINVAL;
  }
  int rc = la_store_open(uri, 0, out, w, sizeof w);
  if (rc) {
    /* the store names the URI: name the file instead */
    size_t ul = strlen(uri);
    const char *rest = strncmp(w, uri, ul) ? w : w + ul;
    if (strstr(rest, "readonly"))
      rest = ": not an LA store (empty, or without LA's schema)";
    snprintf(why, why_len, "cannot read the store %s%s%s", path,
             rest == w && *w ? ": " : "", rest);
  }
  return rc;
}
