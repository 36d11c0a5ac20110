/* The convolution kernels of tfc_conv.h for one element type: included once per type with
 * TFC_CONV_T (the C type) and TFC_CONV_TAG (its suffix: f32, f64) defined. No include guard. */

#define TFC_CONV_CAT_(a, b) a##_##b
#define TFC_CONV_CAT(a, b) TFC_CONV_CAT_(a, b)
#define TFC_CONV_FN(name) TFC_CONV_CAT(name, TFC_CONV_TAG)
#define TFC_CONV_VMADD TFC_CONV_CAT(TFC_CONV_VMADD, TFC_CONV_TAG)
#define T TFC_CONV_T

/* v after activation `act` (TFC_CONV_ACT_*), as the Relu and Relu6 kernels compute it */
TFC_CONV_INLINE T TFC_CONV_FN(tfc_conv_act)(T v, int64_t act) {
    if (act == TFC_CONV_ACT_NONE) return v;
    if (act == TFC_CONV_ACT_RELU6) return v < 0 ? (T)0 : (v > 6 ? (T)6 : v);
    return v < 0 ? (T)0 : v;
}

/* SIMD vectors of T (GCC/Clang vector extensions: AVX, SSE, NEON, wasm or plain scalars) and
 * their lanes */
#define TFC_CONV_NL ((int64_t)(TFC_CONV_VBYTES / sizeof(T)))
typedef T TFC_CONV_FN(tfc_conv_vec) __attribute__((vector_size(TFC_CONV_VBYTES)));
#define TFC_CONV_TV TFC_CONV_FN(tfc_conv_vec)
#define TFC_CONV_TL ((int64_t)(sizeof(TFC_CONV_TV) / sizeof(T)))
#define TFC_CONV_TMADD TFC_CONV_VMADD
#define TFC_CONV_TFN(name) TFC_CONV_CAT(TFC_CONV_FN(name), narrow)
#include "tfc_conv_tiles.h"
#undef TFC_CONV_TV
#undef TFC_CONV_TL
#undef TFC_CONV_TMADD
#undef TFC_CONV_TFN

/* Tiles whose channels fill whole 64-byte vectors use them where the build has AVX-512: half
 * the instructions of the AVX tiles (LeNet's 16-channel convolutions: 1.5-2x faster). CB (the
 * plan's, a constant where the kernels are inlined) picks one of the two at compile time. */
#if defined(TFC_CONV_WBYTES)
typedef T TFC_CONV_FN(tfc_conv_wvec) __attribute__((vector_size(TFC_CONV_WBYTES)));
#define TFC_CONV_TV TFC_CONV_FN(tfc_conv_wvec)
#define TFC_CONV_TL ((int64_t)(sizeof(TFC_CONV_TV) / sizeof(T)))
#define TFC_CONV_TMADD TFC_CONV_CAT(TFC_CONV_WMADD, TFC_CONV_TAG)
#define TFC_CONV_TFN(name) TFC_CONV_CAT(TFC_CONV_FN(name), wide)
#include "tfc_conv_tiles.h"
#undef TFC_CONV_TV
#undef TFC_CONV_TL
#undef TFC_CONV_TMADD
#undef TFC_CONV_TFN
#define TFC_CONV_WIDE(cb) ((cb) * (int64_t)sizeof(T) % TFC_CONV_WBYTES == 0)
#define TFC_CONV_PICK(name, cb, args)                                                            \
    do {                                                                                         \
        if (TFC_CONV_WIDE(cb))                                                                   \
            TFC_CONV_CAT(TFC_CONV_FN(name), wide) args;                                          \
        else                                                                                     \
            TFC_CONV_CAT(TFC_CONV_FN(name), narrow) args;                                        \
    } while (0)
#else
#define TFC_CONV_PICK(name, cb, args) TFC_CONV_CAT(TFC_CONV_FN(name), narrow) args
#endif

/* pixels (or filter taps) per tile of cb channels: the plan's for the vectors tiling them */
TFC_CONV_INLINE int64_t TFC_CONV_FN(tfc_conv_pix)(const tfc_conv_plan *g, int64_t cb) {
    (void)cb;
#if defined(TFC_CONV_WBYTES)
    if (TFC_CONV_WIDE(cb)) return g->pix_wide;
#endif
    return g->pix_block;
}

/* The vectors of channels of one part of a narrow tile of P pixels x CB channels: all of them
 * where the accumulators fit TFC_CONV_NARROW_ACC, else half as many until they do (while they
 * halve evenly). With AVX (16 registers) ResNet's blocks of 32 channels run as two 6 x 2 tiles
 * rather than one 3 x 4: a filter row held in two registers, 8 loads per 12 multiply-adds. */
TFC_CONV_INLINE int64_t TFC_CONV_FN(tfc_conv_narrow_part)(const int64_t P, const int64_t CB) {
    int64_t sv = CB / TFC_CONV_NL;
    while (sv % 2 == 0 && P * sv > TFC_CONV_NARROW_ACC) sv /= 2;
    return sv;
}

TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_tile)(const T *restrict x, int64_t px, int64_t row,
                                                int64_t col, int64_t kh_lo, int64_t kh_hi,
                                                int64_t kw_lo, int64_t kw_hi, int64_t kw_n,
                                                int64_t c, const T *restrict f, int64_t cp,
                                                T *y, int64_t y_px, int64_t nc,
                                                const int64_t P, const int64_t CB,
                                                const T *restrict bias, const T *res,
                                                const int64_t act, const char *pf, int64_t pf_n,
                                                int64_t pf_every, const char *pw, int64_t pw_n,
                                                int64_t pw_run, int64_t pw_stride) {
#if defined(TFC_CONV_WBYTES)
    if (TFC_CONV_WIDE(CB)) {
        TFC_CONV_CAT(TFC_CONV_FN(tfc_conv_tile), wide)(x, px, row, col, kh_lo, kh_hi, kw_lo,
                                                       kw_hi, kw_n, c, f, cp, y, y_px, nc, P,
                                                       CB, bias, res, act, pf, pf_n, pf_every,
                                                       pw, pw_n, pw_run, pw_stride);
        return;
    }
#endif
    /* narrower vectors: the block's channels in parts of SV vectors, each part a tile of its
     * own over all the taps, so that its P x SV accumulators stay in registers */
    const int64_t SV = TFC_CONV_FN(tfc_conv_narrow_part)(P, CB);
    for (int64_t o = 0; o < CB && o < nc; o += SV * TFC_CONV_NL) {
        const int64_t first = o == 0;
        TFC_CONV_CAT(TFC_CONV_FN(tfc_conv_tile), narrow)(
            x, px, row, col, kh_lo, kh_hi, kw_lo, kw_hi, kw_n, c, f + o, cp, y + o, y_px,
            nc - o < SV * TFC_CONV_NL ? nc - o : SV * TFC_CONV_NL, P, SV * TFC_CONV_NL,
            bias != NULL ? bias + o : NULL, res != NULL ? res + o : NULL, act, pf,
            first ? pf_n : 0, pf_every, pw, first ? pw_n : 0, pw_run, pw_stride);
    }
}

TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_rows_tile)(const T *restrict dy, int64_t dy_p,
                                                     int64_t co, const T *restrict ft,
                                                     int64_t lp, T *dxb, int64_t seg_p,
                                                     const int64_t P) {
    TFC_CONV_PICK(tfc_conv_rows_tile, lp, (dy, dy_p, co, ft, lp, dxb, seg_p, P));
}

TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_filter_tile)(const tfc_conv_plan *g,
                                                       const T *restrict xp,
                                                       const int64_t *restrict off,
                                                       const T *restrict dy, T *restrict df,
                                                       int64_t nc, const int64_t P,
                                                       const int64_t CB) {
    TFC_CONV_PICK(tfc_conv_filter_tile, CB, (g, xp, off, dy, df, nc, P, CB));
}
/* xp[n, hp, wp, c] = x[n, h, w, c] placed at (top, left), zeros around it */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_border)(const T *restrict x, int64_t n_img, int64_t h,
                                                  int64_t w, int64_t c, int64_t top, int64_t left,
                                                  int64_t hp, int64_t wp, T *restrict xp) {
    for (int64_t n = 0; n < n_img; ++n) {
        for (int64_t r = 0; r < hp; ++r) {
            T *dst = xp + (n * hp + r) * wp * c;
            const int64_t ih = r - top;
            if (ih < 0 || ih >= h) {
                for (int64_t i = 0; i < wp * c; ++i) dst[i] = 0;
                continue;
            }
            for (int64_t i = 0; i < left * c; ++i) dst[i] = 0;
            memcpy(dst + left * c, x + (n * h + ih) * w * c, (size_t)(w * c) * sizeof(T));
            for (int64_t i = (left + w) * c; i < wp * c; ++i) dst[i] = 0;
        }
    }
}

/* fp[t, 0:cp] = f[t, 0:c] then zeros, for each of `rows` rows */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_pad_rows)(const T *restrict f, int64_t rows, int64_t c,
                                                    int64_t cp, T *restrict fp) {
    for (int64_t t = 0; t < rows; ++t) {
        for (int64_t j = 0; j < c; ++j) fp[t * cp + j] = f[t * c + j];
        for (int64_t j = c; j < cp; ++j) fp[t * cp + j] = 0;
    }
}

/* fb[t, 0:cb] = f[t, b0 : b0 + cb] for the `rows` rows (taps) of f (row stride c), zeros past
 * channel c: one block of channels of the filter, contiguous, for the blocked direct kernel */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_filter_block)(const T *restrict f, int64_t rows,
                                                        int64_t c, int64_t b0, int64_t cb,
                                                        T *restrict fb) {
    const int64_t nc = c - b0 < cb ? c - b0 : cb;
    for (int64_t t = 0; t < rows; ++t) {
        for (int64_t j = 0; j < nc; ++j) fb[t * cb + j] = f[t * c + b0 + j];
        for (int64_t j = nc; j < cb; ++j) fb[t * cb + j] = 0;
    }
}

/* The taps k in [lo, hi) of kn whose position base + k*step lies in [from, to) */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_taps_inside)(int64_t base, int64_t step, int64_t kn,
                                                       int64_t from, int64_t to, int64_t *lo,
                                                       int64_t *hi) {
    const int64_t a = from - base, b = to - base; /* k*step in [a, b) */
    const int64_t first = a <= 0 ? 0 : TFC_IDIV(a + step - 1, step);
    const int64_t end = b <= 0 ? 0 : TFC_IDIV(b + step - 1, step);
    *lo = first;
    *hi = end < kn ? end : kn;
}

/* strip[r, j, 0:c] = row ih + r*dh of the image xi (w columns of c values) at column col0 + j,
 * zeros where that lies outside it: rows [0, nr) and columns [0, nw) of one tile's windows,
 * as a zero-bordered copy of the image holds them */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_strip)(const T *restrict xi, int64_t w, int64_t c,
                                                 int64_t ih, int64_t dh, int64_t nr,
                                                 int64_t col0, int64_t nw, T *restrict strip) {
    const int64_t lo = col0 < 0 ? -col0 : 0, hi = w - col0 < nw ? w - col0 : nw;
    for (int64_t r = 0; r < nr; ++r) {
        T *dst = strip + r * nw * c;
        for (int64_t i = 0; i < lo * c; ++i) dst[i] = 0;
        if (hi > lo)
            memcpy(dst + lo * c, xi + ((ih + r * dh) * w + col0 + lo) * c,
                   (size_t)((hi - lo) * c) * sizeof(T));
        for (int64_t i = (hi > lo ? hi : lo) * c; i < nw * c; ++i) dst[i] = 0;
    }
}

/* The elements of the strip buffer of tfc_conv_direct_row for tiles of P pixels */
TFC_CONV_INLINE int64_t TFC_CONV_FN(tfc_conv_strip_size)(const tfc_conv_plan *g, int64_t P) {
    return g->k_h * ((P - 1) * g->s_w + (g->k_w - 1) * g->d_w + 1) * g->in_c;
}

/* The tiles of output row `oh` of image `n`, channels [co0, co0 + CB), of tfc_conv_direct_core:
 * fb points at those channels' filter values of tap 0, the next tap's `fs` elements on; the
 * epilogue's bias [co] and res (laid out as y, or y itself: tfc_conv_store) are NULL where
 * there are none; y's pixels are ldy elements apart (co, or more: a slice of a wider tensor).
 * With `image`, xp is the images themselves (no border) and `strip` the buffer of the tiles at
 * an edge (tfc_conv_strip_size), which with `strip_ready` already holds the one tile's windows
 * (copied for the previous channel block). */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_direct_row)(
    int64_t n, int64_t oh, int64_t co0, int64_t hp, int64_t wp, int64_t c, const T *restrict xp,
    int64_t oh_n, int64_t ow_n, int64_t co, int64_t kh_n, int64_t kw_n, int64_t sh, int64_t sw,
    int64_t dh, int64_t dw, const T *restrict fb, int64_t fs, T *y, const int64_t P,
    const int64_t CB, int64_t u_lo, int64_t u_hi, int64_t v_lo, int64_t v_hi,
    const int64_t image, T *restrict strip, int64_t strip_ready, const T *restrict bias,
    const T *res, const int64_t act, int64_t ldy,
    const char *pf, int64_t pf_n, const T *ynext, int64_t ynext_px, int64_t ow_from,
    int64_t ow_to) {
    const int64_t full = TFC_IDIV(ow_n, P) * P;
    /* each tile prefetches for writing the lines of the output slice written next, of its
     * pixels (ynext: pixel ow_from's; at most ynext_px of them): they come from memory (the
     * residual, read there first, too), a slice of 128 bytes per pixel 1-4 KB apart, a
     * pattern the hardware's prefetchers miss */
    const int64_t pw_run = TFC_IDIV(CB * (int64_t)sizeof(T) + 63, 64);
    /* each tile prefetches its share of the row's pf_n lines, spread over its channels */
    const int64_t tiles = TFC_IDIV(ow_n + P - 1, P);
    const int64_t pf_tile = TFC_IDIV(pf_n + tiles - 1, tiles);
    /* with `image`, xp's images lie at (u_lo, v_lo) of the padded coordinates */
    const int64_t oy = image ? u_lo : 0, ox = image ? v_lo : 0;
    const T *restrict xi = xp + n * hp * wp * c;
    T *yr = y + (n * oh_n + oh) * ow_n * ldy;
    const T *rr = res != NULL ? res + (n * oh_n + oh) * ow_n * ldy : NULL;
    const T *restrict bt = bias != NULL ? bias + co0 : NULL;
    int64_t kh_lo, kh_hi;
    TFC_CONV_FN(tfc_conv_taps_inside)(oh * sh, dh, kh_n, u_lo, u_hi, &kh_lo, &kh_hi);
    const int64_t nkh = kh_hi > kh_lo ? kh_hi - kh_lo : 0;
    const int64_t ih = oh * sh + kh_lo * dh - oy; /* xp's row of the first kernel row read */
    const int64_t nc = co - co0 < CB ? co - co0 : CB;
    for (int64_t ow0 = ow_from; ow0 < ow_to; ow0 += P) {
        /* taps some pixel of the tile reads inside the image */
        const int64_t last = ow0 + P - 1 < ow_n ? ow0 + P - 1 : ow_n - 1;
        int64_t kw_lo, kw_hi, unused;
        TFC_CONV_FN(tfc_conv_taps_inside)(last * sw, dw, kw_n, v_lo, v_hi, &kw_lo, &unused);
        TFC_CONV_FN(tfc_conv_taps_inside)(ow0 * sw, dw, kw_n, v_lo, v_hi, &unused, &kw_hi);
        const int64_t nkw = kw_hi > kw_lo ? kw_hi - kw_lo : 0;
        /* xp's columns of the first pixel's first tap read and of the last pixel's last: an
         * image without a border lacks the columns outside it, so a tile that reads them runs
         * on a copy of its windows with zeros there (the strip: tfc_conv_strip), the bits of
         * the bordered kernel; the others read the image from their first pixel's first tap */
        const int64_t col0 = ow0 * sw + kw_lo * dw - ox;
        const int64_t col1 = last * sw + (kw_lo + nkw - 1) * dw - ox;
        const int none = nkh == 0 || nkw == 0;
        const int edge = image && !none && (col0 < 0 || col1 >= wp);
        const T *restrict xt = none || edge ? xi : xi + (ih * wp + col0) * c;
        int64_t row = dh * wp * c;
        if (edge) {
            const int64_t nw = col1 - col0 + 1;
            if (!strip_ready)
                TFC_CONV_FN(tfc_conv_strip)(xi, wp, c, ih, dh, nkh, col0, nw, strip);
            xt = strip;
            row = nw * c;
        }
        T *yt = yr + ow0 * ldy + co0;
        const T *rt = rr != NULL ? rr + ow0 * ldy + co0 : NULL;
        const int64_t done = TFC_IDIV(ow0, P) * pf_tile;
        const int64_t n_pf = pf_n - done < pf_tile ? (pf_n > done ? pf_n - done : 0) : pf_tile;
        const int64_t steps = (kh_hi - kh_lo) * (kw_hi - kw_lo) * c;
        const char *pt = pf != NULL ? pf + done * 64 : NULL;
        const int64_t n_pt = pt != NULL ? n_pf : 0;
        const char *pw = ynext != NULL ? (const char *)(ynext + (ow0 - ow_from) * ldy) : NULL;
        const int64_t px_pw = last - ow0 + 1 < ynext_px ? last - ow0 + 1 : ynext_px;
        const int64_t n_pw = pw != NULL ? px_pw * pw_run : 0;
        const int64_t every =
            n_pt + n_pw > 0 && steps > n_pt + n_pw ? TFC_IDIV(steps, n_pt + n_pw) : 1;
        const int64_t pw_stride = ldy * (int64_t)sizeof(T);
        if (ow0 < full) {
            TFC_CONV_FN(tfc_conv_tile)(xt, sw * c, row, dw * c, kh_lo, kh_hi, kw_lo,
                                       kw_hi, kw_n, c, fb, fs, yt, ldy, nc, P, CB, bt, rt, act,
                                       pt, n_pt, every, pw, n_pw, pw_run, pw_stride);
        } else {
            TFC_CONV_FN(tfc_conv_tile)(xt, sw * c, row, dw * c, kh_lo, kh_hi, kw_lo,
                                       kw_hi, kw_n, c, fb, fs, yt, ldy, nc, ow_n - full, CB, bt,
                                       rt, act, pt, n_pt, every, pw, n_pw, pw_run, pw_stride);
        }
    }
}

/* The output slice the blocked direct kernel writes after row r (of all images' rows) of the
 * block at channel co0 of the group of rows [r0, r1): row r + 1's, the group's first row's in
 * the next block after its last row, the next group's first row's in block 0 after the last
 * block; NULL after all of them. Its pixel 0's pointer. */
TFC_CONV_INLINE T *TFC_CONV_FN(tfc_conv_next_slice)(T *y, int64_t r, int64_t r0, int64_t r1,
                                                    int64_t rows, int64_t ow_n, int64_t ldy,
                                                    int64_t co0, int64_t co, int64_t cb) {
    if (r + 1 < r1) return y + (r + 1) * ow_n * ldy + co0;
    if (co0 + cb < co) return y + r0 * ow_n * ldy + co0 + cb;
    return r1 < rows ? y + r1 * ow_n * ldy : NULL;
}

/* The input rows that output row `oh` of image `n` does not read and the next output row does
 * (the first rows of image n + 1 after the last row; none after the part's last image), as
 * `*lines` cache lines from `*next`: the direct kernel's tiles of row oh prefetch them into L2,
 * spread over the row (the images come from memory once: a 1x1 reduction of 256 channels on
 * 56x56 reads each tile's 14 KB along 14 pixels' lines at once, a pattern the hardware's
 * prefetchers do not follow). None where a 1x1 filter strides along the row: it reads every
 * s_w-th pixel only. */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_next_rows)(int64_t n, int64_t oh, int64_t n_img,
                                                     int64_t hp, int64_t wp, int64_t c,
                                                     const T *xp, int64_t oh_n, int64_t kh_n,
                                                     int64_t kw_n, int64_t sh, int64_t sw,
                                                     int64_t dh, int64_t oy, const char **next,
                                                     int64_t *lines) {
    int64_t first, last; /* rows [first, last] of image n (of n + 1: from 0) */
    *next = NULL;
    *lines = 0;
    if (kw_n == 1 && sw > 1) return;
    if (oh + 1 < oh_n) {
        const int64_t read_to = oh * sh + (kh_n - 1) * dh; /* the last row oh reads */
        first = (oh + 1) * sh;
        first = first > read_to ? first : read_to + 1;
        last = (oh + 1) * sh + (kh_n - 1) * dh;
    } else if (n + 1 < n_img) {
        ++n;
        first = 0;
        last = (kh_n - 1) * dh;
    } else {
        return;
    }
    first -= oy; /* the padded coordinates' rows as xp's (oy: its first row's) */
    last -= oy;
    if (first < 0) first = 0;
    if (last >= hp) last = hp - 1;
    if (last < first) return;
    *next = (const char *)(xp + (n * hp + first) * wp * c);
    *lines = TFC_IDIV((last - first + 1) * wp * c * (int64_t)sizeof(T), 64);
}

/* y[n, oh, ow, 0:co] = sum over (kh, kw, ci) of
 *   xp[n, oh*sh + kh*dh, ow*sw + kw*dw, ci] * fp[kh, kw, ci, 0:co]
 * with xp [n_img, hp, wp, c] bordered so that every window is inside, fp [kh_n, kw_n, c, cp];
 * xp is zero outside rows [u_lo, u_hi) and columns [v_lo, v_hi): the taps there are skipped.
 * With a buffer `fblock` (taps x CB values; NULL: none) the channel blocks go outermost, each
 * block's filter columns copied into it first (tfc_conv_filter_block): each output row's tiles
 * read the whole filter, so where it outweighs the images (a CNN's deep layers: 2.4 MB for
 * 3x3x256x256 against a 14x14x256 image of 200 KB, read 14 times per image, along rows whose
 * power-of-two stride maps them to a few cache sets) the filter is read from memory once and
 * each block's contiguous copy stays in cache while every pixel uses it. Each output element
 * is the same chain of multiply-adds in any order. The epilogue (bias [co], res of y's
 * shape, activation `act`; NULL, NULL, TFC_CONV_ACT_NONE: none) runs on each tile in registers;
 * y's pixels are ldy elements apart. `outer` (0: none): the blocks outermost within groups of
 * this many output rows (of all n_img * oh_n), each block copied into `fblock` first. With `packed`, fp is the filter already in blocks (each block's [kh_n*kw_n*c, CB]
 * values one after another, as tfc_conv_filter_block would copy them): each block is read where
 * it lies, in either order, and nothing is copied (fblock unused). With `prefetch_rows`, each
 * output row's tiles prefetch the input rows the next one reads first (tfc_conv_next_rows). */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_direct_core)(
    int64_t n_img, int64_t hp, int64_t wp, int64_t c, const T *restrict xp, int64_t oh_n,
    int64_t ow_n, int64_t co, int64_t kh_n, int64_t kw_n, int64_t sh, int64_t sw, int64_t dh,
    int64_t dw, const T *restrict fp, int64_t cp, T *y, const int64_t P,
    const int64_t CB, int64_t u_lo, int64_t u_hi, int64_t v_lo, int64_t v_hi,
    const int64_t image, T *restrict strip, const int64_t outer, T *restrict fblock,
    const int64_t packed, const int64_t prefetch_rows,
    const T *restrict bias, const T *res, const int64_t act, int64_t ldy) {
    const int64_t taps = kh_n * kw_n * c;
    if (outer) {
        /* the rows in groups of `outer` (whose outputs and input rows fit in L2), each group
         * through every block: a group's output lines are written while they are in L2 rather
         * than coming back to it from memory for each block (a part's outputs of a 1x1
         * expansion, 1.6 MB at 14x14x1024, do not fit it) */
        const int64_t rows = n_img * oh_n;
        const int64_t blocks = TFC_IDIV(co + CB - 1, CB);
        for (int64_t r0 = 0; r0 < rows; r0 += outer) {
            const int64_t r1 = r0 + outer < rows ? r0 + outer : rows;
            for (int64_t b = 0; b < blocks; ++b) {
                const int64_t co0 = b * CB;
                const T *fb = fp + b * taps * CB;
                if (!packed) {
                    TFC_CONV_FN(tfc_conv_filter_block)(fp, taps, cp, co0, CB, fblock);
                    fb = fblock;
                }
                /* a packed filter's next block (the first again before the next group) is read
                 * from memory while this one's tiles run, each row prefetching its share of the
                 * lines (only the first rows of a block waited for them otherwise: the deep
                 * layers' blocks are 64-600 KB) */
                const int64_t nb = b + 1 < blocks ? b + 1 : (r1 < rows ? 0 : -1);
                const char *next = packed && nb >= 0 ? (const char *)(fp + nb * taps * CB) : NULL;
                const int64_t lines =
                    next != NULL ? TFC_IDIV(taps * CB * (int64_t)sizeof(T), 64) : 0;
                const int64_t per_row = TFC_IDIV(lines + (r1 - r0) - 1, r1 - r0);
                for (int64_t r = r0; r < r1; ++r) {
                    const int64_t first = (r - r0) * per_row;
                    const int64_t count = lines - first < per_row ? lines - first : per_row;
                    TFC_CONV_FN(tfc_conv_direct_row)(
                        TFC_IDIV(r, oh_n), TFC_IMOD(r, oh_n), co0, hp, wp, c, xp, oh_n, ow_n, co, kh_n,
                        kw_n, sh, sw, dh, dw, fb, CB, y, P, CB, u_lo, u_hi, v_lo, v_hi, image,
                        strip, 0, bias, res, act, ldy, count > 0 ? next + first * 64 : NULL,
                        count > 0 ? count : 0,
                        TFC_CONV_FN(tfc_conv_next_slice)(y, r, r0, r1, rows, ow_n, ldy, co0, co,
                                                         CB),
                        P, 0, ow_n);
                }
            }
        }
        return;
    }
    /* each tile of pixels through every channel block before the next: the tile's output
     * lines are whole before they leave L1 (a row of 1x1 expansions' outputs, 56 pixels x
     * 256 channels, does not fit it), and its input stays there for every block */
    for (int64_t n = 0; n < n_img; ++n)
        for (int64_t oh = 0; oh < oh_n; ++oh) {
            const char *next = NULL;
            int64_t lines = 0;
            if (prefetch_rows)
                TFC_CONV_FN(tfc_conv_next_rows)(n, oh, n_img, hp, wp, c, xp, oh_n, kh_n, kw_n,
                                                sh, sw, dh, image ? u_lo : 0, &next, &lines);
            for (int64_t ow0 = 0; ow0 < ow_n; ow0 += P)
                for (int64_t co0 = 0; co0 < co; co0 += CB)
                    TFC_CONV_FN(tfc_conv_direct_row)(
                        n, oh, co0, hp, wp, c, xp, oh_n, ow_n, co, kh_n, kw_n, sh, sw, dh, dw,
                        packed ? fp + TFC_IDIV(co0, CB) * taps * CB : fp + co0,
                        packed ? CB : cp, y, P, CB, u_lo, u_hi, v_lo, v_hi, image, strip,
                        co0 > 0, bias, res, act, ldy,
                        co0 == 0 ? next : NULL, co0 == 0 ? lines : 0,
                        co0 + CB < co
                            ? y + ((n * oh_n + oh) * ow_n + ow0) * ldy + co0 + CB
                            : (ow0 + P < ow_n ? y + ((n * oh_n + oh) * ow_n + ow0 + P) * ldy
                                              : NULL),
                        co0 + CB < co ? P : ow_n - ow0 - P, ow0,
                        ow0 + P < ow_n ? ow0 + P : ow_n);
        }
}

/* -- direct ------------------------------------------------------------------------------ */

/* One convolution's buffers, passed to the parts of its batch (tfc_conv_run_parts); bias and
 * res: the forward epilogue's (NULL where the plan has none) */
typedef struct {
    const T *a, *b;
    T *y, *s0, *s1, *s2;
    const T *bias, *res;
} TFC_CONV_FN(tfc_conv_call);

/* y[r, j] = act(y[r, j] + bias[j] + res[r, j]) for `rows` rows of out_c values ldy apart (res
 * laid out as y), the terms the plan has (bias, residual, act): the forward epilogue of the
 * kernels that do not run it on their register tiles, on rows they just wrote */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_epilogue_rows)(const tfc_conv_plan *g, T *restrict y,
                                                         int64_t rows,
                                                         const T *restrict bias,
                                                         const T *restrict res) {
    if (!g->bias && !g->residual && g->act == TFC_CONV_ACT_NONE) return;
    const int64_t co = g->out_c, ld = g->ldy;
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < co; ++j) {
            T v = y[r * ld + j];
            if (g->bias) v += bias[j];
            if (g->residual) v += res[r * ld + j];
            y[r * ld + j] = TFC_CONV_FN(tfc_conv_act)(v, g->act);
        }
    }
}

/* the images [*n0, *n0 + *nb) of part `part` (chunk images each) */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_part_images)(const tfc_conv_plan *g, int64_t part,
                                                       int64_t *n0, int64_t *nb) {
    *n0 = part * g->chunk;
    *nb = g->batch - *n0 < g->chunk ? g->batch - *n0 : g->chunk;
}

/* The input images [n0, n0 + nb) as the direct kernels read them: x itself, or bordered into
 * the scratch xp [batch, hp, wp, in_c] (k->s0) at the same images. */
TFC_CONV_INLINE const T *TFC_CONV_FN(tfc_conv_part_input)(const tfc_conv_plan *g,
                                                          const TFC_CONV_FN(tfc_conv_call) *k,
                                                          int64_t n0, int64_t nb) {
    const T *src = k->a + n0 * g->in_h * g->in_w * g->in_c;
    if (g->hp == g->in_h && g->wp == g->in_w) return src;
    T *xp = k->s0 + n0 * g->hp * g->wp * g->in_c;
    TFC_CONV_FN(tfc_conv_border)(src, nb, g->in_h, g->in_w, g->in_c, g->pad_top, g->pad_left,
                                 g->hp, g->wp, xp);
    return xp;
}

/* y = conv2d(x, f) for the images of one part. Scratch: xp [batch, hp, wp, in_c] (where hp, wp
 * are in_h, in_w: the tiles read x itself, and xp holds each part's strip, of
 * tfc_conv_strip_size of the plan's larger tile, for the tiles at its edges instead), fp (the
 * filter with its rows padded, written by tfc_conv_forward_direct; with g->blocked, one
 * block's buffer [taps, co_block] per part instead; with g->packed, none: f is in blocks). */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_forward_direct_part)(const tfc_conv_plan *g,
                                                               void *call, int64_t part) {
    const TFC_CONV_FN(tfc_conv_call) *k = (const TFC_CONV_FN(tfc_conv_call) *)call;
    int64_t n0, nb;
    TFC_CONV_FN(tfc_conv_part_images)(g, part, &n0, &nb);
    const T *src = TFC_CONV_FN(tfc_conv_part_input)(g, k, n0, nb);
    const int64_t taps = g->k_h * g->k_w * g->in_c;
    const int blocked = g->blocked != 0, copied = blocked && !g->packed;
    const T *filter = !blocked && !g->packed && g->cp != g->out_c ? k->s1 : k->b;
    const int64_t y0 = n0 * g->out_h * g->out_w * g->ldy;
    const int image = g->hp == g->in_h && g->wp == g->in_w;
    const int64_t most = g->pix_block > g->pix_wide ? g->pix_block : g->pix_wide;
    /* none (NULL) where the image is not padded: no tile reads outside it */
    T *strip = image && k->s0 != NULL
                   ? k->s0 + part * TFC_CONV_FN(tfc_conv_strip_size)(g, most)
                   : NULL;
    TFC_CONV_FN(tfc_conv_direct_core)(nb, g->hp, g->wp, g->in_c, src, g->out_h, g->out_w,
                                      g->out_c, g->k_h, g->k_w, g->s_h, g->s_w, g->d_h, g->d_w,
                                      filter, blocked ? g->out_c : g->cp, k->y + y0,
                                      TFC_CONV_FN(tfc_conv_pix)(g, g->co_block), g->co_block,
                                      g->pad_top, g->pad_top + g->in_h, g->pad_left,
                                      g->pad_left + g->in_w,
                                      image, strip, g->blocked,
                                      copied ? k->s1 + part * taps * g->co_block : NULL,
                                      g->packed, g->prefetch_rows, g->bias ? k->bias : NULL,
                                      g->residual ? k->res + y0 : NULL, g->act, g->ldy);
}

/* y = conv2d(x, f), `part` (tfc_conv_forward_direct_part with the plan) over the batch's parts,
 * then the plan's epilogue with `bias` and `res` (NULL where it has none). Scratch: xp [batch,
 * hp, wp, in_c], fp [k_h*k_w*in_c, cp] (with g->blocked: a block's buffer [k_h*k_w*in_c,
 * co_block] for each part). */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_forward_direct)(const tfc_conv_plan *g, const T *x,
                                                          const T *f, const T *bias,
                                                          const T *res, T *y, T *xp, T *fp,
                                                          tfc_threads_fn part) {
    if (g->blocked == 0 && g->packed == 0 && g->cp != g->out_c)
        TFC_CONV_FN(tfc_conv_pad_rows)(f, g->k_h * g->k_w * g->in_c, g->out_c, g->cp, fp);
    TFC_CONV_FN(tfc_conv_call) call = {x, f, y + g->y_off, xp, fp, NULL, bias, res};
    tfc_conv_run_parts(g, part, &call);
}

/* dx = the gradient of conv2d(x, f) by x: the forward kernel on dy spread out by the strides
 * and bordered (dq [batch, hp, wp, out_c], hp = in_h + (k_h-1)*d_h), with the filter flipped
 * and transposed (ft [k_h, k_w, out_c, cp], cp >= in_c), for the images of one part. */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_input_direct_part)(const tfc_conv_plan *g,
                                                                      void *call, int64_t part) {
    const TFC_CONV_FN(tfc_conv_call) *k = (const TFC_CONV_FN(tfc_conv_call) *)call;
    const int64_t co = g->out_c, ci = g->in_c;
    const int64_t top = (g->k_h - 1) * g->d_h - g->pad_top;
    const int64_t left = (g->k_w - 1) * g->d_w - g->pad_left;
    int64_t n0, nb;
    TFC_CONV_FN(tfc_conv_part_images)(g, part, &n0, &nb);
    T *restrict dq = k->s0 + n0 * g->hp * g->wp * co;
    const T *restrict dy = k->b + n0 * g->out_h * g->out_w * co;
    for (int64_t i = 0; i < nb * g->hp * g->wp * co; ++i) dq[i] = 0;
    for (int64_t n = 0; n < nb; ++n) {
        for (int64_t oh = 0; oh < g->out_h; ++oh) {
            const int64_t u = oh * g->s_h + top;
            if (u < 0 || u >= g->hp) continue;
            for (int64_t ow = 0; ow < g->out_w; ++ow) {
                const int64_t v = ow * g->s_w + left;
                if (v < 0 || v >= g->wp) continue;
                const T *restrict src = dy + ((n * g->out_h + oh) * g->out_w + ow) * co;
                T *restrict dst = dq + ((n * g->hp + u) * g->wp + v) * co;
                for (int64_t j = 0; j < co; ++j) dst[j] = src[j];
            }
        }
    }
    TFC_CONV_FN(tfc_conv_direct_core)(nb, g->hp, g->wp, co, dq, g->in_h, g->in_w, ci,
                                      g->k_h, g->k_w, 1, 1, g->d_h, g->d_w, k->s1, g->cp,
                                      k->y + n0 * g->in_h * g->in_w * ci,
                                      TFC_CONV_FN(tfc_conv_pix)(g, g->co_block), g->co_block,
                                      top < 0 ? 0 : top,
                                      top + (g->out_h - 1) * g->s_h + 1, left < 0 ? 0 : left,
                                      left + (g->out_w - 1) * g->s_w + 1, 0, NULL, 0, NULL, 0,
                                      g->prefetch_rows, NULL, NULL, TFC_CONV_ACT_NONE, ci);
}

/* dx over the batch's parts; ft (shared by them) is made first. Scratch: dq, ft as above. */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_input_direct)(const tfc_conv_plan *g,
                                                                 const T *f, const T *dy, T *dx,
                                                                 T *dq, T *ft,
                                                                 tfc_threads_fn part) {
    const int64_t co = g->out_c, ci = g->in_c;
    for (int64_t kh = 0; kh < g->k_h; ++kh) {
        for (int64_t kw = 0; kw < g->k_w; ++kw) {
            const T *restrict fs = f + ((g->k_h - 1 - kh) * g->k_w + (g->k_w - 1 - kw)) * ci * co;
            T *restrict fd = ft + (kh * g->k_w + kw) * co * g->cp;
            for (int64_t o = 0; o < co; ++o) {
                for (int64_t i = 0; i < ci; ++i) fd[o * g->cp + i] = fs[i * co + o];
                for (int64_t i = ci; i < g->cp; ++i) fd[o * g->cp + i] = 0;
            }
        }
    }
    TFC_CONV_FN(tfc_conv_call) call = {f, dy, dx, dq, ft, NULL, NULL, NULL};
    tfc_conv_run_parts(g, part, &call);
}

/* dx = the gradient of conv2d(x, f) by x for dilation 1 along the width, as scatters: each
 * output pixel's dy row times the filter row of one kh (the k_w*in_c values of all its kw
 * taps, contiguous in f and in dx) is added to the input row segment its window covered, for
 * the images of one part. Scratch: dxb, each image's bordered gradient [hp, wp, in_c] then
 * cp - k_w*in_c slack (the last segments' padding lands there, not in the next image, which
 * another thread may be writing), cropped into dx at the end; ft [k_h, out_c, cp] (the filter
 * transposed, rows padded to cp). */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_input_rows_part)(const tfc_conv_plan *g,
                                                                    void *call, int64_t part) {
    const TFC_CONV_FN(tfc_conv_call) *k = (const TFC_CONV_FN(tfc_conv_call) *)call;
    const int64_t c = g->in_c, co = g->out_c, lp = g->cp, seg = g->k_w * c;
    const int64_t image = g->hp * g->wp * c + lp - seg;
    int64_t n0, nb;
    TFC_CONV_FN(tfc_conv_part_images)(g, part, &n0, &nb);
    T *dxb = k->s0 + n0 * image;
    const T *restrict ft = k->s1;
    for (int64_t i = 0; i < nb * image; ++i) dxb[i] = 0;
    /* tiles of P output rows at one column (their segments are in different rows) */
    const int64_t P = TFC_CONV_FN(tfc_conv_pix)(g, lp), full = TFC_IDIV(g->out_h, P) * P;
    const int64_t dy_p = g->out_w * co, seg_p = g->s_h * g->wp * c, step = g->s_w * c;
    const int64_t gap = TFC_IDIV(lp + step - 1, step);
    for (int64_t n = 0; n < nb; ++n) {
        for (int64_t oh0 = 0; oh0 < g->out_h; oh0 += P) {
            const T *restrict dr = k->b + ((n0 + n) * g->out_h + oh0) * g->out_w * co;
            for (int64_t kh = 0; kh < g->k_h; ++kh) {
                T *xr = dxb + n * image + (oh0 * g->s_h + kh * g->d_h) * g->wp * c;
                const T *restrict fr = ft + kh * co * lp;
                /* columns `gap` apart, so that consecutive tiles' segments never overlap:
                 * no store then load of the same bytes in a row (gcc 12's predictive
                 * commoning at -O3 mis-handles such partially overlapping vector accesses) */
                for (int64_t r = 0; r < gap; ++r) {
                    for (int64_t ow = r; ow < g->out_w; ow += gap) {
                        if (oh0 < full) {
                            TFC_CONV_FN(tfc_conv_rows_tile)(dr + ow * co, dy_p, co, fr, lp,
                                                            xr + ow * step, seg_p, P);
                        } else {
                            TFC_CONV_FN(tfc_conv_rows_tile)(dr + ow * co, dy_p, co, fr, lp,
                                                            xr + ow * step, seg_p,
                                                            g->out_h - full);
                        }
                        TFC_CONV_FENCE();
                    }
                }
            }
        }
    }
    for (int64_t n = 0; n < nb; ++n) {
        for (int64_t ih = 0; ih < g->in_h; ++ih) {
            const T *restrict src = dxb + n * image + ((ih + g->pad_top) * g->wp + g->pad_left) * c;
            memcpy(k->y + ((n0 + n) * g->in_h + ih) * g->in_w * c, src,
                   (size_t)(g->in_w * c) * sizeof(T));
        }
    }
}

/* dx by row scatters over the batch's parts; ft (shared by them) is made first. */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_input_rows)(const tfc_conv_plan *g,
                                                               const T *f, const T *dy, T *dx,
                                                               T *dxb, T *ft,
                                                               tfc_threads_fn part) {
    const int64_t c = g->in_c, co = g->out_c, lp = g->cp, seg = g->k_w * c;
    for (int64_t kh = 0; kh < g->k_h; ++kh) {
        for (int64_t o = 0; o < co; ++o) {
            T *restrict row = ft + (kh * co + o) * lp;
            for (int64_t t = 0; t < seg; ++t) row[t] = f[(kh * seg + t) * co + o];
            for (int64_t t = seg; t < lp; ++t) row[t] = 0;
        }
    }
    TFC_CONV_FN(tfc_conv_call) call = {f, dy, dx, dxb, ft, NULL, NULL, NULL};
    tfc_conv_run_parts(g, part, &call);
}

TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_filter_taps)(const tfc_conv_plan *g,
                                                       const T *restrict xp,
                                                       const T *restrict dy, T *restrict df,
                                                       int64_t t0, const int64_t P) {
    int64_t off[TFC_CONV_MAX_P];
    const int64_t c = g->in_c;
    for (int64_t p = 0; p < P; ++p) {
        const int64_t t = t0 + p, kh = TFC_IDIV(t, g->k_w * c);
        const int64_t kw = TFC_IMOD(TFC_IDIV(t, c), g->k_w), ci = TFC_IMOD(t, c);
        off[p] = (kh * g->d_h * g->wp + kw * g->d_w) * c + ci;
    }
    for (int64_t co0 = 0; co0 < g->out_c; co0 += g->co_block) {
        const int64_t nc = g->out_c - co0 < g->co_block ? g->out_c - co0 : g->co_block;
        TFC_CONV_FN(tfc_conv_filter_tile)(g, xp, off, dy + co0, df + t0 * g->out_c + co0, nc, P,
                                          g->co_block);
    }
}

/* The filter gradient summed over the images of one part, into df (part 0) or its own slot of
 * the partial sums. Scratch: xp [batch, hp, wp, in_c] (the bordered input), dp
 * [batch*out_h*out_w, cp] (dy with its channels padded, when out_c < cp), sums [parts - 1,
 * k_h*k_w*in_c*out_c]. */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_filter_direct_part)(const tfc_conv_plan *g,
                                                                       void *call,
                                                                       int64_t part) {
    const TFC_CONV_FN(tfc_conv_call) *k = (const TFC_CONV_FN(tfc_conv_call) *)call;
    const int64_t taps = g->k_h * g->k_w * g->in_c;
    int64_t n0, nb;
    TFC_CONV_FN(tfc_conv_part_images)(g, part, &n0, &nb);
    const T *src = TFC_CONV_FN(tfc_conv_part_input)(g, k, n0, nb);
    const int64_t pixels = g->out_h * g->out_w;
    const T *grad = k->b + n0 * pixels * g->out_c;
    if (g->cp != g->out_c) {
        T *dp = k->s1 + n0 * pixels * g->cp;
        TFC_CONV_FN(tfc_conv_pad_rows)(grad, nb * pixels, g->out_c, g->cp, dp);
        grad = dp;
    }
    T *df = part == 0 ? k->y : k->s2 + (part - 1) * taps * g->out_c;
    tfc_conv_plan images = *g; /* the filter tiles sum over images.batch images */
    images.batch = nb;
    const int64_t P = TFC_CONV_FN(tfc_conv_pix)(g, g->co_block);
    const int64_t full = TFC_IDIV(taps, P) * P;
    for (int64_t t0 = 0; t0 < full; t0 += P)
        TFC_CONV_FN(tfc_conv_filter_taps)(&images, src, grad, df, t0, P);
    if (full < taps) TFC_CONV_FN(tfc_conv_filter_taps)(&images, src, grad, df, full, taps - full);
}

/* df = the gradient of conv2d(x, f) by f: each part's sum over its images, then those sums
 * added in the order of the parts (the same bits whatever thread computed which part). */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_filter_direct)(const tfc_conv_plan *g,
                                                                  const T *x, const T *dy,
                                                                  T *df, T *xp, T *dp, T *sums,
                                                                  tfc_threads_fn part) {
    TFC_CONV_FN(tfc_conv_call) call = {x, dy, df, xp, dp, sums, NULL, NULL};
    tfc_conv_run_parts(g, part, &call);
    const int64_t size = g->k_h * g->k_w * g->in_c * g->out_c;
    const int64_t parts = TFC_IDIV(g->batch + g->chunk - 1, g->chunk);
    for (int64_t p = 1; p < parts; ++p) {
        const T *restrict s = sums + (p - 1) * size;
        for (int64_t i = 0; i < size; ++i) df[i] += s[i];
    }
}

/* -- columns ----------------------------------------------------------------------------- */

/* The columns kernels (tfc_conv_tiles.h) use the widest vectors of the build */
#if defined(TFC_CONV_WBYTES)
#define TFC_CONV_CV TFC_CONV_FN(tfc_conv_wvec)
#define TFC_CONV_CFN(name) TFC_CONV_CAT(TFC_CONV_FN(name), wide)
#define TFC_CONV_CACC 24
#else
#define TFC_CONV_CV TFC_CONV_FN(tfc_conv_vec)
#define TFC_CONV_CFN(name) TFC_CONV_CAT(TFC_CONV_FN(name), narrow)
#define TFC_CONV_CACC 12
#endif
#define TFC_CONV_CL ((int64_t)(sizeof(TFC_CONV_CV) / sizeof(T)))

/* xb[ci, r, col] = image n bordered (zeros where outside x) at (r, col, ci): hp rows of
 * g->cp columns per input channel */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_cols_planes)(const tfc_conv_plan *g,
                                                       const T *restrict x, int64_t n,
                                                       T *restrict xb) {
    const int64_t c = g->in_c, wb = g->cp;
    for (int64_t ci = 0; ci < c; ++ci) {
        for (int64_t r = 0; r < g->hp; ++r) {
            T *restrict row = xb + (ci * g->hp + r) * wb;
            const int64_t ih = r - g->pad_top;
            for (int64_t col = 0; col < wb; ++col) row[col] = 0;
            if (ih < 0 || ih >= g->in_h) continue;
            const T *restrict src = x + (n * g->in_h + ih) * g->in_w * c + ci;
            const int64_t lo = g->pad_left, end = g->pad_left + g->in_w;
            const int64_t hi = end < wb ? end : wb; /* VALID: columns no window reads */
            for (int64_t col = lo; col < hi; ++col) row[col] = src[(col - lo) * c];
        }
    }
}

/* y = conv2d(x, f) for s_w == 1 by vectors of output columns, per output channel, for the
 * images of one part. Each image is copied into bordered channel planes, the part's own in the
 * scratch (k->s0: in_c * hp * cp elements per part), read once per tap. */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_forward_columns_part)(const tfc_conv_plan *g,
                                                                void *call, int64_t part) {
    const TFC_CONV_FN(tfc_conv_call) *k = (const TFC_CONV_FN(tfc_conv_call) *)call;
    const T *restrict x = k->a, *restrict f = k->b;
    T *restrict y = k->y;
    int64_t n0, nb;
    TFC_CONV_FN(tfc_conv_part_images)(g, part, &n0, &nb);
    T *xb = k->s0 + part * g->in_c * g->hp * g->cp;
    const int64_t co = g->out_c, wb = g->cp, R = TFC_IDIV(TFC_CONV_CACC, co);
    const int64_t full = TFC_IDIV(g->out_h, R) * R, E = g->out_w * g->ldy;
    /* without a residual (added before the activation) the tiles apply the epilogue in
     * registers; with one, the rows they wrote take all of it afterwards */
    const T *bias = g->bias && !g->residual ? k->bias : NULL;
    const int64_t act = g->residual ? TFC_CONV_ACT_NONE : g->act;
    for (int64_t n = n0; n < n0 + nb; ++n) {
        TFC_CONV_FN(tfc_conv_cols_planes)(g, x, n, xb);
        T *restrict yn = y + n * g->out_h * E;
        for (int64_t oh0 = 0; oh0 < g->out_h; oh0 += R) {
            const T *restrict xr = xb + oh0 * g->s_h * wb;
            T *restrict yr = y + (n * g->out_h + oh0) * E;
            for (int64_t w = 0; w < g->out_w; w += TFC_CONV_CL) {
                /* a row's last tile ends at its end, over columns of the one before (the same
                 * sums again, the same bits), so that it too stores whole vectors */
                const int64_t w0 = w + TFC_CONV_CL > g->out_w && g->out_w >= TFC_CONV_CL
                                       ? g->out_w - TFC_CONV_CL
                                       : w;
                const int64_t nw = g->out_w - w0 < TFC_CONV_CL ? g->out_w - w0 : TFC_CONV_CL;
                if (oh0 < full)
                    TFC_CONV_CFN(tfc_conv_cols_tile)(g, xr + w0, wb, f, yr + w0 * g->ldy, E, nw,
                                                     R, co, bias, act);
                else
                    TFC_CONV_CFN(tfc_conv_cols_tile)(g, xr + w0, wb, f, yr + w0 * g->ldy, E,
                                                     nw, g->out_h - full, co, bias, act);
            }
        }
        if (g->residual)
            TFC_CONV_FN(tfc_conv_epilogue_rows)(g, yn, g->out_h * g->out_w, k->bias,
                                                k->res + (yn - y));
    }
}

/* y = conv2d(x, f) by output columns, `part` (tfc_conv_forward_columns_part with the plan) over
 * the batch's parts: each image is computed the same way whatever the thread count, with the
 * plan's epilogue (in the tiles, or on the rows they wrote where there is a residual).
 * Scratch: planes [parts, in_c, hp, cp]. */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_forward_columns)(const tfc_conv_plan *g, const T *x,
                                                           const T *f, const T *bias,
                                                           const T *res, T *y, T *planes,
                                                           tfc_threads_fn part) {
    TFC_CONV_FN(tfc_conv_call) call = {x, f, y + g->y_off, planes, NULL, NULL, bias, res};
    tfc_conv_run_parts(g, part, &call);
}

#undef TFC_CONV_CV
#undef TFC_CONV_CFN
#undef TFC_CONV_CACC
#undef TFC_CONV_CL

/* -- im2col + GEMM ----------------------------------------------------------------------- */

/* cols[r, (kh, kw, ci)] = x at the tap (kh, kw) of output pixel r of images n0..n0+nb, or 0 */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_im2col)(const tfc_conv_plan *g, const T *restrict x,
                                                  int64_t n0, int64_t nb, T *restrict cols) {
    const int64_t c = g->in_c, k = g->k_h * g->k_w * c;
    T *restrict row = cols;
    for (int64_t n = n0; n < n0 + nb; ++n) {
        for (int64_t oh = 0; oh < g->out_h; ++oh) {
            for (int64_t ow = 0; ow < g->out_w; ++ow, row += k) {
                for (int64_t kh = 0; kh < g->k_h; ++kh) {
                    const int64_t ih = oh * g->s_h + kh * g->d_h - g->pad_top;
                    for (int64_t kw = 0; kw < g->k_w; ++kw) {
                        const int64_t iw = ow * g->s_w + kw * g->d_w - g->pad_left;
                        T *restrict dst = row + (kh * g->k_w + kw) * c;
                        if (ih < 0 || ih >= g->in_h || iw < 0 || iw >= g->in_w) {
                            for (int64_t i = 0; i < c; ++i) dst[i] = 0;
                        } else {
                            const T *restrict s = x + ((n * g->in_h + ih) * g->in_w + iw) * c;
                            for (int64_t i = 0; i < c; ++i) dst[i] = s[i];
                        }
                    }
                }
            }
        }
    }
}

/* dx += cols scattered back to the pixels they were read from (col2im) */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_col2im)(const tfc_conv_plan *g, const T *restrict cols,
                                                  int64_t n0, int64_t nb, T *restrict dx) {
    const int64_t c = g->in_c, k = g->k_h * g->k_w * c;
    const T *restrict row = cols;
    for (int64_t n = n0; n < n0 + nb; ++n) {
        for (int64_t oh = 0; oh < g->out_h; ++oh) {
            for (int64_t ow = 0; ow < g->out_w; ++ow, row += k) {
                for (int64_t kh = 0; kh < g->k_h; ++kh) {
                    const int64_t ih = oh * g->s_h + kh * g->d_h - g->pad_top;
                    if (ih < 0 || ih >= g->in_h) continue;
                    for (int64_t kw = 0; kw < g->k_w; ++kw) {
                        const int64_t iw = ow * g->s_w + kw * g->d_w - g->pad_left;
                        if (iw < 0 || iw >= g->in_w) continue;
                        const T *restrict s = row + (kh * g->k_w + kw) * c;
                        T *restrict d = dx + ((n * g->in_h + ih) * g->in_w + iw) * c;
                        for (int64_t i = 0; i < c; ++i) d[i] += s[i];
                    }
                }
            }
        }
    }
}

/* y = conv2d(x, f) of a 1x1 convolution at stride 1 without padding (x is the GEMM's left
 * matrix as it lies), the epilogue inside the product where it can be: a bias and a ReLU in the
 * GEMM's own (the same chain of operations as after it, so the same bits). With a residual, the
 * product's rows go in blocks of pix_block through `blk` [pix_block, out_c] (it stays in L2)
 * and each block's epilogue reads its residual elements just before it writes the same
 * elements of y: y may take over the residual's buffer. Where the product's rows were written
 * to y first and the epilogue ran after the whole product, ResNet-50's 1x1 expansions at batch
 * 32 read and wrote their 100 MB output twice. */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_forward_pointwise)(const tfc_conv_plan *g,
                                                             const T *restrict x,
                                                             const T *restrict f, T *y, T *blk,
                                                             const T *restrict bias,
                                                             const T *res) {
    const int64_t rows = g->batch * g->out_h * g->out_w, k = g->in_c, co = g->out_c;
    const int64_t ld = g->ldy;
    if (!g->residual) {
        if (g->act != TFC_CONV_ACT_RELU6) {
            TFC_CONV_CAT(TFC_CONV_FN(tfc_gemm), ex)(rows, co, k, x, k, 1, f, co, 1, y, ld, (T)1,
                                                    (T)0, g->bias ? bias : NULL,
                                                    g->act == TFC_CONV_ACT_RELU);
            return;
        }
        TFC_CONV_CAT(TFC_CONV_FN(tfc_gemm), ex)(rows, co, k, x, k, 1, f, co, 1, y, ld, (T)1, (T)0,
                                                NULL, 0);
        TFC_CONV_FN(tfc_conv_epilogue_rows)(g, y, rows, bias, NULL);
        return;
    }
    for (int64_t r0 = 0; r0 < rows; r0 += g->pix_block) {
        const int64_t m = rows - r0 < g->pix_block ? rows - r0 : g->pix_block;
        TFC_CONV_CAT(TFC_CONV_FN(tfc_gemm), ex)(m, co, k, x + r0 * k, k, 1, f, co, 1, blk, co,
                                                (T)1, (T)0, g->bias ? bias : NULL, 0);
        for (int64_t r = 0; r < m; ++r) {
            const T *restrict b = blk + r * co;
            const T *rr = res + (r0 + r) * ld;
            T *yr = y + (r0 + r) * ld;
            for (int64_t j = 0; j < co; ++j) yr[j] = TFC_CONV_FN(tfc_conv_act)(b[j] + rr[j], g->act);
        }
    }
}

/* y = conv2d(x, f): per chunk of images, y rows = cols [pixels, k] x f [k, out_c], then the
 * plan's epilogue on those rows. Scratch: cols [chunk*out_h*out_w, k_h*k_w*in_c]; a 1x1
 * convolution at stride 1 without padding, whose column matrix is x itself, goes to
 * tfc_conv_forward_pointwise with `cols` as its block of rows (NULL without a residual). */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_forward_im2col_all)(const tfc_conv_plan *g,
                                                          const T *restrict x,
                                                          const T *restrict f, T *y, T *cols,
                                                          const T *restrict bias,
                                                          const T *res) {
    const int64_t k = g->k_h * g->k_w * g->in_c, pix = g->out_h * g->out_w;
    if (tfc_conv_pointwise(g)) {
        TFC_CONV_FN(tfc_conv_forward_pointwise)(g, x, f, y, cols, bias, res);
        return;
    }
    for (int64_t n0 = 0; n0 < g->batch; n0 += g->chunk) {
        const int64_t nb = g->batch - n0 < g->chunk ? g->batch - n0 : g->chunk;
        TFC_CONV_FN(tfc_conv_im2col)(g, x, n0, nb, cols);
        const T *rows = cols;
        T *restrict yc = y + n0 * pix * g->ldy;
        TFC_CONV_CAT(TFC_CONV_FN(tfc_gemm), ex)(nb * pix, g->out_c, k, rows, k, 1, f, g->out_c,
                                                1, yc, g->ldy, (T)1, (T)0, NULL, 0);
        TFC_CONV_FN(tfc_conv_epilogue_rows)(g, yc, nb * pix, bias,
                                            g->residual ? res + n0 * pix * g->ldy : NULL);
    }
}

/* dx: per chunk, cols = dy rows [pixels, out_c] x f^T [out_c, k], scattered back (col2im).
 * Scratch: cols as for the forward pass. */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_input_im2col_all)(const tfc_conv_plan *g,
                                                                 const T *restrict f,
                                                                 const T *restrict dy,
                                                                 T *restrict dx,
                                                                 T *restrict cols) {
    const int64_t k = g->k_h * g->k_w * g->in_c, pix = g->out_h * g->out_w;
    for (int64_t i = 0; i < g->batch * g->in_h * g->in_w * g->in_c; ++i) dx[i] = 0;
    for (int64_t n0 = 0; n0 < g->batch; n0 += g->chunk) {
        const int64_t nb = g->batch - n0 < g->chunk ? g->batch - n0 : g->chunk;
        TFC_CONV_FN(tfc_gemm)(nb * pix, k, g->out_c, dy + n0 * pix * g->out_c, g->out_c, 1, f, 1,
                              g->out_c, cols);
        TFC_CONV_FN(tfc_conv_col2im)(g, cols, n0, nb, dx);
    }
}

/* df = sum over chunks of cols^T [k, pixels] x dy rows [pixels, out_c].
 * Scratch: cols as for the forward pass, then part [k, out_c] (each later chunk's product). */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_filter_im2col_all)(const tfc_conv_plan *g,
                                                                  const T *restrict x,
                                                                  const T *restrict dy,
                                                                  T *restrict df,
                                                                  T *restrict cols,
                                                                  T *restrict part) {
    const int64_t k = g->k_h * g->k_w * g->in_c, pix = g->out_h * g->out_w;
    for (int64_t n0 = 0; n0 < g->batch; n0 += g->chunk) {
        const int64_t nb = g->batch - n0 < g->chunk ? g->batch - n0 : g->chunk;
        TFC_CONV_FN(tfc_conv_im2col)(g, x, n0, nb, cols);
        T *restrict out = n0 == 0 ? df : part;
        TFC_CONV_FN(tfc_gemm)(k, g->out_c, nb * pix, cols, 1, k, dy + n0 * pix * g->out_c,
                              g->out_c, 1, out);
        if (n0 > 0) {
            for (int64_t i = 0; i < k * g->out_c; ++i) df[i] += part[i];
        }
    }
}

/* im2col runs as one part: its GEMMs split over the threads (tfc_gemm.h) */
TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_forward_im2col_part)(const tfc_conv_plan *g,
                                                               void *call, int64_t part) {
    const TFC_CONV_FN(tfc_conv_call) *k = (const TFC_CONV_FN(tfc_conv_call) *)call;
    (void)part;
    TFC_CONV_FN(tfc_conv_forward_im2col_all)(g, k->a, k->b, k->y, k->s0, k->bias, k->res);
}

TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_forward_im2col)(const tfc_conv_plan *g, const T *x,
                                                          const T *f, const T *bias,
                                                          const T *res, T *y, T *cols,
                                                          tfc_threads_fn part) {
    TFC_CONV_FN(tfc_conv_call) call = {x, f, y + g->y_off, cols, NULL, NULL, bias, res};
    (void)g;
    part(&call, 0);
}

TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_input_im2col_part)(const tfc_conv_plan *g,
                                                                      void *call, int64_t part) {
    const TFC_CONV_FN(tfc_conv_call) *k = (const TFC_CONV_FN(tfc_conv_call) *)call;
    (void)part;
    TFC_CONV_FN(tfc_conv_backprop_input_im2col_all)(g, k->a, k->b, k->y, k->s0);
}

TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_input_im2col)(const tfc_conv_plan *g,
                                                                 const T *f, const T *dy, T *dx,
                                                                 T *cols, tfc_threads_fn part) {
    TFC_CONV_FN(tfc_conv_call) call = {f, dy, dx, cols, NULL, NULL, NULL, NULL};
    (void)g;
    part(&call, 0);
}

TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_filter_im2col_part)(const tfc_conv_plan *g,
                                                                       void *call,
                                                                       int64_t part) {
    const TFC_CONV_FN(tfc_conv_call) *k = (const TFC_CONV_FN(tfc_conv_call) *)call;
    (void)part;
    TFC_CONV_FN(tfc_conv_backprop_filter_im2col_all)(g, k->a, k->b, k->y, k->s0, k->s1);
}

TFC_CONV_INLINE void TFC_CONV_FN(tfc_conv_backprop_filter_im2col)(const tfc_conv_plan *g,
                                                                  const T *x, const T *dy,
                                                                  T *df, T *cols, T *part_sum,
                                                                  tfc_threads_fn part) {
    TFC_CONV_FN(tfc_conv_call) call = {x, dy, df, cols, part_sum, NULL, NULL, NULL};
    (void)g;
    part(&call, 0);
}

#undef T
#undef TFC_CONV_WIDE
#undef TFC_CONV_PICK
#undef TFC_CONV_NL
#undef TFC_CONV_VMADD
#undef TFC_CONV_FN
#undef TFC_CONV_CAT
#undef TFC_CONV_CAT_
