/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_serve_page.c: the page `lactl serve` sends, tools/lactl_serve_page.html
 * (one file: HTML, inline CSS and JavaScript, nothing fetched from
 * elsewhere), embedded into lactl at build time with the assembler's
 * .incbin (the Makefile makes this object depend on the HTML file).
 */
#include <stddef.h>

#include "lactl_serve.h"

extern const char lactl_sv_page_start[], lactl_sv_page_end[];
__asm__(
    ".section .rodata\n"
    ".balign 16\n"
    ".type lactl_sv_page_start, @object\n"
    "lactl_sv_page_start:\n"
    ".incbin \"tools/lactl_serve_page.html\"\n"
    "lactl_sv_page_end:\n"
    ".byte 0\n"
    ".previous\n");

const char *lactl_sv_page(size_t *len) {
  *len = (size_t)(lactl_sv_page_end - lactl_sv_page_start);
  return lactl_sv_page_start;
}
