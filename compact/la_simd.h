/* SPDX-License-Identifier: BSD-3-Clause */
/* la_simd.h: whether this build carries the AVX2 kernels and whether they
 * may run on this CPU. Public to the engine's users (the LocalAgent's
 * robust pass and buffer reads choose their kernels by it), so they need
 * not include the engine's internals. */
#ifndef LA_SIMD_H
#define LA_SIMD_H

/* x86-64 builds with GCC or Clang carry AVX2 kernels (target attributes,
 * chosen at run time by la_compact_simd()); elsewhere only the portable
 * scalar code exists. Both compute bit-identical results. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define LA_COMPACT_X86 1
#else
#define LA_COMPACT_X86 0
#endif

/* 1 when the AVX2 kernels may run here (the CPU and the OS support AVX2 and
 * the environment variable LA_COMPACT_SCALAR is not set to a non-empty value
 * other than "0"), else 0. Read on every call; no state. */
int la_compact_simd(void);

#endif
