/* SPDX-License-Identifier: BSD-3-Clause */
/* la_auth.c: the shared-secret challenge-response of la_auth.h, on
 * libsodium (BLAKE2b to derive the key from the secret file, HMAC-SHA-256 for
 * the one-way answer, keyed BLAKE2b and crypto_kdf for the mutual proofs and
 * session keys, crypto_verify_32 to compare in constant time). Reads the secret
 * file with one open() and fstat() on that descriptor, so what is checked is
 * what is read. Deliberately no sockets, no logging: callers report `why`.
 */
#include "la_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "la_errcodes.h"
#include "la_errors.h"

/* Key of the BLAKE2b hash that turns a secret file into an HMAC key: keeps
 * this derivation apart from any other use of the same file. 16 bytes. */
#define LA__KDF_KEY "LA-SECRET-KEY-v1"

int la_auth_init(void) {
  return sodium_init() < 0 ? LA_EAUTH : 0;
}

/* Reads up to cap bytes of fd into buf; sets *got. Returns 0 or errno. */
static int la__read_fd(int fd, uint8_t *buf, size_t cap, size_t *got) {
  size_t n = 0;
  while (n < cap) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    n += (size_t)r;
  }
  *got = n;
  return 0;
}

int la_auth_load_key(const char *path, la_auth_key_t *key, char *why,
                     size_t why_len) {
  if (key) sodium_memzero(key, sizeof *key);
  if (!path || !key) {
    la_errorf(why, why_len, 0, "no secret file given");
    return LA_EINVAL;
  }
  /* O_NONBLOCK: opening a FIFO planted at path must not hang the daemon. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    la_errorf(why, why_len, 0, "secret file %s: %s", path, strerror(errno));
    return LA_EIO;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    la_errorf(why, why_len, 0, "secret file %s: %s", path, strerror(e));
    return LA_EIO;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    la_errorf(why, why_len, 0, "secret file %s is not a regular file", path);
    return LA_EAUTH;
  }
  if (st.st_mode & 077) {
    close(fd);
    la_errorf(why, why_len, 0,
              "secret file %s has mode %04o: it must not be accessible by "
              "group or others (run: chmod 600 %s)",
              path, (unsigned)(st.st_mode & 07777), path);
    return LA_EAUTH;
  }
  if (st.st_size > LA_AUTH_SECRET_MAX + 2) {
    close(fd);
    la_errorf(why, why_len, 0,
              "secret file %s is too large (%lld bytes; max %d)", path,
              (long long)st.st_size, LA_AUTH_SECRET_MAX);
    return LA_EAUTH;
  }
  /* One byte more than allowed, to notice a file that grew meanwhile. */
  size_t cap = LA_AUTH_SECRET_MAX + 3, len = 0;
  uint8_t *buf = malloc(cap);
  if (!buf) {
    close(fd);
    la_errorf(why, why_len, 0, "secret file %s: out of memory", path);
    return LA_EIO;
  }
  int e = la__read_fd(fd, buf, cap, &len);
  close(fd);
  int rc = 0;
  if (e) {
    la_errorf(why, why_len, 0, "secret file %s: %s", path, strerror(e));
    rc = LA_EIO;
  } else {
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) len--;
    if (len < LA_AUTH_SECRET_MIN) {
      la_errorf(why, why_len, 0,
                "secret file %s is too short (%zu bytes; min %d)", path, len,
                LA_AUTH_SECRET_MIN);
      rc = LA_EAUTH;
    } else if (len > LA_AUTH_SECRET_MAX) {
      la_errorf(why, why_len, 0, "secret file %s is too large (max %d bytes)",
                path, LA_AUTH_SECRET_MAX);
      rc = LA_EAUTH;
    } else {
      crypto_generichash(key->k, sizeof key->k, buf, len,
                         (const unsigned char *)LA__KDF_KEY,
                         sizeof LA__KDF_KEY - 1);
    }
  }
  sodium_memzero(buf, cap);
  free(buf);
  return rc;
}

void la_auth_make_nonce(uint8_t nonce[LA_AUTH_NONCE_BYTES]) {
  randombytes_buf(nonce, LA_AUTH_NONCE_BYTES);
}

int la_auth_mac(const la_auth_key_t *key, const uint8_t *nonce,
                size_t nonce_len, const char *host,
                uint8_t mac[LA_AUTH_MAC_BYTES]) {
  if (!mac) return LA_EINVAL;
  if (!key || !nonce || !host || nonce_len < LA_AUTH_NONCE_MIN ||
      nonce_len > LA_AUTH_NONCE_MAX) {
    sodium_memzero(mac, LA_AUTH_MAC_BYTES);
    return LA_EINVAL;
  }
  crypto_auth_hmacsha256_state st;
  uint8_t nl = (uint8_t)nonce_len;
  crypto_auth_hmacsha256_init(&st, key->k, sizeof key->k);
  crypto_auth_hmacsha256_update(&st, (const unsigned char *)LA_AUTH_DOMAIN,
                                sizeof LA_AUTH_DOMAIN - 1);
  crypto_auth_hmacsha256_update(&st, &nl, 1);
  crypto_auth_hmacsha256_update(&st, nonce, nonce_len);
  crypto_auth_hmacsha256_update(&st, (const unsigned char *)host, strlen(host));
  crypto_auth_hmacsha256_final(&st, mac);
  sodium_memzero(&st, sizeof st);
  return 0;
}

int la_auth_verify(const la_auth_key_t *key, const uint8_t *nonce,
                   size_t nonce_len, const char *host, const uint8_t *mac,
                   size_t mac_len) {
  uint8_t want[LA_AUTH_MAC_BYTES];
  if (!mac || mac_len != LA_AUTH_MAC_BYTES) return LA_EAUTH;
  if (la_auth_mac(key, nonce, nonce_len, host, want) != 0) return LA_EAUTH;
  int ok = crypto_verify_32(want, mac) == 0;
  sodium_memzero(want, sizeof want);
  return ok ? 0 : LA_EAUTH;
}

/* crypto_kdf context of the session derivations: exactly 8 bytes. */
#define LA__LINK_CTX "LA-LINK2"

/* Appends one length-prefixed value to the transcript hash. */
static void la__lv(crypto_generichash_state *h, const void *p, size_t n) {
  uint8_t l = (uint8_t)n;
  crypto_generichash_update(h, &l, 1);
  crypto_generichash_update(h, p, n);
}

/* Appends a uint32 in big-endian order to the transcript hash. */
static void la__u32(crypto_generichash_state *h, uint32_t v) {
  uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8),
                  (uint8_t)v};
  crypto_generichash_update(h, b, sizeof b);
}

int la_auth_session_derive(const la_auth_key_t *key, uint32_t protocol,
                           const char *agent, const char *server,
                           const uint8_t *agent_nonce, size_t agent_nonce_len,
                           const uint8_t *server_nonce, size_t server_nonce_len,
                           la_auth_session_t *out) {
  return la_auth_session_derive_neg(key, protocol, agent, server, agent_nonce,
                                    agent_nonce_len, server_nonce,
                                    server_nonce_len, NULL, 0, 0, out);
}

void la_auth_identity(const char *host, const char *instance, char *out,
                      size_t out_len) {
  if (instance && instance[0])
    snprintf(out, out_len, "%s/%s", host, instance);
  else
    snprintf(out, out_len, "%s", host);
}

int la_auth_session_derive_neg(
    const la_auth_key_t *key, uint32_t protocol, const char *agent,
    const char *server, const uint8_t *agent_nonce, size_t agent_nonce_len,
    const uint8_t *server_nonce, size_t server_nonce_len,
    const uint32_t *offer, size_t offer_len, uint32_t choice,
    la_auth_session_t *out) {
  if (!out) return LA_EINVAL;
  sodium_memzero(out, sizeof *out);
  size_t al = agent ? strlen(agent) : 0, sl = server ? strlen(server) : 0;
  if (!key || !agent_nonce || !server_nonce || al == 0 || al > 255 || sl == 0 ||
      sl > 255 || agent_nonce_len < LA_AUTH_NONCE_MIN ||
      agent_nonce_len > LA_AUTH_NONCE_MAX ||
      server_nonce_len < LA_AUTH_NONCE_MIN ||
      server_nonce_len > LA_AUTH_NONCE_MAX ||
      (offer_len > 0 && (!offer || offer_len > LA_AUTH_OFFER_MAX || !choice)))
    return LA_EINVAL;
  uint8_t master[crypto_kdf_KEYBYTES];
  crypto_generichash_state h;
  crypto_generichash_init(&h, key->k, sizeof key->k, sizeof master);
  crypto_generichash_update(&h, (const unsigned char *)LA_AUTH_DOMAIN2,
                            sizeof LA_AUTH_DOMAIN2 - 1);
  la__u32(&h, protocol);
  la__lv(&h, agent, al);
  la__lv(&h, server, sl);
  la__lv(&h, agent_nonce, agent_nonce_len);
  la__lv(&h, server_nonce, server_nonce_len);
  if (offer_len > 0) { /* the negotiation; absent: an older peer's T */
    uint8_t n = (uint8_t)offer_len;
    crypto_generichash_update(&h, (const unsigned char *)LA_AUTH_DOMAIN_CIPHER,
                              sizeof LA_AUTH_DOMAIN_CIPHER - 1);
    crypto_generichash_update(&h, &n, 1);
    for (size_t i = 0; i < offer_len; i++) la__u32(&h, offer[i]);
    la__u32(&h, choice);
  }
  crypto_generichash_final(&h, master, sizeof master);
  crypto_kdf_derive_from_key(out->agent_proof, sizeof out->agent_proof, 1,
                             LA__LINK_CTX, master);
  crypto_kdf_derive_from_key(out->server_proof, sizeof out->server_proof, 2,
                             LA__LINK_CTX, master);
  crypto_kdf_derive_from_key(out->key_a2g, sizeof out->key_a2g, 3, LA__LINK_CTX,
                             master);
  crypto_kdf_derive_from_key(out->key_g2a, sizeof out->key_g2a, 4, LA__LINK_CTX,
                             master);
  sodium_memzero(master, sizeof master);
  sodium_memzero(&h, sizeof h);
  return 0;
}

int la_auth_proof_check(const uint8_t want[LA_AUTH_PROOF_BYTES],
                        const uint8_t *got, size_t got_len) {
  if (!want || !got || got_len != LA_AUTH_PROOF_BYTES) return LA_EAUTH;
  return crypto_verify_32(want, got) == 0 ? 0 : LA_EAUTH;
}

void la_auth_session_wipe(la_auth_session_t *s) {
  if (s) sodium_memzero(s, sizeof *s);
}

void la_auth_key_wipe(la_auth_key_t *key) {
  if (key) sodium_memzero(key, sizeof *key);
}

int la_auth_generate_secret_file(const char *path, char *why, size_t why_len) {
  if (!path || !*path) {
    la_errorf(why, why_len, 0, "no secret file given");
    return LA_EINVAL;
  }
  if (sodium_init() < 0) {
    la_errorf(why, why_len, 0, "secret file %s: libsodium failed to start",
              path);
    return LA_EIO;
  }
  /* O_EXCL also refuses a symbolic link, dangling or not. */
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0) {
    int e = errno;
    la_errorf(why, why_len, 0, "secret file %s: %s%s", path, strerror(e),
              e == EEXIST ? " (refusing to overwrite it)" : "");
    return LA_EIO;
  }
  uint8_t raw[32];
  char text[2 * sizeof raw + 2];
  randombytes_buf(raw, sizeof raw);
  sodium_bin2hex(text, sizeof text, raw, sizeof raw);
  text[2 * sizeof raw] = '\n';
  size_t n = 2 * sizeof raw + 1, off = 0;
  int e = 0;
  if (fchmod(fd, 0600) != 0) e = errno; /* the umask may have cut bits */
  while (!e && off < n) {
    ssize_t w = write(fd, text + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      e = w < 0 ? errno : EIO;
    else
      off += (size_t)w;
  }
  if (!e && fsync(fd) != 0) e = errno;
  if (close(fd) != 0 && !e) e = errno;
  sodium_memzero(raw, sizeof raw);
  sodium_memzero(text, sizeof text);
  if (e) {
    unlink(path);
    la_errorf(why, why_len, 0, "secret file %s: %s", path, strerror(e));
    return LA_EIO;
  }
  return 0;
}
