/* SPDX-License-Identifier: BSD-3-Clause */
/* test_auth.c: unit tests of the shared-secret challenge-response
 * (daemon/la_auth.{h,c}).
 *
 * Covers: the MAC round trip; refusals for a wrong key, nonce, host, a
 * truncated, extended or flipped MAC and bad arguments; a known-answer check
 * that pins the exact MAC input documented in docs/protocol.md against
 * libsodium's one-shot HMAC; the nonce/host split cannot be shifted; nonces
 * differ; secret files: 0600/0400 accepted, 0644/0640/0604 refused naming the
 * mode, missing file (LA_EIO naming it), directory and FIFO (refused without
 * hanging), too short, too long, trailing newline ignored, same content same
 * key, other content other key, binary secrets; generation: mode 0600 under
 * a permissive umask, 64 hex digits, loadable, never overwrites (a file or a
 * dangling link). Files live in a private temporary directory removed at the
 * end.
 *
 * The link between the agents (la_auth_session_derive, daemon/la_secure.c):
 * both sides derive the same proofs and keys, the two proofs differ (no
 * reflection), every transcript input and the key change everything;
 * records round-trip, and a flipped byte, a replayed, reordered, dropped or
 * truncated record, or a record of the other direction does not open (and
 * nothing opens after it). With the real daemons (tests/support
 * la_test_daemon.h): traces arrive end to end over an encrypted link (no
 * application id in clear on the wire); a wrong secret, or a secret on one
 * side only, is refused with a clear line in both logs; a fake GlobalAgent
 * that does not know the secret is refused by the LocalAgent, which sends it
 * nothing and drops nothing; a TCP relay that flips one byte of, or replays,
 * an encrypted record in flight makes the GlobalAgent close the link with
 * the reason logged, and after the LocalAgent reconnects every trace is
 * stored exactly once. Without a secret on either side the link works
 * unencrypted, as before, and both daemons warn.
 *
 * Cipher negotiation (daemon/la_cipher.c): AES-256-GCM records refuse the
 * same tampering as secretstream's, opened in place or not, and records
 * of one cipher do not open under the other; across 2^32 AES-256-GCM
 * records both sides rekey alike; the settings' values, offers and
 * choices; the transcript binds the offer (its order too) and the choice,
 * and without an offer it is the transcript of before. With the real
 * GlobalAgent: every offer links with the cipher expected, records flow,
 * agents.cipher = xchacha20 refuses an AES-only offer naming both; a
 * LocalAgent with global.cipher = legacy (an older one) links with
 * XChaCha20 and its traces arrive; a relay that strikes AES-256-GCM from
 * the offer, removes the offer, adds AES-256-GCM to it or changes the
 * choice fails the handshake (and the real LocalAgent refuses a Challenge
 * without a choice, saying what to set), while the untouched relay links
 * with AES-256-GCM.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "la.h"
#include "la_auth.h"
#include "la_secure.h"
#include "la_sockio.h"
#include "la_test_agent.h"
#include "la_test_daemon.h"
#include "la_test_link.h"
#include "la_test_stack.h"
#include "la_test_sql.h"

typedef struct {
  char dir[64];
  char path[128];
} fx_t;

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/la_test_auth.XXXXXX");
  if (!mkdtemp(f->dir) || la_auth_init() != 0) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  int rc = system(cmd);
  free(f);
  return rc == 0 ? 0 : -1;
}

/* Writes len bytes to dir/name with the given mode; returns the path. */
static const char *put(fx_t *f, const char *name, const void *data, size_t len,
                       mode_t mode) {
  snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
  unlink(f->path);
  int fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, data, len), (ssize_t)len);
  assert_int_equal(fchmod(fd, mode), 0);
  close(fd);
  return f->path;
}

static const char *puts_(fx_t *f, const char *name, const char *text,
                         mode_t mode) {
  return put(f, name, text, strlen(text), mode);
}

static void key_of(fx_t *f, const char *text, la_auth_key_t *k) {
  char why[256];
  const char *p = puts_(f, "k", text, 0600);
  assert_int_equal(la_auth_load_key(p, k, why, sizeof why), 0);
}

/* ------------------------------------------------------------------ MAC */

static void mac_round_trip(void **state) {
  la_auth_key_t k;
  key_of(*state, "correct horse battery staple\n", &k);
  uint8_t nonce[LA_AUTH_NONCE_BYTES], mac[LA_AUTH_MAC_BYTES];
  la_auth_make_nonce(nonce);
  assert_int_equal(la_auth_mac(&k, nonce, sizeof nonce, "node17", mac), 0);
  assert_int_equal(
      la_auth_verify(&k, nonce, sizeof nonce, "node17", mac, sizeof mac), 0);
  /* Deterministic: same inputs, same answer. */
  uint8_t mac2[LA_AUTH_MAC_BYTES];
  la_auth_mac(&k, nonce, sizeof nonce, "node17", mac2);
  assert_memory_equal(mac, mac2, sizeof mac);
  la_auth_key_wipe(&k);
}

static void mac_refusals(void **state) {
  la_auth_key_t k, other;
  key_of(*state, "correct horse battery staple", &k);
  key_of(*state, "correct horse battery stapler", &other);
  uint8_t nonce[LA_AUTH_NONCE_BYTES], mac[LA_AUTH_MAC_BYTES + 1];
  la_auth_make_nonce(nonce);
  assert_int_equal(la_auth_mac(&k, nonce, sizeof nonce, "node17", mac), 0);
  mac[LA_AUTH_MAC_BYTES] = 0;

  /* wrong key */
  assert_int_equal(la_auth_verify(&other, nonce, sizeof nonce, "node17", mac,
                                  LA_AUTH_MAC_BYTES),
                   LA_EAUTH);
  /* wrong nonce (one bit), shorter nonce */
  uint8_t n2[LA_AUTH_NONCE_BYTES];
  memcpy(n2, nonce, sizeof n2);
  n2[5] ^= 1;
  assert_int_equal(
      la_auth_verify(&k, n2, sizeof n2, "node17", mac, LA_AUTH_MAC_BYTES),
      LA_EAUTH);
  assert_int_equal(
      la_auth_verify(&k, nonce, 31, "node17", mac, LA_AUTH_MAC_BYTES),
      LA_EAUTH);
  /* wrong host, host prefix, host case; truncated, extended, empty MAC */
  static const struct {
    const char *host;
    size_t mac_len;
  } bad[] = {{"node18", 32}, {"node1", 32},  {"NODE17", 32}, {"node17", 31},
             {"node17", 16}, {"node17", 33}, {"node17", 0}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (la_auth_verify(&k, nonce, sizeof nonce, bad[i].host, mac,
                       bad[i].mac_len) != LA_EAUTH)
      fail_msg("accepted: host %s, a MAC of %zu bytes", bad[i].host,
               bad[i].mac_len);
  /* flipped MAC */
  for (int bit = 0; bit < 8 * LA_AUTH_MAC_BYTES; bit += 37) {
    mac[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    assert_int_equal(la_auth_verify(&k, nonce, sizeof nonce, "node17", mac, 32),
                     LA_EAUTH);
    mac[bit / 8] ^= (uint8_t)(1u << (bit % 8));
  }
  assert_int_equal(la_auth_verify(&k, nonce, sizeof nonce, "node17", mac, 32),
                   0);
  /* bad arguments */
  assert_int_equal(la_auth_verify(NULL, nonce, 32, "node17", mac, 32),
                   LA_EAUTH);
  assert_int_equal(la_auth_verify(&k, NULL, 32, "node17", mac, 32), LA_EAUTH);
  assert_int_equal(la_auth_verify(&k, nonce, 32, NULL, mac, 32), LA_EAUTH);
  assert_int_equal(la_auth_verify(&k, nonce, 32, "node17", NULL, 32), LA_EAUTH);
}

static void mac_bad_arguments_zero_output(void **state) {
  la_auth_key_t k;
  key_of(*state, "0123456789abcdef", &k);
  uint8_t nonce[LA_AUTH_NONCE_MAX + 1] = {0}, mac[LA_AUTH_MAC_BYTES];
  uint8_t zero[LA_AUTH_MAC_BYTES] = {0};
  memset(mac, 0xaa, sizeof mac);
  assert_int_equal(la_auth_mac(&k, nonce, LA_AUTH_NONCE_MIN - 1, "h", mac),
                   LA_EINVAL);
  assert_memory_equal(mac, zero, sizeof mac);
  memset(mac, 0xaa, sizeof mac);
  assert_int_equal(la_auth_mac(&k, nonce, LA_AUTH_NONCE_MAX + 1, "h", mac),
                   LA_EINVAL);
  assert_memory_equal(mac, zero, sizeof mac);
  assert_int_equal(la_auth_mac(&k, nonce, 32, NULL, mac), LA_EINVAL);
  assert_int_equal(la_auth_mac(NULL, nonce, 32, "h", mac), LA_EINVAL);
  assert_int_equal(la_auth_mac(&k, nonce, 32, "h", NULL), LA_EINVAL);
  assert_int_equal(la_auth_mac(&k, nonce, LA_AUTH_NONCE_MIN, "h", mac), 0);
  assert_int_equal(la_auth_mac(&k, nonce, LA_AUTH_NONCE_MAX, "h", mac), 0);
}

/* Pins the wire definition: HMAC-SHA-256(key, "LA-AUTH-1" || uint8(len) ||
 * nonce || host), and the key derivation BLAKE2b-256(key="LA-SECRET-KEY-v1",
 * file contents without trailing newlines). Another implementation of the
 * protocol must reproduce both. */
static void mac_known_answer(void **state) {
  const char *secret = "a shared secret of some length";
  la_auth_key_t k;
  key_of(*state, secret, &k);
  uint8_t want_key[32];
  crypto_generichash(want_key, 32, (const uint8_t *)secret, strlen(secret),
                     (const uint8_t *)"LA-SECRET-KEY-v1", 16);
  assert_memory_equal(k.k, want_key, 32);

  uint8_t nonce[LA_AUTH_NONCE_BYTES];
  for (int i = 0; i < LA_AUTH_NONCE_BYTES; i++) nonce[i] = (uint8_t)i;
  uint8_t msg[9 + 1 + LA_AUTH_NONCE_BYTES + 6];
  memcpy(msg, "LA-AUTH-1", 9);
  msg[9] = LA_AUTH_NONCE_BYTES;
  memcpy(msg + 10, nonce, LA_AUTH_NONCE_BYTES);
  memcpy(msg + 10 + LA_AUTH_NONCE_BYTES, "node17", 6);
  uint8_t want[32], mac[32];
  crypto_auth_hmacsha256(want, msg, sizeof msg, k.k);
  assert_int_equal(la_auth_mac(&k, nonce, sizeof nonce, "node17", mac), 0);
  assert_memory_equal(mac, want, 32);
  assert_int_equal(crypto_auth_hmacsha256_verify(mac, msg, sizeof msg, k.k), 0);
}

/* A MAC made for a longer nonce that ends with host bytes must not pass for
 * the shorter nonce and a longer host ("node" + "17" vs "node17"): the
 * length byte separates them. */
static void mac_split_is_unambiguous(void **state) {
  la_auth_key_t k;
  key_of(*state, "0123456789abcdef0123", &k);
  uint8_t n32[32], n33[33], mac[32];
  la_auth_make_nonce(n32);
  memcpy(n33, n32, 32);
  n33[32] = 'x';
  assert_int_equal(la_auth_mac(&k, n33, 33, "node17", mac), 0);
  assert_int_equal(la_auth_verify(&k, n32, 32, "xnode17", mac, 32), LA_EAUTH);
  assert_int_equal(la_auth_verify(&k, n33, 33, "node17", mac, 32), 0);
}

static void nonces_differ(void **state) {
  uint8_t a[LA_AUTH_NONCE_BYTES], b[LA_AUTH_NONCE_BYTES];
  uint8_t zero[LA_AUTH_NONCE_BYTES] = {0};
  la_auth_make_nonce(a);
  la_auth_make_nonce(b);
  assert_memory_not_equal(a, b, sizeof a);
  assert_memory_not_equal(a, zero, sizeof a);
}

/* ----------------------------------------------------------- key files */

static void key_file_modes(void **state) {
  fx_t *f = *state;
  la_auth_key_t k;
  char why[512];
  const char *s = "0123456789abcdef-secret\n";
  assert_int_equal(
      la_auth_load_key(puts_(f, "s600", s, 0600), &k, why, sizeof why), 0);
  assert_int_equal(
      la_auth_load_key(puts_(f, "s400", s, 0400), &k, why, sizeof why), 0);
  static const struct {
    mode_t mode;
    const char *text;
  } bad[] = {{0644, "0644"}, {0640, "0640"}, {0604, "0604"},
             {0660, "0660"}, {0601, "0601"}, {0610, "0610"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(&k, 0x55, sizeof k);
    why[0] = '\0';
    const char *p = puts_(f, "open", s, bad[i].mode);
    assert_int_equal(la_auth_load_key(p, &k, why, sizeof why), LA_EAUTH);
    assert_non_null(strstr(why, bad[i].text));
    assert_non_null(strstr(why, p));
    assert_non_null(strstr(why, "group or others"));
    la_auth_key_t zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&k, &zero, sizeof k); /* zeroed on failure */
  }
}

static void key_file_missing(void **state) {
  fx_t *f = *state;
  la_auth_key_t k;
  char why[512], path[160];
  snprintf(path, sizeof path, "%s/does-not-exist", f->dir);
  assert_int_equal(la_auth_load_key(path, &k, why, sizeof why), LA_EIO);
  assert_non_null(strstr(why, path));
  assert_non_null(strstr(why, strerror(ENOENT)));
  assert_int_equal(la_auth_load_key(NULL, &k, why, sizeof why), LA_EINVAL);
  assert_int_equal(la_auth_load_key(path, NULL, why, sizeof why), LA_EINVAL);
  /* why may be NULL */
  assert_int_equal(la_auth_load_key(path, &k, NULL, 0), LA_EIO);
}

static void key_file_not_regular(void **state) {
  fx_t *f = *state;
  la_auth_key_t k;
  char why[512], path[160];
  snprintf(path, sizeof path, "%s/adir", f->dir);
  assert_int_equal(mkdir(path, 0700), 0);
  assert_int_equal(la_auth_load_key(path, &k, why, sizeof why), LA_EAUTH);
  assert_non_null(strstr(why, "not a regular file"));
  /* A FIFO with no writer: refused at once, never a hang. */
  snprintf(path, sizeof path, "%s/afifo", f->dir);
  assert_int_equal(mkfifo(path, 0600), 0);
  assert_int_equal(la_auth_load_key(path, &k, why, sizeof why), LA_EAUTH);
  assert_non_null(strstr(why, "not a regular file"));
}

static void key_file_lengths(void **state) {
  fx_t *f = *state;
  la_auth_key_t k;
  char why[512];
  /* 15 bytes (plus newline) is too short; 16 is enough. */
  assert_int_equal(la_auth_load_key(puts_(f, "s", "0123456789abcde\n", 0600),
                                    &k, why, sizeof why),
                   LA_EAUTH);
  assert_non_null(strstr(why, "too short"));
  assert_non_null(strstr(why, f->path));
  assert_int_equal(
      la_auth_load_key(puts_(f, "s", "0123456789abcde\r\n\n", 0600), &k, why,
                       sizeof why),
      LA_EAUTH);
  assert_int_equal(
      la_auth_load_key(puts_(f, "s", "", 0600), &k, why, sizeof why), LA_EAUTH);
  assert_int_equal(la_auth_load_key(puts_(f, "s", "0123456789abcdef\n", 0600),
                                    &k, why, sizeof why),
                   0);
  /* Too large. */
  size_t big = LA_AUTH_SECRET_MAX + 10;
  char *b = malloc(big);
  assert_non_null(b);
  memset(b, 'z', big);
  assert_int_equal(
      la_auth_load_key(put(f, "big", b, big, 0600), &k, why, sizeof why),
      LA_EAUTH);
  assert_non_null(strstr(why, "too large"));
  /* The maximum itself is fine. */
  assert_int_equal(la_auth_load_key(put(f, "max", b, LA_AUTH_SECRET_MAX, 0600),
                                    &k, why, sizeof why),
                   0);
  free(b);
}

static void key_derivation(void **state) {
  fx_t *f = *state;
  la_auth_key_t a, b, c, d, e;
  char why[256];
  assert_int_equal(la_auth_load_key(puts_(f, "a", "the same secret!!", 0600),
                                    &a, why, sizeof why),
                   0);
  assert_int_equal(la_auth_load_key(f->path, &b, why, sizeof why), 0);
  assert_memory_equal(&a, &b, sizeof a); /* same file, same key */
  /* trailing newline(s) ignored */
  assert_int_equal(
      la_auth_load_key(puts_(f, "c", "the same secret!!\r\n", 0600), &c, why,
                       sizeof why),
      0);
  assert_memory_equal(&a, &c, sizeof a);
  /* other content, other key */
  assert_int_equal(la_auth_load_key(puts_(f, "d", "the same secret!?", 0600),
                                    &d, why, sizeof why),
                   0);
  assert_memory_not_equal(&a, &d, sizeof a);
  /* binary secret with NUL bytes */
  uint8_t bin[32];
  for (int i = 0; i < 32; i++) bin[i] = (uint8_t)(i * 7);
  assert_int_equal(
      la_auth_load_key(put(f, "e", bin, sizeof bin, 0600), &e, why, sizeof why),
      0);
  assert_memory_not_equal(&a, &e, sizeof a);
  la_auth_key_wipe(&e);
  la_auth_key_t zero;
  memset(&zero, 0, sizeof zero);
  assert_memory_equal(&e, &zero, sizeof e);
  la_auth_key_wipe(NULL);
}

/* ---------------------------------------------------------- generation */

static void generate_secret(void **state) {
  fx_t *f = *state;
  char path[160], why[512];
  snprintf(path, sizeof path, "%s/generated", f->dir);
  mode_t old = umask(0); /* the file must still be 0600 */
  int rc = la_auth_generate_secret_file(path, why, sizeof why);
  umask(old);
  assert_int_equal(rc, 0);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_mode & 07777, 0600);
  assert_int_equal(st.st_size, 65);
  char text[80] = {0};
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  assert_int_equal(fread(text, 1, sizeof text - 1, fp), 65);
  fclose(fp);
  assert_int_equal(text[64], '\n');
  for (int i = 0; i < 64; i++)
    assert_non_null(strchr("0123456789abcdef", text[i]));
  la_auth_key_t k1, k2;
  assert_int_equal(la_auth_load_key(path, &k1, why, sizeof why), 0);

  /* Never overwrites: refused, content unchanged. */
  assert_int_equal(la_auth_generate_secret_file(path, why, sizeof why), LA_EIO);
  assert_non_null(strstr(why, path));
  assert_non_null(strstr(why, strerror(EEXIST)));
  assert_int_equal(la_auth_load_key(path, &k2, why, sizeof why), 0);
  assert_memory_equal(&k1, &k2, sizeof k1);

  /* Two generated secrets differ. */
  char path2[160];
  snprintf(path2, sizeof path2, "%s/generated2", f->dir);
  assert_int_equal(la_auth_generate_secret_file(path2, why, sizeof why), 0);
  assert_int_equal(la_auth_load_key(path2, &k2, why, sizeof why), 0);
  assert_memory_not_equal(&k1, &k2, sizeof k1);

  /* A dangling symbolic link is not followed to create its target. */
  char link[160], target[160];
  snprintf(link, sizeof link, "%s/link", f->dir);
  snprintf(target, sizeof target, "%s/target", f->dir);
  assert_int_equal(symlink(target, link), 0);
  assert_int_equal(la_auth_generate_secret_file(link, why, sizeof why), LA_EIO);
  assert_int_equal(access(target, F_OK), -1);

  /* No such directory; NULL path. */
  snprintf(path, sizeof path, "%s/no/such/dir", f->dir);
  assert_int_equal(la_auth_generate_secret_file(path, why, sizeof why), LA_EIO);
  assert_non_null(strstr(why, strerror(ENOENT)));
  assert_int_equal(la_auth_generate_secret_file(NULL, why, sizeof why),
                   LA_EINVAL);
}

/* ------------------------------------------------ session derivation --- */

static void fill(uint8_t *p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(v + i);
}

static void session_both_sides_agree(void **state) {
  (void)state;
  la_auth_key_t k, k2;
  fill(k.k, sizeof k.k, 1);
  fill(k2.k, sizeof k2.k, 2);
  uint8_t an[32], sn[32];
  fill(an, sizeof an, 10);
  fill(sn, sizeof sn, 50);
  la_auth_session_t a, b, x;
  assert_int_equal(
      la_auth_session_derive(&k, 1, "node1", "front", an, 32, sn, 32, &a), 0);
  assert_int_equal(
      la_auth_session_derive(&k, 1, "node1", "front", an, 32, sn, 32, &b), 0);
  assert_memory_equal(&a, &b, sizeof a);
  /* the two proofs and the two keys all differ: nothing can be reflected */
  assert_memory_not_equal(a.agent_proof, a.server_proof, 32);
  assert_memory_not_equal(a.key_a2g, a.key_g2a, 32);
  assert_int_equal(la_auth_proof_check(a.agent_proof, b.agent_proof, 32), 0);
  assert_int_equal(la_auth_proof_check(a.agent_proof, a.server_proof, 32),
                   LA_EAUTH);
  assert_int_equal(la_auth_proof_check(a.agent_proof, b.agent_proof, 31),
                   LA_EAUTH);
  /* every input of the transcript, and the key, changes everything */
  la_auth_session_derive(&k2, 1, "node1", "front", an, 32, sn, 32, &x);
  assert_memory_not_equal(a.agent_proof, x.agent_proof, 32);
  assert_memory_not_equal(a.key_a2g, x.key_a2g, 32);
  la_auth_session_derive(&k, 2, "node1", "front", an, 32, sn, 32, &x);
  assert_memory_not_equal(a.server_proof, x.server_proof, 32);
  la_auth_session_derive(&k, 1, "node2", "front", an, 32, sn, 32, &x);
  assert_memory_not_equal(a.agent_proof, x.agent_proof, 32);
  la_auth_session_derive(&k, 1, "node1", "fronT", an, 32, sn, 32, &x);
  assert_memory_not_equal(a.agent_proof, x.agent_proof, 32);
  an[31] ^= 1;
  la_auth_session_derive(&k, 1, "node1", "front", an, 32, sn, 32, &x);
  assert_memory_not_equal(a.agent_proof, x.agent_proof, 32);
  assert_memory_not_equal(a.key_g2a, x.key_g2a, 32);
  an[31] ^= 1;
  la_auth_session_derive(&k, 1, "node1", "front", sn, 32, an, 32, &x);
  assert_memory_not_equal(a.agent_proof, x.agent_proof, 32); /* swapped */
  /* the name/nonce boundaries cannot be shifted */
  la_auth_session_derive(&k, 1, "node1f", "ront", an, 32, sn, 32, &x);
  assert_memory_not_equal(a.agent_proof, x.agent_proof, 32);
  /* bad arguments: zeroed output, LA_EINVAL */
  uint8_t zero[sizeof x];
  memset(zero, 0, sizeof zero);
  assert_int_equal(
      la_auth_session_derive(&k, 1, "", "front", an, 32, sn, 32, &x),
      LA_EINVAL);
  assert_memory_equal(&x, zero, sizeof x);
  assert_int_equal(la_auth_session_derive(&k, 1, "n", "f", an, 8, sn, 32, &x),
                   LA_EINVAL);
  assert_int_equal(la_auth_session_derive(&k, 1, "n", NULL, an, 32, sn, 32, &x),
                   LA_EINVAL);
  assert_int_equal(
      la_auth_session_derive(NULL, 1, "n", "f", an, 32, sn, 32, &x), LA_EINVAL);
}

/* ----------------------------------------------------------- records --- */

typedef struct {
  uint8_t rec[8][256];
  size_t len[8];
} recs_t;

/* The cipher pair() starts sessions with, and whether open_ack opens in
 * place (on a copy of the record). */
static uint32_t rec_cipher = LA_CIPHER_XCHACHA20;
static int rec_in_place;

/* Seals n small frames (Ack{seq = i + 1}) with tx into r. */
static void seal_acks(la_secure_t *tx, recs_t *r, int n) {
  for (int i = 0; i < n; i++) {
    La__Ack a = LA__ACK__INIT;
    a.seq = (uint64_t)i + 1;
    uint8_t frame[64];
    long fl =
        la_frame_pack_into(LA__MSG_TYPE__MSG_ACK, &a.base, frame, sizeof frame);
    assert_true(fl > 0);
    long rl =
        la_secure_seal(tx, frame, (size_t)fl, r->rec[i], sizeof r->rec[i]);
    /* AES-256-GCM's MAC is a byte shorter than secretstream's tag + MAC */
    assert_int_equal(rl, (long)la_secure_record_size((size_t)fl) -
                             (rec_cipher == LA_CIPHER_AES256GCM));
    r->len[i] = (size_t)rl;
    uint16_t t;
    uint32_t l;
    assert_int_equal(la_frame_header_parse(r->rec[i], 1024, &t, &l), 0);
    assert_int_equal(t, LA__MSG_TYPE__MSG_SEALED);
    assert_int_equal(l + LA_FRAME_HEADER_LEN, rl);
  }
}

/* Opens record i of r with rx; returns the Ack's seq, or the error. */
static long open_ack(la_secure_t *rx, const recs_t *r, int i, char *why) {
  uint8_t *buf, copy[256];
  uint16_t t;
  const uint8_t *p;
  uint32_t l;
  memcpy(copy, r->rec[i], r->len[i]);
  int rc = rec_in_place
               ? la_secure_open_in_place(rx, copy + 8, r->len[i] - 8, 1024,
                                         &buf, &t, &p, &l, why, 200)
               : la_secure_open(rx, r->rec[i] + 8, r->len[i] - 8, 1024, &buf,
                                &t, &p, &l, why, 200);
  if (rc) return rc;
  /* in place with AES-256-GCM: the frame is in the record's own bytes */
  if (rec_in_place && rec_cipher == LA_CIPHER_AES256GCM)
    assert_true(buf == NULL && p == copy + 16);
  ProtobufCMessage *m;
  assert_int_equal(t, LA__MSG_TYPE__MSG_ACK);
  assert_int_equal(la_msg_decode(t, p, l, &m, NULL, 0), 0);
  long seq = (long)((La__Ack *)m)->seq;
  la_msg_free(m);
  free(buf);
  return seq;
}

static void pair(la_secure_t *tx, la_secure_t *rx, const uint8_t *key) {
  uint8_t hdr[LA_SECURE_HEADER_BYTES];
  la_secure_init(tx);
  la_secure_init(rx);
  assert_int_equal(la_secure_set_cipher(tx, rec_cipher), 0);
  assert_int_equal(la_secure_set_cipher(rx, rec_cipher), 0);
  assert_int_equal(la_secure_start_tx(tx, key, hdr), 0);
  assert_int_equal(la_secure_start_rx(rx, key, hdr, sizeof hdr), 0);
}

static void records_refuse_tampering(void **state) {
  (void)state;
  uint8_t key[32], other[32];
  fill(key, sizeof key, 7);
  fill(other, sizeof other, 8);
  la_secure_t tx, rx;
  recs_t r;
  char why[200];
  /* round trip, in order */
  pair(&tx, &rx, key);
  seal_acks(&tx, &r, 4);
  for (int i = 0; i < 4; i++)
    assert_int_equal(open_ack(&rx, &r, i, why), i + 1);
  /* the frame does not appear in clear */
  assert_null(memmem(r.rec[0] + 8, r.len[0] - 8, "\0\0\0\x02\0\x11", 6));
  /* each byte of the ciphertext flipped: refused, and the stream is dead */
  for (size_t b = 8; b < r.len[0]; b++) {
    pair(&tx, &rx, key);
    seal_acks(&tx, &r, 2);
    r.rec[0][b] ^= 0x04;
    assert_int_equal(open_ack(&rx, &r, 0, why), LA_EAUTH);
    assert_non_null(strstr(why, "does not authenticate"));
    assert_int_equal(open_ack(&rx, &r, 1, why), LA_EAUTH);
  }
  /* three records sealed, opened out of order: what each open returns */
  static const struct {
    const char *what;
    int n, rec[2];
    long want[2];
  } order[] = {
      {"replayed", 2, {0, 0}, {1, LA_EAUTH}},
      {"reordered", 1, {1}, {LA_EAUTH}},
      {"dropped: the next one does not open", 2, {0, 2}, {1, LA_EAUTH}}};
  for (size_t c = 0; c < sizeof order / sizeof order[0]; c++) {
    pair(&tx, &rx, key);
    seal_acks(&tx, &r, 3);
    for (int i = 0; i < order[c].n; i++)
      if (open_ack(&rx, &r, order[c].rec[i], why) != order[c].want[i])
        fail_msg("%s: record %d did not open as %ld", order[c].what,
                 order[c].rec[i], order[c].want[i]);
  }
  /* truncated */
  pair(&tx, &rx, key);
  seal_acks(&tx, &r, 1);
  r.len[0] -= 1;
  assert_int_equal(open_ack(&rx, &r, 0, why), LA_EAUTH);
  r.len[0] = 8 + 5;
  pair(&tx, &rx, key);
  assert_int_equal(open_ack(&rx, &r, 0, why), LA_EPROTO);
  /* another key (the other direction, another connection) */
  uint8_t hdr[LA_SECURE_HEADER_BYTES];
  la_secure_init(&tx);
  la_secure_init(&rx);
  la_secure_set_cipher(&tx, rec_cipher);
  la_secure_set_cipher(&rx, rec_cipher);
  la_secure_start_tx(&tx, key, hdr);
  la_secure_start_rx(&rx, other, hdr, sizeof hdr);
  seal_acks(&tx, &r, 1);
  assert_int_equal(open_ack(&rx, &r, 0, why), LA_EAUTH);
  /* the same key and header, the other cipher */
  la_secure_init(&tx);
  la_secure_init(&rx);
  la_secure_set_cipher(&tx, rec_cipher);
  la_secure_set_cipher(&rx, rec_cipher == LA_CIPHER_AES256GCM
                                ? LA_CIPHER_XCHACHA20
                                : LA_CIPHER_AES256GCM);
  la_secure_start_tx(&tx, key, hdr);
  la_secure_start_rx(&rx, key, hdr, sizeof hdr);
  seal_acks(&tx, &r, 1);
  assert_int_equal(open_ack(&rx, &r, 0, why), LA_EAUTH);
  /* not started */
  la_secure_init(&rx);
  assert_int_equal(open_ack(&rx, &r, 0, why), LA_EPROTO);
  la_secure_init(&tx);
  assert_int_equal(la_secure_seal(&tx, r.rec[0], 8, r.rec[1], 256), LA_EINVAL);
  la_secure_wipe(&tx);
  la_secure_wipe(&rx);
}

/* The same with AES-256-GCM, opened in place and not (where the CPU has
 * it; else the test says so and checks that it cannot be chosen). */
static void records_refuse_tampering_aes(void **state) {
  if (!la_cipher_available(LA_CIPHER_AES256GCM)) {
    la_secure_t s;
    la_secure_init(&s);
    assert_int_equal(la_secure_set_cipher(&s, LA_CIPHER_AES256GCM), LA_EINVAL);
    print_message("no AES-256-GCM on this CPU: skipped\n");
    return;
  }
  rec_cipher = LA_CIPHER_AES256GCM;
  for (rec_in_place = 0; rec_in_place < 2; rec_in_place++)
    records_refuse_tampering(state);
  rec_cipher = LA_CIPHER_XCHACHA20;
  rec_in_place = 1; /* secretstream opened "in place": into its own buffer */
  records_refuse_tampering(state);
  rec_in_place = 0;
}

/* AES-256-GCM nonces are the record's number: across 2^32 records both
 * sides replace the key (the same way), records keep opening, and the
 * new key is neither the old one nor the other direction's. */
static void records_aes_rekey(void **state) {
  (void)state;
  if (!la_cipher_available(LA_CIPHER_AES256GCM)) {
    print_message("no AES-256-GCM on this CPU: skipped\n");
    return;
  }
  uint8_t key[32], before[32];
  fill(key, sizeof key, 9);
  la_secure_t tx, rx;
  recs_t r;
  char why[200];
  rec_cipher = LA_CIPHER_AES256GCM;
  pair(&tx, &rx, key);
  /* as if 2^32 - 2 records had gone: the 3rd of these is under a new key */
  tx.gtx.n = rx.grx.n = LA_SECURE_GCM_REKEY_EVERY - 2;
  memcpy(before, tx.gtx.key, sizeof before);
  seal_acks(&tx, &r, 5);
  assert_true(tx.gtx.n == LA_SECURE_GCM_REKEY_EVERY + 3);
  assert_memory_not_equal(before, tx.gtx.key, sizeof before);
  for (int i = 0; i < 5; i++)
    assert_int_equal(open_ack(&rx, &r, i, why), i + 1);
  assert_memory_equal(tx.gtx.key, rx.grx.key, sizeof before);
  /* a receiver whose count is not the sender's (rewound after two
   * records: the old key, an old nonce) does not open the third */
  la_secure_t late;
  pair(&tx, &late, key);
  tx.gtx.n = LA_SECURE_GCM_REKEY_EVERY - 2;
  late.grx.n = LA_SECURE_GCM_REKEY_EVERY - 2;
  seal_acks(&tx, &r, 3);
  assert_int_equal(open_ack(&late, &r, 0, why), 1);
  assert_int_equal(open_ack(&late, &r, 1, why), 2);
  late.grx.n = 0; /* rewound: the next record's nonce and key are stale */
  assert_int_equal(open_ack(&late, &r, 2, why), LA_EAUTH);
  rec_cipher = LA_CIPHER_XCHACHA20;
  la_secure_wipe(&tx);
  la_secure_wipe(&rx);
  la_secure_wipe(&late);
}

/* The settings' values, the offer, the choice, and that the transcript
 * binds offer and choice (a change gives other proofs and keys), while no
 * offer gives an older peer's transcript. */
static void cipher_negotiation(void **state) {
  (void)state;
  int aes = la_cipher_available(LA_CIPHER_AES256GCM);
  la_cipher_pref_t p;
  char why[300];
  assert_int_equal(la_cipher_parse("x.cipher", "auto", 0, &p, why, sizeof why),
                   0);
  assert_int_equal(p, LA_CIPHER_AUTO);
  assert_int_equal(la_cipher_parse("x.cipher", "", 0, &p, why, sizeof why), 0);
  assert_int_equal(p, LA_CIPHER_AUTO);
  assert_int_equal(
      la_cipher_parse("x.cipher", "xchacha20", 0, &p, why, sizeof why), 0);
  assert_int_equal(p, LA_CIPHER_ONLY_XCHACHA20);
  assert_int_equal(
      la_cipher_parse("x.cipher", "aes256gcm", 0, &p, why, sizeof why),
      aes ? 0 : LA_EINVAL);
  assert_int_equal(la_cipher_parse("x.cipher", "legacy", 1, &p, why, sizeof why),
                   0);
  assert_int_equal(p, LA_CIPHER_LEGACY);
  assert_int_equal(la_cipher_parse("x.cipher", "legacy", 0, &p, why, sizeof why),
                   LA_EINVAL);
  assert_int_equal(la_cipher_parse("x.cipher", "rot13", 1, &p, why, sizeof why),
                   LA_EINVAL);
  assert_non_null(strstr(why, "x.cipher = 'rot13': expected auto"));
  /* offers */
  uint32_t o[LA_CIPHER_OFFER_MAX];
  size_t n = la_cipher_offer(LA_CIPHER_AUTO, o);
  assert_int_equal(n, aes ? 2 : 1);
  assert_int_equal(o[0], aes ? LA_CIPHER_AES256GCM : LA_CIPHER_XCHACHA20);
  assert_int_equal(o[n - 1], LA_CIPHER_XCHACHA20);
  assert_int_equal(la_cipher_offer(LA_CIPHER_ONLY_XCHACHA20, o), 1);
  assert_int_equal(o[0], LA_CIPHER_XCHACHA20);
  assert_int_equal(la_cipher_offer(LA_CIPHER_LEGACY, o), 0);
  /* choices: the chooser's preference among what both can use */
  const uint32_t both[] = {LA_CIPHER_XCHACHA20, LA_CIPHER_AES256GCM},
                 xc[] = {LA_CIPHER_XCHACHA20}, ae[] = {LA_CIPHER_AES256GCM},
                 unknown[] = {77};
  assert_int_equal(la_cipher_choose(LA_CIPHER_AUTO, both, 2, why, sizeof why),
                   aes ? LA_CIPHER_AES256GCM : LA_CIPHER_XCHACHA20);
  assert_int_equal(la_cipher_choose(LA_CIPHER_AUTO, xc, 1, why, sizeof why),
                   LA_CIPHER_XCHACHA20);
  assert_int_equal(la_cipher_choose(LA_CIPHER_AUTO, NULL, 0, why, sizeof why),
                   LA_CIPHER_XCHACHA20); /* an older peer */
  assert_int_equal(
      la_cipher_choose(LA_CIPHER_ONLY_XCHACHA20, both, 2, why, sizeof why),
      LA_CIPHER_XCHACHA20);
  assert_int_equal(
      la_cipher_choose(LA_CIPHER_ONLY_XCHACHA20, ae, 1, why, sizeof why), 0);
  assert_non_null(strstr(why, "no common cipher: the LocalAgent offers "
                              "aes256gcm, this GlobalAgent accepts xchacha20"));
  assert_int_equal(la_cipher_choose(LA_CIPHER_AUTO, unknown, 1, why, sizeof why),
                   0);
  if (aes) {
    assert_int_equal(
        la_cipher_choose(LA_CIPHER_ONLY_AES256GCM, NULL, 0, why, sizeof why), 0);
    assert_non_null(strstr(why, "predates cipher negotiation"));
  }
  /* what the offering side makes of the choice: no choice from an older
   * GlobalAgent is XChaCha20 as before (nothing offered is bound) while the
   * offer allows it; an offer of AES-256-GCM alone is refused */
  size_t nb = 2;
  assert_null(la_cipher_choice_problem(both, &nb, 1, LA_CIPHER_XCHACHA20));
  assert_int_equal(nb, 2);
  nb = 0;
  assert_null(la_cipher_choice_problem(NULL, &nb, 0, 0)); /* no offer */
  nb = 2;
  assert_null(la_cipher_choice_problem(both, &nb, 0, 0));
  assert_int_equal(nb, 0);
  nb = 1;
  assert_null(la_cipher_choice_problem(xc, &nb, 0, 0));
  assert_int_equal(nb, 0);
  nb = 1;
  assert_non_null(strstr(la_cipher_choice_problem(ae, &nb, 0, 0),
                         "it chose no cipher"));
  assert_int_equal(nb, 1);
  nb = 1;
  assert_non_null(strstr(
      la_cipher_choice_problem(xc, &nb, 1, LA_CIPHER_AES256GCM), "not offer"));
  /* the transcript binds the offer (its order too) and the choice */
  la_auth_key_t k;
  memset(&k, 0x42, sizeof k);
  uint8_t an[32], sn[32];
  fill(an, sizeof an, 1);
  fill(sn, sizeof sn, 2);
  la_auth_session_t base, x, legacy;
  const uint32_t ab[] = {2, 1}, ba[] = {1, 2}, a1[] = {2}, b1[] = {1};
#define NEG(offer, len, choice, out)                                        \
  la_auth_session_derive_neg(&k, 1, "node1", "front", an, 32, sn, 32, offer, \
                             len, choice, out)
  assert_int_equal(NEG(ab, 2, 2, &base), 0);
  assert_int_equal(NEG(ab, 2, 2, &x), 0);
  assert_memory_equal(&base, &x, sizeof x);
  const struct {
    const char *what;
    const uint32_t *offer;
    size_t len;
    uint32_t choice;
  } alt[] = {{"the other choice", ab, 2, 1},
             {"the offer reordered", ba, 2, 2},
             {"AES-256-GCM struck from the offer", b1, 1, 1},
             {"XChaCha20 struck from the offer", a1, 1, 2},
             {"no offer (an older peer's transcript)", NULL, 0, 0}};
  for (size_t i = 0; i < sizeof alt / sizeof alt[0]; i++) {
    assert_int_equal(NEG(alt[i].offer, alt[i].len, alt[i].choice, &x), 0);
    if (!memcmp(x.agent_proof, base.agent_proof, sizeof x.agent_proof) ||
        !memcmp(x.server_proof, base.server_proof, sizeof x.server_proof) ||
        !memcmp(x.key_a2g, base.key_a2g, sizeof x.key_a2g) ||
        !memcmp(x.key_g2a, base.key_g2a, sizeof x.key_g2a))
      fail_msg("%s: the same proofs or keys", alt[i].what);
  }
  /* no offer: exactly the transcript of before negotiation */
  assert_int_equal(
      la_auth_session_derive(&k, 1, "node1", "front", an, 32, sn, 32, &legacy),
      0);
  assert_memory_equal(&legacy, &x, sizeof x);
  const uint32_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  assert_int_equal(NEG(nine, 9, 1, &x), LA_EINVAL);
  assert_int_equal(NEG(ab, 2, 0, &x), LA_EINVAL);
#undef NEG
}

/* ------------------------------------------------- with the daemons --- */

#define WAIT_MS 20000

#define CHECK(cond, ...) LA_TD_CHECK((void)0, cond, __VA_ARGS__)

static struct {
  la_test_daemon_t *ga, *la;
  char key[600], db[600], apf[600];
  char ga_addr[64];
  const char *ga_extra, *la_extra; /* one more option each, or NULL */
  pid_t kids[8];
  int nkids;
} D;

static int dsetup(void **state) {
  (void)state;
  memset(&D, 0, sizeof D);
  if (la_auth_init()) return -1;
  D.ga = la_td_new("la-globalagent");
  D.la = la_td_new("la-localagent");
  if (!D.ga || !D.la) return -1;
  la_td_path(D.ga, "secret", D.key, sizeof D.key);
  la_td_path(D.ga, "la.db", D.db, sizeof D.db);
  la_td_path(D.ga, "agents.port", D.apf, sizeof D.apf);
  char why[300];
  return la_auth_generate_secret_file(D.key, why, sizeof why) ? -1 : 0;
}

static int dteardown(void **state) {
  (void)state;
  for (int i = 0; i < D.nkids; i++) {
    kill(D.kids[i], SIGKILL);
    waitpid(D.kids[i], NULL, 0);
  }
  if (D.la) la_td_free(D.la);
  if (D.ga) la_td_free(D.ga);
  return 0;
}

/* Starts the GlobalAgent with secret file key ("" for none). */
static void start_ga(const char *key) {
  static char a[4][700];
  char fpf[600];
  la_td_path(D.ga, "feed.port", fpf, sizeof fpf);
  snprintf(a[0], sizeof a[0], "--agents.port_file=%s", D.apf);
  snprintf(a[1], sizeof a[1], "--store.path=%s", D.db);
  snprintf(a[2], sizeof a[2], "--feed.port_file=%s", fpf);
  snprintf(a[3], sizeof a[3], "--agents.secret_file=%s", key);
  const char *args[] = {"--agents.listen=127.0.0.1:0",
                        "--feed.listen=127.0.0.1:0",
                        "--log.level=debug",
                        a[0],
                        a[1],
                        a[2],
                        key[0] ? a[3] : D.ga_extra,
                        key[0] ? D.ga_extra : NULL,
                        NULL};
  unlink(D.apf);
  la_td_log_mark(D.ga);
  CHECK(la_td_start(D.ga, args, fpf, WAIT_MS) > 0, "no GlobalAgent");
  long long end = la_td_now_ms() + WAIT_MS;
  for (;;) {
    FILE *f = fopen(D.apf, "r");
    unsigned p = 0;
    if (f) {
      if (fscanf(f, "%u", &p) != 1) p = 0;
      fclose(f);
    }
    if (p > 0 && p < 65536) {
      snprintf(D.ga_addr, sizeof D.ga_addr, "127.0.0.1:%u", p);
      return;
    }
    CHECK(la_td_now_ms() < end, "no agents port");
    la_td_nap_ms(5);
  }
}

/* Starts the LocalAgent as node host towards global with secret file key
 * ("" for none), quick reconnects. */
static void start_la(const char *global, const char *key, const char *host) {
  char pf[600], spool[600];
  la_td_argv_t a;
  la_td_path(D.la, "port", pf, sizeof pf);
  la_td_path(D.la, "spool", spool, sizeof spool);
  la_td_argv_init(&a);
  la_ts_la_args(&a, pf, spool, global, key[0] ? key : NULL);
  la_td_argv_add(&a, "--agent.host=%s", host);
  la_td_argv_add(&a, "--log.level=debug");
  la_td_argv_add(&a, "--global.reconnect_min=20ms");
  la_td_argv_add(&a, "--global.reconnect_max=300ms");
  if (D.la_extra) la_td_argv_add(&a, "%s", D.la_extra);
  la_td_log_mark(D.la);
  CHECK(la_td_start(D.la, a.v, pf, WAIT_MS) > 0, "no LocalAgent");
}

static double probe_value(long e, uint64_t cycle, int rank) {
  (void)cycle, (void)rank;
  return 1.0 + (double)(e % 13);
}

/* Forks one rank of app_id running cycles cycles of n elements through the
 * LocalAgent. Only while the test runs no thread of its own (relay_run). */
static void fork_rank(const char *app_id, int rank, int nprocs, long n,
                      int cycles) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    for (int fd = 3; fd < 1024; fd++) close(fd);
    _exit(la_ta_run_rank(la_td_addr(D.la), app_id, "authtest", rank, nprocs, n,
                         cycles, probe_value));
  }
  D.kids[D.nkids++] = pid;
}

static void reap(void) {
  long long end = la_td_now_ms() + WAIT_MS;
  for (int i = 0; i < D.nkids; i++) {
    int st = 0;
    while (waitpid(D.kids[i], &st, WNOHANG) != D.kids[i]) {
      CHECK(la_td_now_ms() < end, "a rank did not exit");
      la_td_nap_ms(10);
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a rank failed");
  }
  D.nkids = 0;
}

static void wait_log(la_test_daemon_t *d, const char *needle) {
  CHECK(la_td_wait_log(d, needle, WAIT_MS) == 0, "never logged \"%s\"", needle);
}

static void wait_status(la_test_daemon_t *d, const char *key, long long min) {
  CHECK(la_td_wait_status(d, key, min, WAIT_MS) == 0,
        "status %s did not reach %lld (is %lld)", key, min,
        la_td_status_ll(d, key));
}

/* A TCP relay between the agents: forwards both ways and parses the
 * LocalAgent's bytes as frames; on the first connection it flips one byte
 * of, or repeats, the LocalAgent's third encrypted record. Keeps a copy of
 * everything the LocalAgent sent (up to 4 MiB). */
enum { RELAY_PASS, RELAY_FLIP, RELAY_REPLAY };

typedef struct {
  int lfd, mode, stop;
  uint16_t port, target;
  pthread_t th;
  uint8_t *seen;
  size_t nseen;
  int conns, tampered;
} relay_t;

typedef struct { /* frame parser of one direction */
  uint8_t hdr[8], *rec;
  size_t hlen, left, rlen;
  int sealed;
} fp_t;

static int write_full(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Forwards LocalAgent bytes frame by frame, tampering as the mode says. */
static int relay_up(relay_t *r, fp_t *f, int to, const uint8_t *p, size_t n,
                    int first) {
  for (size_t i = 0; i < n; i++) {
    if (r->nseen < (4u << 20)) r->seen[r->nseen++] = p[i];
    if (f->hlen < 8) {
      f->hdr[f->hlen++] = p[i];
      if (f->hlen == 8) {
        f->left = ((size_t)f->hdr[0] << 24) | ((size_t)f->hdr[1] << 16) |
                  ((size_t)f->hdr[2] << 8) | f->hdr[3];
        f->rlen = 0;
        f->rec = malloc(8 + f->left);
        memcpy(f->rec, f->hdr, 8);
        f->rlen = 8;
      }
    } else {
      f->rec[f->rlen++] = p[i];
      f->left--;
    }
    if (f->hlen == 8 && f->left == 0) {
      int sealed = ((f->hdr[4] << 8) | f->hdr[5]) == LA__MSG_TYPE__MSG_SEALED;
      if (sealed) f->sealed++;
      int hit = first && sealed && f->sealed == 3 && !r->tampered;
      if (hit && r->mode == RELAY_FLIP) f->rec[8 + (f->rlen - 8) / 2] ^= 0x20;
      int rc = write_full(to, f->rec, f->rlen);
      if (hit && r->mode == RELAY_REPLAY && rc == 0)
        rc = write_full(to, f->rec, f->rlen);
      if (hit) r->tampered = 1;
      free(f->rec);
      f->rec = NULL;
      f->hlen = 0;
      if (rc) return -1;
    }
  }
  return 0;
}

static void *relay_main(void *arg) {
  relay_t *r = arg;
  while (!r->stop) {
    struct pollfd lp = {r->lfd, POLLIN, 0};
    if (poll(&lp, 1, 50) <= 0) continue;
    int a = accept(r->lfd, NULL, NULL);
    if (a < 0) continue;
    int first = r->conns++ == 0;
    int b = la_tcp_connect("127.0.0.1", r->target, 5000);
    if (b < 0) {
      close(a);
      continue;
    }
    fp_t f;
    memset(&f, 0, sizeof f);
    uint8_t buf[65536];
    while (!r->stop) {
      struct pollfd pf[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
      if (poll(pf, 2, 50) <= 0) continue;
      if (pf[0].revents) {
        ssize_t n = recv(a, buf, sizeof buf, 0);
        if (n <= 0 || relay_up(r, &f, b, buf, (size_t)n, first)) break;
      }
      if (pf[1].revents) {
        ssize_t n = recv(b, buf, sizeof buf, 0);
        if (n <= 0 || write_full(a, buf, (size_t)n)) break;
      }
    }
    free(f.rec);
    close(a);
    close(b);
  }
  return NULL;
}

static int listen_any(uint16_t *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof sa;
  assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(listen(fd, 8), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
  *port = ntohs(sa.sin_port);
  return fd;
}

/* The relay's listening socket: a LocalAgent may connect (the kernel
 * queues it) before relay_run starts the thread that accepts. */
static void relay_listen(relay_t *r, int mode) {
  memset(r, 0, sizeof *r);
  r->mode = mode;
  r->seen = malloc(4u << 20);
  assert_non_null(r->seen);
  uint16_t gp = 0;
  sscanf(D.ga_addr, "127.0.0.1:%hu", &gp);
  r->target = gp;
  r->lfd = listen_any(&r->port);
}

/* Starts the relay's thread; after fork_rank, never before: a child forked
 * while another thread holds a lock (the allocator's, stdio's) may block
 * on it for ever. */
static void relay_run(relay_t *r) {
  assert_int_equal(pthread_create(&r->th, NULL, relay_main, r), 0);
}

static void relay_stop(relay_t *r) {
  r->stop = 1;
  pthread_join(r->th, NULL);
  close(r->lfd);
  free(r->seen);
}

/* The first column of the first row of sql on the GlobalAgent's store
 * (read-only, a fresh snapshot), or -1. */
#define db_ll(sql) la_test_sql_ll(D.db, "%s", sql)

/* Runs 2 ranks x cycles through the relay in mode; every trace must be
 * stored exactly once although the first connection was tampered with. */
static void run_tampered(int mode, const char *app) {
  enum { CYCLES = 6 };
  start_ga(D.key);
  relay_t r;
  relay_listen(&r, mode);
  char via[64];
  snprintf(via, sizeof via, "127.0.0.1:%u", r.port);
  start_la(via, D.key, "relayed");
  fork_rank(app, 0, 2, 500, CYCLES);
  fork_rank(app, 1, 2, 500, CYCLES);
  relay_run(&r);
  reap();
  wait_status(D.ga, "traces_stored", 2 * CYCLES);
  wait_status(D.la, "global_connects", 2);
  CHECK(r.tampered, "the relay never saw a third record");
  /* the GlobalAgent closed the tampered link, naming why */
  wait_log(D.ga, "does not authenticate");
  char line[600];
  la_td_log_line(D.ga, "does not authenticate", line, sizeof line);
  print_message("GlobalAgent: %s\n", line);
  CHECK(strstr(line, "relayed"), "%s", line);
  /* nothing lost, nothing duplicated: everything acknowledged, each trace
   * stored once */
  CHECK(la_td_wait_status(D.la, "queue_items", 0, WAIT_MS) == 0, "?");
  long long end = la_td_now_ms() + WAIT_MS;
  while (la_td_status_ll(D.la, "queue_items") != 0 && la_td_now_ms() < end)
    la_td_nap_ms(20);
  assert_int_equal(la_td_status_ll(D.la, "queue_items"), 0);
  assert_int_equal(la_td_status_ll(D.ga, "traces_stored"), 2 * CYCLES);
  assert_int_equal(db_ll("SELECT count(*) FROM traces"), 2 * CYCLES);
  assert_int_equal(db_ll("SELECT count(DISTINCT cycle_tag) FROM traces"),
                   CYCLES);
  assert_int_equal(db_ll("SELECT count(*) FROM ranks"), 2);
  wait_status(D.ga, "sets_complete", CYCLES);
  /* the application id never crossed the wire in clear */
  CHECK(!memmem(r.seen, r.nseen, app, strlen(app)),
        "\"%s\" appears in clear in %zu bytes", app, r.nseen);
  CHECK(r.nseen > 2 * CYCLES * 100, "only %zu bytes relayed", r.nseen);
  relay_stop(&r);
}

static void link_flipped_byte(void **state) {
  (void)state;
  run_tampered(RELAY_FLIP, "flip-app-7q");
}

static void link_replayed_record(void **state) {
  (void)state;
  run_tampered(RELAY_REPLAY, "replay-app-3z");
}

/* A wrong secret, and a secret on one side only: refused, with a clear line
 * in both logs; nothing stored. */
static void link_wrong_secrets(void **state) {
  (void)state;
  char other[600], why[300];
  la_td_path(D.la, "other-secret", other, sizeof other);
  assert_int_equal(la_auth_generate_secret_file(other, why, sizeof why), 0);
  char line[600];
  /* 1: both have a secret, different ones */
  start_ga(D.key);
  start_la(D.ga_addr, other, "wrongnode");
  wait_log(D.la, "refused this agent");
  wait_log(D.ga, "refused: wrong secret");
  la_td_log_line(D.la, "refused this agent", line, sizeof line);
  print_message("LocalAgent: %s\n", line);
  CHECK(strstr(line, "secret"), "%s", line);
  la_td_log_line(D.ga, "refused: wrong secret", line, sizeof line);
  print_message("GlobalAgent: %s\n", line);
  CHECK(strstr(line, "wrongnode") && strstr(line, "127.0.0.1"), "%s", line);
  la_td_stop(D.la, WAIT_MS);
  /* 2: the GlobalAgent has none: the LocalAgent refuses it, and says so */
  la_td_stop(D.ga, WAIT_MS);
  start_ga("");
  start_la(D.ga_addr, D.key, "keyednode");
  wait_log(D.la, "failed to prove the shared secret");
  wait_log(D.ga, "refused this GlobalAgent");
  la_td_log_line(D.la, "failed to prove", line, sizeof line);
  print_message("LocalAgent: %s\n", line);
  la_td_log_line(D.ga, "refused this GlobalAgent", line, sizeof line);
  print_message("GlobalAgent: %s\n", line);
  CHECK(strstr(line, "keyednode"), "%s", line);
  la_td_stop(D.la, WAIT_MS);
  la_td_stop(D.ga, WAIT_MS);
  /* 3: the LocalAgent has none: the GlobalAgent refuses it */
  start_ga(D.key);
  start_la(D.ga_addr, "", "plainnode");
  wait_log(D.la, "NOT authenticated both ways nor encrypted");
  wait_log(D.la, "refused this agent");
  wait_log(D.ga, "offers no mutual authentication");
  la_td_log_line(D.ga, "offers no mutual", line, sizeof line);
  print_message("GlobalAgent: %s\n", line);
  CHECK(strstr(line, "plainnode"), "%s", line);
  assert_int_equal(la_td_status_ll(D.ga, "traces_stored"), 0);
  assert_true(la_td_status_ll(D.ga, "auth_failures") >= 1);
}

/* A fake GlobalAgent that does not know the secret: answers the handshake
 * as best it can (an acceptance in clear, then one sealed with a key of its
 * own) and acknowledges everything. */
typedef struct {
  int lfd, stop, conns, frames_after_auth;
  uint16_t port;
  pthread_t th;
} fake_ga_t;

static void *fake_ga_main(void *arg) {
  fake_ga_t *f = arg;
  while (!f->stop) {
    struct pollfd lp = {f->lfd, POLLIN, 0};
    if (poll(&lp, 1, 50) <= 0) continue;
    int fd = accept(f->lfd, NULL, NULL);
    if (fd < 0) continue;
    int n = f->conns++;
    uint16_t type;
    ProtobufCMessage *m = NULL;
    char why[200];
    if (la_recv_msg(fd, 1 << 16, 5000, &type, &m, why, sizeof why) == 0) {
      la_msg_free(m);
      uint8_t nonce[32], hdr[LA_SECURE_HEADER_BYTES], key[32];
      randombytes_buf(nonce, sizeof nonce);
      randombytes_buf(key, sizeof key);
      la_secure_t s;
      la_secure_init(&s);
      la_secure_start_tx(&s, key, hdr);
      La__Challenge ch = LA__CHALLENGE__INIT;
      ch.nonce.data = nonce;
      ch.nonce.len = sizeof nonce;
      ch.server = "fake";
      ch.has_cipher = 1; /* as a current GlobalAgent: a choice it offered */
      ch.cipher = LA_CIPHER_XCHACHA20;
      ch.has_stream_header = 1;
      ch.stream_header.data = hdr;
      ch.stream_header.len = sizeof hdr;
      la_send_msg(fd, LA__MSG_TYPE__MSG_CHALLENGE, &ch.base, 5000);
      if (la_recv_msg(fd, 1 << 16, 5000, &type, &m, why, sizeof why) == 0) {
        la_msg_free(m);
        uint8_t proof[32];
        randombytes_buf(proof, sizeof proof);
        La__AuthResult r = LA__AUTH_RESULT__INIT;
        r.has_next_seq = 1;
        r.next_seq = 1;
        r.has_server_proof = 1;
        r.server_proof.data = proof;
        r.server_proof.len = sizeof proof;
        La__Ack ack = LA__ACK__INIT;
        ack.seq = 1000000;
        uint8_t fr[2][256], rec[2][300];
        long l0 = la_frame_pack_into(LA__MSG_TYPE__MSG_AUTH_RESULT, &r.base,
                                     fr[0], sizeof fr[0]);
        long l1 = la_frame_pack_into(LA__MSG_TYPE__MSG_ACK, &ack.base, fr[1],
                                     sizeof fr[1]);
        if (n % 2 == 0) { /* in clear */
          la_write_all(fd, fr[0], (size_t)l0, 1000);
          la_write_all(fd, fr[1], (size_t)l1, 1000);
        } else { /* sealed with a key of its own */
          long r0 = la_secure_seal(&s, fr[0], (size_t)l0, rec[0], 300);
          long r1 = la_secure_seal(&s, fr[1], (size_t)l1, rec[1], 300);
          la_write_all(fd, rec[0], (size_t)r0, 1000);
          la_write_all(fd, rec[1], (size_t)r1, 1000);
        }
        /* whatever comes now would be traces: count frames until close */
        uint8_t h[8];
        while (la_read_all(fd, h, 8, 3000) == 0) {
          f->frames_after_auth++;
          uint32_t len = ((uint32_t)h[0] << 24) | ((uint32_t)h[1] << 16) |
                         ((uint32_t)h[2] << 8) | h[3];
          uint8_t *p = malloc(len ? len : 1);
          int rc = p ? la_read_all(fd, p, len, 3000) : -1;
          free(p);
          if (rc) break;
        }
      }
    }
    close(fd);
  }
  return NULL;
}

static void link_fake_global_refused(void **state) {
  (void)state;
  enum { CYCLES = 4 };
  fake_ga_t f;
  memset(&f, 0, sizeof f);
  f.lfd = listen_any(&f.port);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", f.port);
  start_la(addr, D.key, "victim");
  fork_rank("fake-ga-app", 0, 1, 300, CYCLES);
  /* the thread after the fork (relay_run says why) */
  assert_int_equal(pthread_create(&f.th, NULL, fake_ga_main, &f), 0);
  reap();
  wait_status(D.la, "cycles_compacted", CYCLES);
  /* both kinds of fake acceptance refused, each logged */
  long long end = la_td_now_ms() + WAIT_MS;
  while ((la_td_log_count(D.la, "failed to prove the shared secret") < 2 ||
          f.conns < 3) &&
         la_td_now_ms() < end)
    la_td_nap_ms(20);
  f.stop = 1;
  pthread_join(f.th, NULL);
  close(f.lfd);
  char line[600];
  la_td_log_line(D.la, "failed to prove", line, sizeof line);
  print_message("LocalAgent: %s\n", line);
  CHECK(la_td_log_count(D.la, "failed to prove the shared secret") >= 2,
        "refusals logged: %d", la_td_log_count(D.la, "failed to prove"));
  CHECK(la_td_log_has(D.la, "accepted this agent in clear"), "no clear case");
  CHECK(la_td_log_has(D.la, "first record does not authenticate"),
        "no sealed case");
  /* nothing was sent to it, nothing taken as acknowledged */
  assert_int_equal(f.frames_after_auth, 0);
  char link[64] = "";
  la_td_status(D.la, "global_link", link, sizeof link);
  CHECK(strcmp(link, "connected") != 0, "global_link %s", link);
  CHECK(la_td_status_ll(D.la, "queue_items") >= CYCLES + 2,
        "the LocalAgent holds %lld messages",
        la_td_status_ll(D.la, "queue_items"));
}

/* No secret on either side: works unencrypted, as before, and both daemons
 * say so loudly. */
static void link_without_secret(void **state) {
  (void)state;
  enum { CYCLES = 3 };
  start_ga("");
  start_la(D.ga_addr, "", "opennode");
  wait_log(D.ga, "NOT encrypted");
  wait_log(D.la, "NOT authenticated both ways nor encrypted");
  fork_rank("open-app", 0, 1, 200, CYCLES);
  reap();
  wait_status(D.ga, "traces_stored", CYCLES);
  wait_log(D.ga, "UNENCRYPTED: no secret");
  wait_log(D.la, "(UNENCRYPTED: no secret)");
}

/* Both daemons with the secret, the LocalAgent as host: ranks x cycles of
 * app arrive over one encrypted link, every set completes, and both logs
 * say so, the GlobalAgent's with the cipher. */
static void run_linked(const char *host, const char *app, int ranks,
                       int cycles, uint32_t cipher) {
  start_ga(D.key);
  start_la(D.ga_addr, D.key, host);
  for (int r = 0; r < ranks; r++) fork_rank(app, r, ranks, 1000, cycles);
  reap();
  wait_status(D.ga, "traces_stored", ranks * cycles);
  wait_status(D.ga, "sets_complete", cycles);
  wait_log(D.la, "mutually authenticated, encrypted");
  char line[100];
  snprintf(line, sizeof line, "mutually authenticated, encrypted with %s",
           la_cipher_name(cipher));
  wait_log(D.ga, line);
  assert_int_equal(la_td_status_ll(D.la, "global_connects"), 1);
}

/* Traces arrive end to end over the encrypted link, both logs say so. */
static void link_end_to_end(void **state) {
  (void)state;
  run_linked("e2enode", "e2e-app", 3, 5,
             la_cipher_available(LA_CIPHER_AES256GCM) ? LA_CIPHER_AES256GCM
                                                      : LA_CIPHER_XCHACHA20);
}

/* A LocalAgent as before cipher negotiation (global.cipher = legacy: no
 * offer, the transcript without it) still links to this GlobalAgent, with
 * XChaCha20, and its traces arrive. */
static void link_old_localagent(void **state) {
  (void)state;
  D.la_extra = "--global.cipher=legacy";
  run_linked("oldnode", "old-app", 2, 3, LA_CIPHER_XCHACHA20);
  D.la_extra = NULL;
}

/* Opens a hand-played link offering pref; returns the AuthResult status
 * (or the handshake's error) and the cipher used in *cipher. */
static int link_with(uint16_t port, la_cipher_pref_t pref, uint32_t *cipher,
                     char *why, size_t n) {
  la_test_link_t l;
  int32_t status = -1;
  int rc = la_test_link_open_cipher(&l, port, D.key, "handnode", pref, WAIT_MS,
                                    &status, why, n);
  *cipher = l.sec.cipher;
  if (rc == 0 && status == 0) { /* records flow both ways */
    rc = la_test_link_rank_start(&l, "handnode", "hand-app", 0, 1, 10);
    if (rc == 0) rc = la_test_link_wait_acked(&l, WAIT_MS, why, n);
  }
  la_test_link_close(&l);
  return rc ? rc : status;
}

static uint16_t agents_port(void) {
  unsigned p = 0;
  sscanf(D.ga_addr, "127.0.0.1:%u", &p);
  return (uint16_t)p;
}

/* Every offer against agents.cipher auto links with the cipher expected;
 * against agents.cipher = xchacha20 an offer of AES-256-GCM alone is
 * refused, naming both sides' ciphers. */
static void link_ciphers_interoperate(void **state) {
  (void)state;
  int aes = la_cipher_available(LA_CIPHER_AES256GCM);
  char why[300];
  uint32_t c;
  start_ga(D.key);
  assert_int_equal(link_with(agents_port(), LA_CIPHER_AUTO, &c, why, sizeof why),
                   0);
  assert_int_equal(c, aes ? LA_CIPHER_AES256GCM : LA_CIPHER_XCHACHA20);
  assert_int_equal(link_with(agents_port(), LA_CIPHER_ONLY_XCHACHA20, &c, why,
                             sizeof why),
                   0);
  assert_int_equal(c, LA_CIPHER_XCHACHA20);
  assert_int_equal(
      link_with(agents_port(), LA_CIPHER_LEGACY, &c, why, sizeof why), 0);
  assert_int_equal(c, LA_CIPHER_XCHACHA20);
  if (aes) {
    assert_int_equal(link_with(agents_port(), LA_CIPHER_ONLY_AES256GCM, &c, why,
                               sizeof why),
                     0);
    assert_int_equal(c, LA_CIPHER_AES256GCM);
  }
  la_td_stop(D.ga, WAIT_MS);
  D.ga_extra = "--agents.cipher=xchacha20";
  start_ga(D.key);
  assert_int_equal(link_with(agents_port(), LA_CIPHER_AUTO, &c, why, sizeof why),
                   0);
  assert_int_equal(c, LA_CIPHER_XCHACHA20);
  if (aes) {
    int rc = link_with(agents_port(), LA_CIPHER_ONLY_AES256GCM, &c, why,
                       sizeof why);
    assert_int_equal(rc, LA_EAUTH);
    print_message("refused: %s\n", why);
    CHECK(strstr(why, "no common cipher"), "%s", why);
    wait_log(D.ga, "no common cipher: the LocalAgent offers aes256gcm, this "
                   "GlobalAgent accepts xchacha20");
  }
  D.ga_extra = NULL;
}

/* A man in the middle of the handshake: rewrites the Hello's offer or the
 * Challenge's choice, then relays the rest as it is. */
enum { MITM_STRIP_AES, MITM_STRIP_OFFER, MITM_ADD_AES, MITM_SWAP_CHOICE };

typedef struct {
  int lfd, mode;
  uint16_t port, target;
  pthread_t th;
} mitm_t;

static void *mitm_main(void *arg) {
  mitm_t *x = arg;
  int a = accept(x->lfd, NULL, NULL);
  int b = a < 0 ? -1 : la_tcp_connect("127.0.0.1", x->target, 5000);
  uint16_t t;
  ProtobufCMessage *m = NULL;
  char why[200];
  if (b < 0 || la_recv_msg(a, 4096, WAIT_MS, &t, &m, why, sizeof why) != 0)
    goto out;
  La__Hello *h = (La__Hello *)m;
  uint32_t *orig = h->ciphers, mine[2] = {LA_CIPHER_AES256GCM,
                                          LA_CIPHER_XCHACHA20};
  size_t n = h->n_ciphers;
  if (x->mode == MITM_STRIP_AES) {
    h->ciphers = mine + 1;
    h->n_ciphers = 1;
  } else if (x->mode == MITM_STRIP_OFFER) {
    h->n_ciphers = 0;
  } else if (x->mode == MITM_ADD_AES) {
    h->ciphers = mine;
    h->n_ciphers = 2;
  }
  int rc = la_send_msg(b, t, m, WAIT_MS);
  h->ciphers = orig;
  h->n_ciphers = n;
  la_msg_free(m);
  m = NULL;
  if (rc || la_recv_msg(b, 4096, WAIT_MS, &t, &m, why, sizeof why) != 0)
    goto out;
  if (x->mode == MITM_SWAP_CHOICE && t == LA__MSG_TYPE__MSG_CHALLENGE)
    ((La__Challenge *)m)->cipher = LA_CIPHER_XCHACHA20;
  if (la_send_msg(a, t, m, WAIT_MS)) goto out;
  for (;;) { /* the rest as it is, until either side closes */
    uint8_t buf[4096];
    struct pollfd pf[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    if (poll(pf, 2, WAIT_MS) <= 0) break;
    ssize_t k;
    if (pf[0].revents &&
        ((k = recv(a, buf, sizeof buf, 0)) <= 0 || write_full(b, buf, (size_t)k)))
      break;
    if (pf[1].revents &&
        ((k = recv(b, buf, sizeof buf, 0)) <= 0 || write_full(a, buf, (size_t)k)))
      break;
  }
out:
  la_msg_free(m);
  if (a >= 0) close(a);
  if (b >= 0) close(b);
  return NULL;
}

/* A changed offer or choice fails the handshake: the proofs of the two
 * sides differ (the GlobalAgent refuses the LocalAgent's), or the
 * LocalAgent sees a choice that does not answer its offer. The same
 * client through a relay that changes nothing links with AES-256-GCM. An
 * offer removed on the way is what an older GlobalAgent looks like: both
 * sides then talk as before negotiation, XChaCha20 (what a relay gains is
 * the other sound cipher), and a LocalAgent offering AES-256-GCM alone
 * refuses. */
static void link_tampered_negotiation(void **state) {
  (void)state;
  if (!la_cipher_available(LA_CIPHER_AES256GCM)) {
    print_message("no AES-256-GCM on this CPU: no downgrade to test\n");
    return;
  }
  start_ga(D.key);
  static const struct {
    int mode;
    const char *what, *client_sees;
  } cases[] = {
      {MITM_STRIP_AES, "AES-256-GCM struck from the offer", NULL},
      {MITM_STRIP_OFFER, "the offer of AES-256-GCM alone removed", "no cipher"},
      {MITM_ADD_AES, "AES-256-GCM added to an offer without it",
       "did not offer"},
      {MITM_SWAP_CHOICE, "the choice changed to XChaCha20", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mitm_t x = {0};
    x.mode = cases[i].mode;
    x.target = agents_port();
    x.lfd = listen_any(&x.port);
    assert_int_equal(pthread_create(&x.th, NULL, mitm_main, &x), 0);
    char why[300] = "";
    uint32_t c;
    int rc = link_with(x.port,
                       x.mode == MITM_ADD_AES       ? LA_CIPHER_ONLY_XCHACHA20
                       : x.mode == MITM_STRIP_OFFER ? LA_CIPHER_ONLY_AES256GCM
                                                    : LA_CIPHER_AUTO,
                       &c, why, sizeof why);
    pthread_join(x.th, NULL);
    close(x.lfd);
    print_message("%s: %d, %s\n", cases[i].what, rc, why);
    if (rc == 0) fail_msg("%s: the handshake succeeded", cases[i].what);
    if (cases[i].client_sees) {
      assert_int_equal(rc, LA_EAUTH);
      CHECK(strstr(why, cases[i].client_sees), "%s: %s", cases[i].what, why);
    } else { /* refused by the GlobalAgent: the proof does not verify */
      assert_int_equal(rc, LA_EAUTH);
      CHECK(strstr(why, "MAC mismatch"), "%s: %s", cases[i].what, why);
    }
  }
  assert_true(la_td_status_ll(D.ga, "auth_failures") >= 2);
  /* untouched, the same way: linked with AES-256-GCM; the offer (auto:
   * both ciphers) removed on the way: linked as before negotiation,
   * XChaCha20; records flowing both ways each time */
  static const struct {
    int mode;
    uint32_t cipher;
  } linked[] = {{-1, LA_CIPHER_AES256GCM},
                {MITM_STRIP_OFFER, LA_CIPHER_XCHACHA20}};
  mitm_t x = {0};
  x.target = agents_port();
  for (size_t i = 0; i < sizeof linked / sizeof linked[0]; i++) {
    x.mode = linked[i].mode;
    x.lfd = listen_any(&x.port);
    assert_int_equal(pthread_create(&x.th, NULL, mitm_main, &x), 0);
    char why[300] = "";
    uint32_t c;
    assert_int_equal(link_with(x.port, LA_CIPHER_AUTO, &c, why, sizeof why),
                     0);
    assert_int_equal(c, linked[i].cipher);
    pthread_join(x.th, NULL);
    close(x.lfd);
  }
  /* the real LocalAgent, its offer removed on the way (what an older
   * GlobalAgent looks like): it links with XChaCha20 and says so */
  x.mode = MITM_STRIP_OFFER;
  x.lfd = listen_any(&x.port);
  char via[64];
  snprintf(via, sizeof via, "127.0.0.1:%u", x.port);
  start_la(via, D.key, "mitmnode");
  assert_int_equal(pthread_create(&x.th, NULL, mitm_main, &x), 0);
  wait_log(D.la, "predates cipher negotiation: XChaCha20");
  la_td_stop(D.la, WAIT_MS);
  pthread_join(x.th, NULL);
  close(x.lfd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define D(f) cmocka_unit_test_setup_teardown(f, dsetup, dteardown)
      T(mac_round_trip),
      T(mac_refusals),
      T(mac_bad_arguments_zero_output),
      T(mac_known_answer),
      T(mac_split_is_unambiguous),
      T(nonces_differ),
      T(key_file_modes),
      T(key_file_missing),
      T(key_file_not_regular),
      T(key_file_lengths),
      T(key_derivation),
      T(generate_secret),
      cmocka_unit_test(session_both_sides_agree),
      cmocka_unit_test(records_refuse_tampering),
      cmocka_unit_test(records_refuse_tampering_aes),
      cmocka_unit_test(records_aes_rekey),
      cmocka_unit_test(cipher_negotiation),
      D(link_end_to_end),
      D(link_wrong_secrets),
      D(link_without_secret),
      D(link_fake_global_refused),
      D(link_flipped_byte),
      D(link_replayed_record),
      D(link_old_localagent),
      D(link_ciphers_interoperate),
      D(link_tampered_negotiation),
#undef T
#undef D
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
