/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_png.c: PNG encoding with zlib and base64 (see lactl_png.h). */
#include "lactl_png.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "la_errcodes.h"

static void la__be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Appends chunk type (4 chars) with data d[0..n) at *o, advancing it. */
static void la__chunk(uint8_t **o, const char *type, const uint8_t *d,
                      size_t n) {
  uint8_t *p = *o;
  la__be32(p, (uint32_t)n);
  memcpy(p + 4, type, 4);
  if (n) memcpy(p + 8, d, n);
  uLong crc = crc32(0L, p + 4, (uInt)(n + 4));
  la__be32(p + 8 + n, (uint32_t)crc);
  *o = p + 12 + n;
}

int lactl_png_rgb(const uint8_t *rgb, uint32_t w, uint32_t h, uint8_t **out,
                  size_t *len) {
  *out = NULL, *len = 0;
  if (w == 0 || h == 0 || w > (1u << 15) || h > (1u << 15)) return LA_EINVAL;
  size_t row = (size_t)w * 3 + 1, raw_n = row * h;
  uint8_t *raw = malloc(raw_n);
  uLongf zn = compressBound((uLong)raw_n);
  uint8_t *z = malloc(zn);
  uint8_t *png = malloc(zn + 64);
  if (!raw || !z || !png) {
    free(raw), free(z), free(png);
    return LA_ENOMEM;
  }
  for (uint32_t y = 0; y < h; y++) {
    raw[y * row] = 0; /* filter: none */
    memcpy(raw + y * row + 1, rgb + (size_t)y * w * 3, (size_t)w * 3);
  }
  int zr = compress2(z, &zn, raw, (uLong)raw_n, 9);
  free(raw);
  if (zr != Z_OK) {
    free(z), free(png);
    return LA_ENOMEM;
  }
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  uint8_t ihdr[13], *o = png + 8;
  memcpy(png, sig, 8);
  la__be32(ihdr, w), la__be32(ihdr + 4, h);
  ihdr[8] = 8, ihdr[9] = 2, ihdr[10] = ihdr[11] = ihdr[12] = 0; /* RGB8 */
  la__chunk(&o, "IHDR", ihdr, sizeof ihdr);
  la__chunk(&o, "IDAT", z, zn);
  la__chunk(&o, "IEND", NULL, 0);
  free(z);
  *out = png, *len = (size_t)(o - png);
  return 0;
}

void lactl_base64(FILE *f, const void *p, size_t n) {
  static const char a[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const uint8_t *s = p;
  char q[4];
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16;
    if (i + 1 < n) v |= (uint32_t)s[i + 1] << 8;
    if (i + 2 < n) v |= s[i + 2];
    q[0] = a[v >> 18 & 63], q[1] = a[v >> 12 & 63];
    q[2] = i + 1 < n ? a[v >> 6 & 63] : '=';
    q[3] = i + 2 < n ? a[v & 63] : '=';
    fwrite(q, 1, 4, f);
  }
}

int lactl_png_svg_image(FILE *f, const uint8_t *rgb, uint32_t w, uint32_t h,
                        double x, double y, double dw, double dh,
                        const char *attrs) {
  uint8_t *png;
  size_t n;
  int rc = lactl_png_rgb(rgb, w, h, &png, &n);
  if (rc) return rc;
  fprintf(f,
          "<image x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
          "preserveAspectRatio=\"none\" image-rendering=\"pixelated\" "
          "style=\"image-rendering:pixelated\"%s%s "
          "xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
          "xlink:href=\"data:image/png;base64,",
          x, y, dw, dh, attrs && *attrs ? " " : "", attrs ? attrs : "");
  lactl_base64(f, png, n);
  fputs("\"/>\n", f);
  free(png);
  return 0;
}

void lactl_png_hex(const char *hex, uint8_t rgb[3]) {
  unsigned v = (unsigned)strtoul(hex + 1, NULL, 16);
  rgb[0] = (uint8_t)(v >> 16), rgb[1] = (uint8_t)(v >> 8), rgb[2] = (uint8_t)v;
}
