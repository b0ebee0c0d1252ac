/* SPDX-License-Identifier: BSD-3-Clause */
/* la_cipher.c: the offer and the choice of la_cipher.h. */
#include "la_cipher.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_errors.h"

const char *la_cipher_name(uint32_t id) {
  switch (id) {
    case LA_CIPHER_XCHACHA20:
      return "xchacha20";
    case LA_CIPHER_AES256GCM:
      return "aes256gcm";
    default:
      return "unknown";
  }
}

int la_cipher_available(uint32_t id) {
  if (id == LA_CIPHER_XCHACHA20) return 1;
  /* the CPU's features are known once libsodium started (idempotent) */
  if (id == LA_CIPHER_AES256GCM)
    return sodium_init() >= 0 && crypto_aead_aes256gcm_is_available();
  return 0;
}

int la_cipher_parse(const char *name, const char *value, int legacy_ok,
                    la_cipher_pref_t *out, char *why, size_t why_len) {
  if (!value || !*value || !strcmp(value, "auto"))
    *out = LA_CIPHER_AUTO;
  else if (!strcmp(value, "xchacha20"))
    *out = LA_CIPHER_ONLY_XCHACHA20;
  else if (!strcmp(value, "aes256gcm"))
    *out = LA_CIPHER_ONLY_AES256GCM;
  else if (legacy_ok && !strcmp(value, "legacy"))
    *out = LA_CIPHER_LEGACY;
  else
    return la_errorf(why, why_len, LA_EINVAL,
                     "%s = '%s': expected auto, xchacha20%s or aes256gcm", name,
                     value, legacy_ok ? ", legacy" : "");
  if (*out == LA_CIPHER_ONLY_AES256GCM &&
      !la_cipher_available(LA_CIPHER_AES256GCM))
    return la_errorf(why, why_len, LA_EINVAL,
                     "%s = aes256gcm: this CPU has no AES-256-GCM (AES-NI and "
                     "PCLMUL): use auto or xchacha20",
                     name);
  return 0;
}

size_t la_cipher_offer(la_cipher_pref_t p, uint32_t *offer) {
  size_t n = 0;
  if (p == LA_CIPHER_LEGACY) return 0;
  if (p != LA_CIPHER_ONLY_XCHACHA20 && la_cipher_available(LA_CIPHER_AES256GCM))
    offer[n++] = LA_CIPHER_AES256GCM;
  if (p != LA_CIPHER_ONLY_AES256GCM) offer[n++] = LA_CIPHER_XCHACHA20;
  return n;
}

int la_cipher_offered(uint32_t id, const uint32_t *offer, size_t n) {
  if (n > LA_CIPHER_OFFER_MAX) n = LA_CIPHER_OFFER_MAX;
  for (size_t i = 0; i < n; i++)
    if (offer[i] == id) return 1;
  return 0;
}

const char *la_cipher_choice_problem(const uint32_t *offer, size_t *n, int has,
                                     uint32_t id) {
  if (*n == 0) return NULL;
  if (!has) {
    /* an older GlobalAgent (or this side's offer removed on the way: the
     * other side then saw no offer either): talked to as before, with
     * XChaCha20 and the transcript without an offer, when the offer allows
     * XChaCha20 (both ciphers are sound: what a relay gains is the other
     * one); a changed choice or offer still fails the proofs */
    if (la_cipher_offered(LA_CIPHER_XCHACHA20, offer, *n)) {
      *n = 0;
      return NULL;
    }
    return "it chose no cipher: it predates cipher negotiation (it can use "
           "only XChaCha20, which this side does not offer), or someone in "
           "between removed this side's offer";
  }
  if (!la_cipher_offered(id, offer, *n))
    return "it chose a cipher this side did not offer: someone in between "
           "altered the offer";
  return NULL;
}

uint32_t la_cipher_choose(la_cipher_pref_t p, const uint32_t *offer, size_t n,
                          char *why, size_t why_len) {
  static const uint32_t legacy[] = {LA_CIPHER_XCHACHA20};
  if (n == 0) {
    offer = legacy;
    n = 1;
  }
  uint32_t mine[LA_CIPHER_OFFER_MAX];
  size_t m = la_cipher_offer(p == LA_CIPHER_LEGACY ? LA_CIPHER_AUTO : p, mine);
  /* this side's preference decides among what both can use */
  for (size_t i = 0; i < m; i++)
    if (la_cipher_offered(mine[i], offer, n)) return mine[i];
  char got[96] = "";
  size_t k = 0;
  for (size_t i = 0; i < n && i < LA_CIPHER_OFFER_MAX; i++)
    k += (size_t)snprintf(got + k, k < sizeof got ? sizeof got - k : 0, "%s%s",
                          i ? ", " : "", la_cipher_name(offer[i]));
  la_errorf(why, why_len, 0, "no common cipher: the LocalAgent offers %s%s, "
            "this GlobalAgent accepts %s",
            got, offer == legacy ? " (it predates cipher negotiation)" : "",
            m == 1 ? la_cipher_name(mine[0]) : "aes256gcm, xchacha20");
  return 0;
}
