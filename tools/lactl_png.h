/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_png.h: a small RGB image embedded in an SVG as a PNG data URI
 * (zlib's deflate, no image library), and base64 for it and for the
 * live view's binary arrays. What makes a picture of a million cells a
 * few hundred kilobytes instead of one SVG element per cell.
 */
#ifndef LACTL_PNG_H
#define LACTL_PNG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Encodes w x h pixels (rgb: 3 bytes each, rows top to bottom) as a PNG
 * into *out (malloc'ed, *len bytes). 0, LA_EINVAL or LA_ENOMEM. */
int lactl_png_rgb(const uint8_t *rgb, uint32_t w, uint32_t h, uint8_t **out,
                  size_t *len);

/* Writes p[0..n) base64-encoded (RFC 4648, padded, no line breaks). */
void lactl_base64(FILE *f, const void *p, size_t n);

/* Writes an SVG <image> of the w x h pixels at (x, y), dw x dh px,
 * scaled without smoothing, with attrs (may be NULL); the data URI in
 * xlink:href (SVG 1.1; the element declares the namespace). 0 or
 * LA_ENOMEM. */
int lactl_png_svg_image(FILE *f, const uint8_t *rgb, uint32_t w, uint32_t h,
                        double x, double y, double dw, double dh,
                        const char *attrs);

/* Parses "#rrggbb" into rgb[3]. */
void lactl_png_hex(const char *hex, uint8_t rgb[3]);

#endif /* LACTL_PNG_H */
