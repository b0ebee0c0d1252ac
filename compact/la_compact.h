/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact.h: the compaction engine (internal API of LA's daemons, client
 * library and tools).
 *
 * One rank's trace is a series of n doubles (one metric value per mesh
 * element, in element order). la_compact() turns it into a compact byte
 * string (docs/compaction.md documents the format) plus exact statistics of
 * the raw series and the error the compaction achieved; la_trace_open() parses
 * such a byte string once and then answers decode and range-sum queries.
 *
 * Modes (numbered as proto/la.proto's CompactMode):
 *   polyline  least-squares line segments; a segment closes just before the
 *             point that would push the coefficient of variation of its
 *             fitting error (RMSE / |mean|) above cv;
 *   maxerr    fewest line segments with |error| <= epsilon (absolute, or
 *             epsilon * |value| when relative), O'Rourke's online method;
 *   lossless  exact values (integer deltas + zigzag + varint, or XOR with the
 *             previous double).
 * A cv of 0 (polyline) or an epsilon of 0 (maxerr) means lossless.
 *
 * This module is pure C + libm: no libuv, sockets, protobuf or global state.
 * It does not know about ranks, cycles or the network; callers copy the
 * result into their messages. Functions return 0 or a negative LA_E* code
 * (la_errcodes.h).
 */
#ifndef LA_COMPACT_H
#define LA_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#include "la_errcodes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Wire numbering of proto/la.proto's CompactMode. */
enum {
  LA_COMPACT_DEFAULT = 0, /* let the configuration decide (= polyline) */
  LA_COMPACT_POLYLINE = 1,
  LA_COMPACT_MAXERR = 2,
  LA_COMPACT_LOSSLESS = 3
};

/* The fields of la.CompactParams, and the quantum, which is not a wire
 * parameter: the LocalAgent sets it from the application's timer. */
typedef struct la_compact_params {
  int mode;       /* LA_COMPACT_* */
  double cv;      /* polyline: bound on RMSE/|mean| per segment; 0: lossless */
  double epsilon; /* maxerr: bound on |error|; 0: lossless */
  int relative;   /* maxerr: the bound is epsilon * |value| */
  int connected;  /* segments share their end points (vertices) */
  int outliers;   /* isolated points that would break a segment are kept
                     verbatim as exceptions and the segment goes on */
  double quantum; /* polyline: > 0 when the values are whole multiples of
                     it (timer ticks times ns per tick): where the series is
                     too rough for lines to pay, points are stored exactly as
                     integers k, value k * quantum (quantized runs,
                     docs/compaction.md). 0: none. Checked per point. */
} la_compact_params_t;

/* Exact statistics of a raw series. count is n; sum is the Neumaier
 * (compensated) sum in index order, as computed by la_series_stats(); min and
 * max ignore NaN and are NaN when no value is a number (n == 0, all NaN).
 * Inf and NaN values propagate into sum as IEEE arithmetic says. */
typedef struct la_series_stats {
  uint64_t count;
  double sum, min, max;
} la_series_stats_t;

/* Error of the reconstruction against the raw series, over the points that
 * are not stored verbatim: max |x - x'|, RMSE, and RMSE / |mean of x|
 * (0 when there is no such point; +Inf when the mean is 0 and RMSE is not). */
typedef struct la_fit_error {
  double max_abs, rmse, cv;
} la_fit_error_t;

typedef struct la_compact_result {
  uint8_t *bytes;          /* the encoding; malloc'ed, owned by the result */
  size_t len;              /* bytes in the encoding */
  int mode;                /* mode actually used (LA_COMPACT_POLYLINE..) */
  size_t segments;         /* line segments + verbatim runs (0: lossless) */
  size_t exceptions;       /* isolated points stored verbatim */
  uint64_t quantized;      /* points stored exactly in quantized runs */
  la_series_stats_t stats; /* of the raw series, exact */
  la_fit_error_t error;    /* achieved by the encoding, measured */
} la_compact_result_t;

/* ------------------------------------------------------------ parameters */

/* Fills *p with the defaults: polyline, cv 0.1, epsilon 0, absolute,
 * disjoint segments, outliers on. */
void la_compact_params_default(la_compact_params_t *p);

/* Checks ranges: mode 0..3; cv and epsilon finite and >= 0; maxerr with
 * epsilon 0 and polyline with cv 0 are valid (they mean lossless). Returns 0
 * or LA_EINVAL with a reason in why (if why is not NULL). */
int la_compact_params_check(const la_compact_params_t *p, char *why,
                            size_t why_len);

/* The mode la_compact() will use for p: DEFAULT becomes POLYLINE, cv 0 or
 * epsilon 0 become LOSSLESS. */
int la_compact_effective_mode(const la_compact_params_t *p);

/* Parses a spec "MODE[:OPT[,OPT...]]" into *p (which it first resets to the
 * defaults). MODE is polyline, maxerr or lossless; OPT is cv=X, eps=X
 * (also epsilon=X), relative, absolute, connected, disjoint, outliers,
 * no-outliers. Options must fit the mode (cv= only for polyline, eps= and
 * relative only for maxerr); maxerr needs eps=. Returns 0, or LA_EINVAL with
 * why naming the bad token. */
int la_compact_spec_parse(const char *spec, la_compact_params_t *p, char *why,
                          size_t why_len);

/* Writes the canonical spec of *p into buf (NUL-terminated; parsing it gives
 * back the same parameters). Returns the length, or LA_EINVAL when p is
 * invalid, or LA_ELIMIT when buf is too small (64 bytes always suffice). */
int la_compact_spec_format(const la_compact_params_t *p, char *buf, size_t len);

/* Name of a mode ("polyline", "maxerr", "lossless", "default"), or "?". */
const char *la_compact_mode_name(int mode);

/* ------------------------------------------------------------ compaction */

/* Compacts x[0..n) with the parameters p (NULL: defaults). x is read only.
 * On success returns 0 and fills *out; out->bytes is malloc'ed and freed by
 * la_compact_result_free(). On failure returns LA_EINVAL (bad parameters,
 * x NULL with n > 0), LA_ENOMEM or LA_ELIMIT (n > LA_TRACE_MAX_POINTS, that
 * is 2^40), and *out is zeroed. One pass over x for the fit, O(1) work and
 * state per point except maxerr's convex hulls (amortized O(1), reused
 * between segments); stats and achieved error take one more pass (the error
 * is measured by decoding). */
int la_compact(const double *x, size_t n, const la_compact_params_t *p,
               la_compact_result_t *out);

/* la_compact(), and the values a decoder gives for the result, without
 * decoding it: recon[0..n) (caller's memory, not x) receives, bit for bit,
 * what la_trace_open() + la_trace_decode() of out->bytes would give (the
 * encoder writes each record's reconstruction as it writes the record; the
 * bytes are la_compact()'s). The LocalAgent hands the robust weights so
 * reconstructed to the application and the history. Returns what
 * la_compact() returns, or LA_EINVAL when recon is NULL (n > 0) or is x; on
 * failure recon's contents are unspecified. */
int la_compact_recon(const double *x, size_t n, const la_compact_params_t *p,
                     la_compact_result_t *out, double *recon);

/* la_compact_recon(), and starts[0..min(out->segments, cap)) (caller's
 * memory) receives the first point of each record, what
 * la_trace_segment(t, i, &s) gives as s.first, without opening the trace
 * (out->segments is la_trace_segment_count(); lossless writes none).
 * LA_EINVAL also when starts is NULL with cap > 0. */
int la_compact_recon_starts(const double *x, size_t n,
                            const la_compact_params_t *p,
                            la_compact_result_t *out, double *recon,
                            uint64_t *starts, size_t cap);

/* Frees out->bytes and zeroes *r. NULL and zeroed results are fine. */
void la_compact_result_free(la_compact_result_t *r);

/* Exact statistics of x[0..n) (see la_series_stats_t). */
void la_series_stats(const double *x, size_t n, la_series_stats_t *st);

/* Compensated (Neumaier) sum in index order: the definition of stats.sum. */
double la_compact_sum(const double *x, size_t n);

/* Error of y against the raw x over n points, skipping indexes i where
 * skip != NULL and skip[i] != 0 (verbatim points). */
void la_fit_error_measure(const double *x, const double *y, size_t n,
                          const uint8_t *skip, la_fit_error_t *e);

/* The compaction `in` of per-row totals (one point per row of k cells)
 * as the encoding of the per-cell series it stands for (header flag
 * "spread", docs/compaction.md): a decoder gives k points per stored
 * value, each the value / k. *out gets its own bytes and the per-cell
 * statistics and error (free with la_compact_result_free). Returns 0,
 * LA_EINVAL (k < 2 or > 2^32, in not an unspread encoding), LA_ELIMIT
 * (more than LA_TRACE_MAX_POINTS cells) or LA_ENOMEM. */
int la_compact_spread(const la_compact_result_t *in, uint64_t k,
                      la_compact_result_t *out);

/* The compaction `in` of the values v of pieces (one point per piece, in
 * order of first cell) as the encoding of the per-cell series they stand
 * for (header flag "pieced", docs/compaction.md): the geometry's bytes
 * (la_compact_pieces.h, geom, glen) go inside, and a decoder gives the
 * geometry's cells, each its piece's value over its cells (0 in no
 * piece). *out gets its own bytes, the per-cell statistics and error
 * (quantized stays in stored values; free with la_compact_result_free).
 * v NULL (the raw values not kept, as a robust series'): the statistics'
 * min and max and the error are bounds from in's (every share lies
 * between in's min and max over the most and the fewest cells of a
 * piece; the error is at most in's over the fewest cells). Each series
 * carries its own copy of the geometry. Returns 0, LA_EINVAL (in not a
 * plain encoding, a geometry that la_pieces_decode refuses or whose count
 * is not in's), LA_ENOMEM. */
int la_compact_pieced(const la_compact_result_t *in, const double *v,
                      const uint8_t *geom, size_t glen,
                      la_compact_result_t *out);

/* la_compact_pieced with the geometry g already decoded and checked by
 * the caller (la_pieces_decode or la_pieces_from_shm: geom, glen are g's
 * bytes, la_pieces_encode), so a cycle's series do not decode it again
 * each; readers of the encoding still check it. LA_EINVAL when g's count
 * is not in's. */
struct la_pieces;
int la_compact_pieced_of(const la_compact_result_t *in, const double *v,
                         const struct la_pieces *g, const uint8_t *geom,
                         size_t glen, la_compact_result_t *out);

/* -------------------------------------------------------------- decoding */

typedef struct la_trace la_trace_t; /* opaque: a parsed, validated encoding */

/* Parses and fully validates an encoding (header, every record, CRC, exact
 * length). Never reads outside bytes[0..len). On success *out owns its own
 * index (bytes may be freed afterwards) and 0 is returned. Errors: LA_EINVAL
 * (NULL arguments), LA_EPROTO (bad magic, unknown version or mode, malformed
 * record, checksum mismatch, trailing bytes), LA_ETRUNC (ends early),
 * LA_ELIMIT (more points than LA_TRACE_MAX_POINTS), LA_ENOMEM; why says what
 * and where. */
int la_trace_open(const uint8_t *bytes, size_t len, la_trace_t **out, char *why,
                  size_t why_len);

#define LA_TRACE_MAX_POINTS (UINT64_C(1) << 40)

/* As la_trace_open(), but an encoding declaring more than max_points points
 * (capped at LA_TRACE_MAX_POINTS) is refused with LA_ELIMIT right after its
 * header is read, before any memory is allocated for its points. Callers that
 * know how many points a trace must hold (a rank's element count) pass it
 * here, so a short encoding cannot make them allocate or decode more. */
int la_trace_open_max(const uint8_t *bytes, size_t len, uint64_t max_points,
                      la_trace_t **out, char *why, size_t why_len);

/* Checks an encoding as la_trace_open_max() does, with the same parser: the
 * same checks in the same order, so the same return code and why for every
 * input, but it builds no index and allocates nothing (O(1) memory, one
 * pass over bytes). On success *n_points and *mode are the trace's point
 * count and mode, as la_trace_count() and la_trace_mode() would say. For
 * callers that only decide whether to accept a trace (the GlobalAgent's
 * ingest); tests check the two agree on valid, cut and corrupted inputs. */
int la_trace_check_max(const uint8_t *bytes, size_t len, uint64_t max_points,
                       uint64_t *n_points, int *mode, char *why,
                       size_t why_len);

/* What la_trace_check_totals() learns of an encoding's values while
 * checking it (the same one pass as la_trace_check_max(), nothing
 * decoded into memory). Sums are over the stored values (a spread trace's
 * row totals) that are finite. */
typedef struct la_trace_totals {
  uint64_t n_points;   /* as la_trace_count() */
  uint64_t stored;     /* stored values: n_points / spread */
  uint64_t spread;     /* cells per stored value (1: not spread) */
  int pieced;          /* one stored value per piece (a geometry) */
  int mode;            /* LA_COMPACT_* */
  int relative;        /* maxerr relative */
  double bound;        /* cv (polyline), epsilon (maxerr), 0 (lossless) */
  double sum;          /* the decoded finite values' sum, rounded once */
  double abs_sum;      /* an upper bound of the sum of their magnitudes */
  double exact_min;    /* least and greatest number stored exactly */
  double exact_max;    /* (verbatim, quantized, exception): NaN if none */
  int has_nan, has_pinf, has_ninf; /* such values decode */
} la_trace_totals_t;

/* As la_trace_check_max(), and on success fills *tot. Returns 0 or the
 * code la_trace_check_max() would return, with why. */
int la_trace_check_totals(const uint8_t *bytes, size_t len,
                          uint64_t max_points, la_trace_totals_t *tot,
                          char *why, size_t why_len);

/* Whether the statistics st claimed for a series (la_series_stats_t, as
 * they travel with a trace) can be those of the raw series an encoding
 * with totals tot came from (docs/compaction.md, "Checking claimed
 * statistics"): count equals the points; sum within the tolerance the
 * mode's bound allows of the decoded sum (the same non-finite class); min
 * and max ordered, bracketing sum / count and every value stored exactly
 * (equal to the least and greatest of a lossless trace). field names st
 * in why ("stats", "robust_stats"). Returns 0 or LA_EPROTO with why
 * naming the field, e.g. "stats.sum 2 disagrees with ...". */
int la_trace_claim_check(const la_trace_totals_t *tot,
                         const la_series_stats_t *st, const char *field,
                         char *why, size_t why_len);

/* Number of points of the trace. */
uint64_t la_trace_count(const la_trace_t *t);
/* Cells per stored value: k of a spread encoding (each stored value is
 * the total of k consecutive points, a row's), else 1. */
uint64_t la_trace_spread(const la_trace_t *t);
/* Mode of the encoding (LA_COMPACT_POLYLINE..LOSSLESS). */
int la_trace_mode(const la_trace_t *t);
/* The parameters recorded in the encoding (mode, cv or epsilon, flags). */
void la_trace_params(const la_trace_t *t, la_compact_params_t *p);

/* Writes the reconstruction of points [first, first+count) into out.
 * Returns 0 or LA_ERANGE when the range is not inside the trace. */
int la_trace_decode(const la_trace_t *t, uint64_t first, uint64_t count,
                    double *out);

/* Sum of the reconstruction over [first, first+count), computed from the
 * segments in closed form (O(log segments + exceptions in the range); for
 * verbatim values, lossless traces included, from checkpoints of their
 * running sum every 32 values, at most 62 values added). It
 * equals the sum of la_trace_decode()'s values up to rounding: the tests
 * require |difference| <= 1e-12 * sum of |values| + 1e-300. Returns 0 or
 * LA_ERANGE. */
int la_trace_range_sum(const la_trace_t *t, uint64_t first, uint64_t count,
                       double *sum);

/* Where la_trace_range_sum_at's search for a range's records starts: the
 * record and the value not finite its last range ended at. Zeroed: the
 * start of the trace. */
typedef struct la_trace_cursor {
  size_t rec, nf;
} la_trace_cursor_t;
/* la_trace_range_sum(), the same sum to the bit, for ranges taken in
 * order: the search for the range's records gallops forward from c's (a
 * range before c's searches every record), and c moves to the range's
 * last record; ranges in rising order, a few records apart (the runs of a
 * map's bins along a rank), cost O(log records between them) and touch
 * only the records between, not O(log records) anywhere in the index.
 * c NULL: la_trace_range_sum(). */
int la_trace_range_sum_at(const la_trace_t *t, la_trace_cursor_t *c,
                          uint64_t first, uint64_t count, double *sum);

/* The sums of nb equal slices of an encoding's points without building its
 * index: slice j is points [n*j/nb, n*(j+1)/nb) (n the point count, the
 * quotients rounded down), sums[j] their decoded sum. The encoding is
 * checked as la_trace_check_max() checks it (same codes, same why); a
 * lossy trace of one cell per value is summed in that one pass, O(1)
 * memory: its running sum (a double-double) is kept at each slice
 * boundary, a slice's sum is the difference of two, and only a record
 * across a boundary takes its part before it (a line's in closed form);
 * a lossless or spread one, one with a value not finite, or one whose
 * sums leave the double range there, is opened and summed with
 * la_trace_range_sum(). The sums equal
 * la_trace_range_sum()'s over the same slices up to rounding (the tests
 * require 1e-12 of the sum of |values|). *n_points gets n. Returns 0, the
 * codes of la_trace_open_max(), or LA_EINVAL (nb outside
 * 1..LA_SLICES_MAX, NULL arguments). */
#define LA_SLICES_MAX 64
int la_trace_slice_sums(const uint8_t *bytes, size_t len, uint64_t max_points,
                        unsigned nb, double *sums, uint64_t *n_points,
                        char *why, size_t why_len);

/* The largest finite value of the reconstruction over [first,
 * first+count), equal to the largest of la_trace_decode()'s values
 * exactly (as numbers: of +0 and -0 either), without decoding: a line's
 * largest value is at an end of its stretch in the range (its points rise
 * or fall with the index, rounding included), exceptions and verbatim
 * values are read from the index (O(records + exceptions + verbatim
 * values in the range + log records)). NaN and infinities are left out;
 * *max is NaN when no value of the range is finite (count 0 included).
 * *nfinite (may be NULL) gets how many values are finite. Returns 0 or
 * LA_ERANGE (the range not inside the trace, t or max NULL). */
int la_trace_range_max(const la_trace_t *t, uint64_t first, uint64_t count,
                       double *max, uint64_t *nfinite);

/* la_trace_check_totals() and la_trace_slice_sums()'s sums in the same
 * one pass (the GlobalAgent's ingest check takes a trace's signature
 * there): on success *tot as la_trace_check_totals() fills it and, when
 * that pass can take them (a lossy trace of one cell per value whose
 * sums stay in the double range), sums[0..nb) as la_trace_slice_sums()
 * gives them and *sums_ok 1; otherwise *sums_ok 0 and sums undefined
 * (la_trace_slice_sums() on the bytes gives them). Returns 0, the codes
 * of la_trace_check_totals(), or LA_EINVAL (nb outside 1..LA_SLICES_MAX,
 * NULL arguments). */
int la_trace_check_totals_slices(const uint8_t *bytes, size_t len,
                                 uint64_t max_points, la_trace_totals_t *tot,
                                 unsigned nb, double *sums, int *sums_ok,
                                 char *why, size_t why_len);


/* The encoding of t's decoded values times scale, record for record: each
 * line through its ends times scale (its exceptions and verbatim runs the
 * scaled values), the header's mode, bound and flags t's (no quantum:
 * scaled values are no whole ticks). dec[0..n) must be t's decoded values
 * (la_trace_decode); x[0..n) (caller's scratch, not dec) receives them
 * times scale. A line whose scaled points miss it by more than 2^-30 of
 * their magnitude (rounding cannot) becomes a verbatim run, so the result
 * decodes to x within 2^-30 relative, in one pass (no segmentation). A
 * lossless or spread trace is compacted anew (la_compact()). out->stats
 * are x's; out->error is left zero. Returns 0, LA_EINVAL (bad arguments,
 * scale not finite), LA_ENOMEM. */
int la_trace_scaled(const la_trace_t *t, const double *dec, double scale,
                    double *x, la_compact_result_t *out);

/* One record of the encoding, for listings. */
enum { LA_SEG_LINE = 0, LA_SEG_VERBATIM = 1 };
typedef struct la_trace_segment {
  int kind;            /* LA_SEG_LINE or LA_SEG_VERBATIM */
  uint64_t first;      /* first point covered */
  uint64_t count;      /* points covered */
  double v0, v1;       /* line: values at the first and last point */
  uint64_t exceptions; /* exception points inside the segment */
  int quantized;       /* line values are quantized (else exact doubles) */
} la_trace_segment_t;

/* Number of records (0 for lossless traces). */
size_t la_trace_segment_count(const la_trace_t *t);
/* Fills *s with record i. Returns 0 or LA_ERANGE. */
int la_trace_segment(const la_trace_t *t, size_t i, la_trace_segment_t *s);
/* Is point i stored verbatim (exception or verbatim run, or lossless)? */
int la_trace_is_verbatim(const la_trace_t *t, uint64_t i);

/* Frees t. NULL is fine. */
void la_trace_close(la_trace_t *t);

/* ------------------------------------------------------- synthetic series
 * Deterministic (fixed seed) series for tests, benchmarks and lactl. */
enum {
  LA_SYNTH_MESH = 0, /* mesh costs: plateaus 2,000-22,000 points, 5% periodic,
                        2% noise, 0.1% spikes, whole ns */
  LA_SYNTH_STEPS,
  LA_SYNTH_RAMPS,
  LA_SYNTH_SINE,
  LA_SYNTH_SPIKES,
  LA_SYNTH_CONSTANT,
  LA_SYNTH_NOISE,
  LA_SYNTH_WALK,
  LA_SYNTH_KINDS
};
/* Fills x[0..n) with a series of the given kind. Returns 0 or LA_EINVAL. */
int la_compact_synth(int kind, size_t n, uint64_t seed, double *x);
const char *la_compact_synth_name(int kind); /* "mesh", ... or "?" */
int la_compact_synth_kind(const char *name); /* kind, or LA_EINVAL */
/* splitmix64 step, and a uniform double in [0, 1) from it. */
uint64_t la_compact_rand(uint64_t *state);
double la_compact_rand01(uint64_t *state);

#ifdef __cplusplus
}
#endif
#endif /* LA_COMPACT_H */
