/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_config.c: libFuzzer target for the daemons' INI parser
 * (daemon/la_config.c), which reads files an operator (or anyone who can
 * write the configuration directory) wrote. The input up to the first NUL
 * byte is the INI file (read through a memfd, as la_cfg_load reads a path);
 * each later NUL-separated piece is a "key=value" command-line override for
 * la_cfg_set. The key table covers every value type, with a small string
 * capacity so truncation is exercised, and the GlobalAgent's real table is
 * loaded from the same file. Properties: no crash, leak or UB; every error
 * message is NUL-terminated inside its buffer; a configuration that loaded
 * prints (la_cfg_print) without error. It does not judge what keys mean.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "la_config.h"
#include "la.h"
#include "settings.h"

static void la__check(int ok) {
  if (!ok) abort();
}

typedef struct la__fz_cfg {
  char name[8];
  char path[64];
  int64_t count;
  uint64_t bytes;
  int flag;
  double ratio;
  int64_t wait_ms;
} la__fz_cfg_t;

static const la_cfg_key_t la__keys[] = {
    {"a", "name", LA_CFG_STR, offsetof(la__fz_cfg_t, name), 8, "x", 0, 0,
     "short string"},
    {"a", "path", LA_CFG_STR, offsetof(la__fz_cfg_t, path), 64, "", 0, 0,
     "string"},
    {"a", "count", LA_CFG_INT, offsetof(la__fz_cfg_t, count), 0, "3", -5,
     1e6, "integer"},
    {"b", "bytes", LA_CFG_SIZE, offsetof(la__fz_cfg_t, bytes), 0, "1M", 0,
     1e15, "size"},
    {"b", "flag", LA_CFG_BOOL, offsetof(la__fz_cfg_t, flag), 0, "no", 0, 1,
     "bool"},
    {"b", "ratio", LA_CFG_DOUBLE, offsetof(la__fz_cfg_t, ratio), 0, "0.5",
     -1, 1e9, "double"},
    {"c", "count", LA_CFG_MS, offsetof(la__fz_cfg_t, wait_ms), 0, "2s", 0,
     86400000.0, "duration (a name shared with [a])"},
    {NULL, NULL, 0, 0, 0, NULL, 0, 0, NULL}};

static void la__err_ok(const char *err, size_t len) {
  la__check(memchr(err, '\0', len) != NULL);
}

/* Loads the file at path into obj with keys; prints it when it loaded. */
static void la__load(const la_cfg_key_t *keys, void *obj, const char *path) {
  char err[512];
  memset(err, 'x', sizeof err);
  la__check(la_cfg_defaults(keys, obj, err, sizeof err) == 0);
  int rc = la_cfg_load(keys, obj, path, err, sizeof err);
  la__err_ok(err, sizeof err);
  la__check(rc == 0 || rc == LA_ECONFIG || rc == LA_EIO);
  if (rc == 0) {
    FILE *f = fopen("/dev/null", "w");
    if (f) {
      la_cfg_print(keys, obj, f);
      fclose(f);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t ini = nul ? (size_t)(nul - data) : size;
  int fd = memfd_create("fuzz_config", 0);
  if (fd < 0) return 0;
  if (ini && write(fd, data, ini) != (ssize_t)ini) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

  la__fz_cfg_t c;
  la__load(la__keys, &c, path);
  la_ga_settings_t *ga = malloc(sizeof *ga);
  if (ga) {
    la__load(la_ga_keys, ga, path);
    free(ga);
  }
  close(fd);

  /* overrides: "key=value" pieces after the first NUL */
  size_t off = ini + 1;
  while (nul && off < size) {
    const uint8_t *end = memchr(data + off, 0, size - off);
    size_t n = end ? (size_t)(end - (data + off)) : size - off;
    char *kv = malloc(n + 1);
    if (!kv) break;
    memcpy(kv, data + off, n);
    kv[n] = '\0';
    char *eq = strchr(kv, '=');
    const char *val = "";
    if (eq) {
      *eq = '\0';
      val = eq + 1;
    }
    char err[256];
    int rc = la_cfg_set(la__keys, &c, kv, val, err, sizeof err);
    la__check(rc == 0 || rc == LA_ECONFIG);
    if (rc != 0) la__err_ok(err, sizeof err);
    free(kv);
    off += n + 1;
  }
  return 0;
}
