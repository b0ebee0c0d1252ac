/* SPDX-License-Identifier: BSD-3-Clause */
/* instance.c: the LocalAgent's instance id, kept in its log directory as
 * the file "instance" (instance.h). */
#include "instance.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "la_auth.h"
#include "la_errcodes.h"
#include "la_errors.h"

#define LA__FILE "instance"

static int la__valid(const char *s, size_t n) {
  if (n != LA_INSTANCE_LEN) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return 1;
}

static void la__make(char out[LA_INSTANCE_LEN + 1]) {
  uint8_t r[LA_AUTH_NONCE_BYTES];
  la_auth_make_nonce(r);
  for (int i = 0; i < LA_INSTANCE_LEN / 2; i++)
    snprintf(out + 2 * i, 3, "%02x", r[i]);
}

/* Writes id to path by a temporary file renamed over it, flushed. */
static int la__write(const char *path, const char *id, char *why,
                     size_t why_len) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return la_errorf(why, why_len, LA_EIO, "cannot write %s: %s", tmp,
                     strerror(errno));
  char line[LA_INSTANCE_LEN + 2];
  int n = snprintf(line, sizeof line, "%s\n", id);
  int ok = write(fd, line, (size_t)n) == n && fsync(fd) == 0;
  int err = errno;
  if (close(fd) != 0 && ok) {
    ok = 0;
    err = errno;
  }
  if (!ok || rename(tmp, path) != 0) {
    if (ok) err = errno;
    unlink(tmp);
    return la_errorf(why, why_len, LA_EIO, "cannot write %s: %s", path,
                     strerror(err));
  }
  return 0;
}

int la_instance_load(const char *dir, char out[LA_INSTANCE_LEN + 1],
                     int *made, char *why, size_t why_len) {
  *made = 1;
  if (!dir[0]) {
    la__make(out);
    return 0;
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/" LA__FILE, dir);
  FILE *f = fopen(path, "re");
  if (f) {
    char buf[LA_INSTANCE_LEN + 8];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err)
      return la_errorf(why, why_len, LA_EIO, "cannot read %s: %s", path,
                       strerror(err));
    buf[n] = '\0';
    if (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
    if (!la__valid(buf, n))
      return la_errorf(why, why_len, LA_ECONFIG,
                       "%s does not hold an instance id (%d lowercase hex "
                       "digits): remove it, and a new one is made",
                       path, LA_INSTANCE_LEN);
    memcpy(out, buf, LA_INSTANCE_LEN + 1);
    *made = 0;
    return 0;
  }
  if (errno != ENOENT)
    return la_errorf(why, why_len, LA_EIO, "cannot read %s: %s", path,
                     strerror(errno));
  la__make(out);
  return la__write(path, out, why, why_len);
}
