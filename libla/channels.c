/* SPDX-License-Identifier: BSD-3-Clause */
/* channels.c: LA_channel, the application's declared channel names.
 *
 * Channels are declared before LA_register; the registration sends their
 * names to the LocalAgent and sizes the shared memory for them
 * (lifecycle.c); LA_finalize forgets them. Ids are given in declaration
 * order from 0, so the plain probes, which use channel 0, probe the first
 * declared channel. Not thread-safe: declare from one thread, before
 * probing starts (like the settings calls).
 */
#include <ctype.h>
#include <string.h>

#include "la_codec.h"
#include "la_internal.h"

_Static_assert(LA_MAX_CHANNELS == LA_MAX_CHANNELS_WIRE &&
                   LA_MAX_CHANNELS == LA_SHM_MAX_CHANNELS &&
                   LA_MAX_CHANNEL_NAME == LA_MAX_CHANNEL_NAME_WIRE,
               "one channel limit everywhere");

static struct {
  int frozen; /* LA_register was called (la__channels_freeze) */
  uint32_t n;
  char name[LA_MAX_CHANNELS][LA_MAX_CHANNEL_NAME + 1];
  const char *ptr[LA_MAX_CHANNELS];
} la__ch;

LA_EXPORT int LA_channel(const char *name) {
  if (la__ch.frozen)
    return la__error(LA_ESTATE,
                     "LA_channel after LA_register (declare "
                     "channels before it)");
  size_t len = name ? strlen(name) : 0;
  if (len == 0 || len > LA_MAX_CHANNEL_NAME)
    return la__error(LA_EINVAL, "channel name empty or longer than %d",
                     LA_MAX_CHANNEL_NAME);
  for (size_t i = 0; i < len; i++)
    if (!isgraph((unsigned char)name[i]))
      return la__error(LA_EINVAL,
                       "channel name '%s' has a space or a "
                       "character that is not printable",
                       name);
  for (uint32_t c = 0; c < la__ch.n; c++)
    if (!strcmp(la__ch.name[c], name))
      return la__error(LA_EINVAL, "channel '%s' declared twice (id %u)", name,
                       c);
  if (la__ch.n >= LA_MAX_CHANNELS)
    return la__error(LA_ELIMIT, "more than %d channels (LA_MAX_CHANNELS)",
                     LA_MAX_CHANNELS);
  memcpy(la__ch.name[la__ch.n], name, len + 1);
  la__ch.ptr[la__ch.n] = la__ch.name[la__ch.n];
  return (int)la__ch.n++;
}

uint32_t la__channels(const char *const **names) {
  if (names) *names = la__ch.ptr;
  return la__ch.n;
}

void la__channels_freeze(void) {
  la__ch.frozen = 1;
}

void la__channels_reset(void) {
  memset(&la__ch, 0, sizeof la__ch);
}
