/* test_auth.c: unit tests of the shared-secret challenge-response
 * (common/la_auth.{h,c}).
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
 * The link between the agents (la_auth_session_derive, common/la_secure.c):
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
 * stored exactly once.
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
#include "la_test_daemon.h"

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
  /* wrong host, host prefix, host case */
  assert_int_equal(la_auth_verify(&k, nonce, sizeof nonce, "node18", mac, 32),
                   LA_EAUTH);
  assert_int_equal(la_auth_verify(&k, nonce, sizeof nonce, "node1", mac, 32),
                   LA_EAUTH);
  assert_int_equal(la_auth_verify(&k, nonce, sizeof nonce, "NODE17", mac, 32),
                   LA_EAUTH);
  /* truncated, extended, empty, flipped MAC */
  assert_int_equal(la_auth_verify(&k, nonce, sizeof nonce, "node17", mac, 31),
                   LA_EAUTH);
  assert_int_equal(la_auth_verify(&k, nonce, sizeof nonce, "node17", mac, 16),
                   LA_EAUTH);
  assert_int_equal(la_auth_verify(&k, nonce, sizeof nonce, "node17", mac, 33),
                   LA_EAUTH);
  assert_int_equal(la_auth_verify(&k, nonce, sizeof nonce, "node17", mac, 0),
                   LA_EAUTH);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(mac_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(mac_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(mac_bad_arguments_zero_output, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(mac_known_answer, setup, teardown),
      cmocka_unit_test_setup_teardown(mac_split_is_unambiguous, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(nonces_differ, setup, teardown),
      cmocka_unit_test_setup_teardown(key_file_modes, setup, teardown),
      cmocka_unit_test_setup_teardown(key_file_missing, setup, teardown),
      cmocka_unit_test_setup_teardown(key_file_not_regular, setup, teardown),
      cmocka_unit_test_setup_teardown(key_file_lengths, setup, teardown),
      cmocka_unit_test_setup_teardown(key_derivation, setup, teardown),
      cmocka_unit_test_setup_teardown(generate_secret, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
