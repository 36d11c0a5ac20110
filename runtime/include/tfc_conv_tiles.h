/* The register tiles of tfc_conv_impl.h for one element type and one SIMD vector type:
 * included once per vector width with TFC_CONV_TV (the vector type of T), TFC_CONV_TL (its
 * lanes), TFC_CONV_TMADD (acc + a * w) and TFC_CONV_TFN (the functions' names) defined, so the
 * same loops make AVX tiles and, where AVX-512 is there, 64-byte ones. No include guard. */

/* a after activation `act` (TFC_CONV_ACT_*) lane by lane, as tfc_conv_act computes it: lanes
 * below 0 become 0, above 6 (Relu6) 6; NaN stays */
TFC_CONV_INLINE TFC_CONV_TV TFC_CONV_TFN(tfc_conv_vact)(TFC_CONV_TV a, const int64_t act) {
    typedef TFC_CONV_IT ivec __attribute__((vector_size(sizeof(TFC_CONV_TV))));
    const TFC_CONV_TV zero = {0}, six = zero + (T)6;
    if (act == TFC_CONV_ACT_NONE) return a;
    a = (TFC_CONV_TV)((ivec)a & ~(ivec)(a < zero));
    if (act == TFC_CONV_ACT_RELU6) {
        const ivec over = (ivec)(a > six);
        a = (TFC_CONV_TV)(((ivec)a & ~over) | ((ivec)six & over));
    }
    return a;
}

/* y[0:nc] = the first nc lanes of acc[0:CB/VL], with the forward epilogue: plus bias[0:nc]
 * (NULL: none), plus res[0:nc] (NULL: none), then activation `act` (TFC_CONV_ACT_*), each
 * step rounded as the separate Add, Add and Relu kernels round it. res may be y itself (the
 * output written over its residual, tfc/ops/conv.py): each lane is read before it is written,
 * so neither pointer is restrict. */
TFC_CONV_INLINE void TFC_CONV_TFN(tfc_conv_store)(T *y,
                                                  const TFC_CONV_TV *restrict acc, int64_t nc,
                                                  const int64_t CB, const T *restrict bias,
                                                  const T *res, const int64_t act) {
    if (bias == NULL && res == NULL && act == TFC_CONV_ACT_NONE) {
        if (nc == CB) {
            TFC_CONV_TILE_UNROLL
            for (int64_t v = 0; v < CB / TFC_CONV_TL; ++v)
                memcpy(y + v * TFC_CONV_TL, &acc[v], sizeof(TFC_CONV_TV));
        } else {
            for (int64_t j = 0; j < nc; ++j) y[j] = acc[j / TFC_CONV_TL][j % TFC_CONV_TL];
        }
        return;
    }
    if (nc < CB) {
        for (int64_t j = 0; j < nc; ++j) {
            T v = acc[j / TFC_CONV_TL][j % TFC_CONV_TL];
            if (bias != NULL) v += bias[j];
            if (res != NULL) v += res[j];
            y[j] = TFC_CONV_FN(tfc_conv_act)(v, act);
        }
        return;
    }
    for (int64_t v = 0; v < CB / TFC_CONV_TL; ++v) {
        TFC_CONV_TV a = acc[v], b;
        if (bias != NULL) {
            memcpy(&b, bias + v * TFC_CONV_TL, sizeof(b));
            a += b;
        }
        if (res != NULL) {
            memcpy(&b, res + v * TFC_CONV_TL, sizeof(b));
            a += b;
        }
        a = TFC_CONV_TFN(tfc_conv_vact)(a, act);
        memcpy(y + v * TFC_CONV_TL, &a, sizeof(a));
    }
}

/* One register tile of the direct convolution: P output pixels (px elements apart in x, y_px
 * in y) x CB channels, summed over the taps kh_lo..kh_hi x kw_lo..kw_hi (row, col elements
 * apart in x, which points at the first pixel's tap (kh_lo, kw_lo); the others read only
 * zeros) of kh_n x kw_n and c input channels; f is the padded
 * filter [taps, c, cp] at the tile's first channel. Stores nc <= CB channels. P and CB are
 * constants where it is inlined, so acc lives in vector registers. `pf` (NULL: none): pf_n
 * cache lines to prefetch into L2 along the way, one every `pf_every` channels (the tile's share
 * of the next filter block, which is then in cache when its tiles start), then pw_n lines
 * to write next, in runs of pw_run lines pw_stride bytes apart (the pixels of the output
 * slice the next tile writes). */
TFC_CONV_INLINE void TFC_CONV_TFN(tfc_conv_tile)(const T *restrict x, int64_t px, int64_t row,
                                                 int64_t col, int64_t kh_lo, int64_t kh_hi,
                                                 int64_t kw_lo, int64_t kw_hi, int64_t kw_n,
                                                 int64_t c, const T *restrict f, int64_t cp,
                                                 T *y, int64_t y_px, int64_t nc,
                                                 const int64_t P, const int64_t CB,
                                                 const T *restrict bias, const T *res,
                                                 const int64_t act, const char *pf, int64_t pf_n,
                                                 int64_t pf_every, const char *pw, int64_t pw_n,
                                                 int64_t pw_run, int64_t pw_stride) {
    const int64_t NV = CB / TFC_CONV_TL;
    const TFC_CONV_TV zero = {0};
    TFC_CONV_TV acc[TFC_CONV_MAX_P][TFC_CONV_MAX_NV];
    TFC_CONV_TILE_UNROLL
    for (int64_t p = 0; p < P; ++p) {
        TFC_CONV_TILE_UNROLL
        for (int64_t v = 0; v < NV; ++v) acc[p][v] = zero;
    }
    int64_t countdown = pf_every, pw_line = 0;
    /* where a kernel row's taps lie next to each other in x (col == c: no dilation), its
     * (kw, ci) pairs are one run of (kw_hi - kw_lo) * c values in x and in f: one loop over
     * them, in the same order (a 7x7 filter on 3 channels ran 3-iteration loops otherwise) */
    const int64_t runs = col == c ? 1 : kw_hi - kw_lo;
    const int64_t run_n = col == c ? (kw_hi - kw_lo) * c : c;
    /* each filter row read prefetches into L1 the row TFC_CONV_FILTER_AHEAD rows on, up to the
     * tile's last: a tile reads 1-8 new lines of filter per row, from L2 (a block of 16-600 KB
     * does not stay in L1 while the tile's other blocks and rows stream through it), faster
     * than the hardware's prefetchers bring them. ResNet-50 at batch 1 (f32, 1 thread,
     * bench/onnx_ab.py, 3 processes per build, load 0.6-0.8): kernels 0.91x the time, its 7x7
     * layers 0.81-0.84x; at batch 32 0.99x, the program 0.95x; the same bits */
#if defined(TFC_CONV_PREFETCH_READS)
    /* under AddressSanitizer each prefetch reads its byte: none past the tile's last row */
    const int64_t f_last =
        kh_hi > kh_lo && kw_hi > kw_lo ? (((kh_hi - 1) * kw_n + kw_hi - 1) * c + c - 1) * cp : 0;
#endif
    for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
        for (int64_t r = 0; r < runs; ++r) {
            const int64_t kw = kw_lo + r;
            const T *restrict xk = x + (kh - kh_lo) * row + r * col;
            const T *restrict fk = f + (kh * kw_n + kw) * c * cp;
            for (int64_t ci = 0; ci < run_n; ++ci) {
                TFC_CONV_TV w[TFC_CONV_MAX_NV];
                TFC_CONV_TILE_UNROLL
                for (int64_t v = 0; v < NV; ++v)
                    memcpy(&w[v], fk + ci * cp + v * TFC_CONV_TL, sizeof(TFC_CONV_TV));
                {
#if defined(TFC_CONV_PREFETCH_READS)
                    const int64_t ahead =
                        ((kh * kw_n + kw) * c + ci + TFC_CONV_FILTER_AHEAD) * cp;
                    const char *fa = (const char *)(f + (ahead < f_last ? ahead : f_last));
#else
                    /* past the tile's last row too (a prefetch never faults): no clamp */
                    const char *fa = (const char *)((uintptr_t)(fk + ci * cp) +
                                                    (uintptr_t)(TFC_CONV_FILTER_AHEAD * cp *
                                                                (int64_t)sizeof(T)));
#endif
                    TFC_CONV_TILE_UNROLL
                    for (int64_t v = 0; v < CB * (int64_t)sizeof(T); v += 64)
                        TFC_CONV_PREFETCH_L1(fa + v);
                }
                TFC_CONV_TILE_UNROLL
                for (int64_t p = 0; p < P; ++p) {
                    const T a = xk[p * px + ci];
                    TFC_CONV_TILE_UNROLL
                    for (int64_t v = 0; v < NV; ++v) acc[p][v] = TFC_CONV_TMADD(acc[p][v], a, w[v]);
                }
                if (pf_n + pw_n > 0 && --countdown == 0) {
                    countdown = pf_every;
                    if (pf_n > 0) {
                        TFC_CONV_PREFETCH(pf);
                        pf += 64;
                        --pf_n;
                    } else {
                        TFC_CONV_PREFETCH_WRITE(pw + pw_line * 64);
                        if (++pw_line == pw_run) {
                            pw_line = 0;
                            pw += pw_stride;
                        }
                        --pw_n;
                    }
                }
            }
        }
    }
    TFC_CONV_TILE_UNROLL
    for (int64_t p = 0; p < P; ++p)
        TFC_CONV_TFN(tfc_conv_store)(y + p * y_px, acc[p], nc, CB, bias,
                                     res != NULL ? res + p * y_px : NULL, act);
}

/* One tile of the row-scatter gradient: the dy rows (co channels) of P output pixels dy_p
 * apart times the transposed filter row ft [co, lp] of one kh, added to the P input segments
 * of lp elements, seg_p apart in the bordered gradient dxb. The caller takes the P pixels from
 * P output rows, so the segments never overlap (no store waits for another to land). */
TFC_CONV_INLINE void TFC_CONV_TFN(tfc_conv_rows_tile)(const T *restrict dy, int64_t dy_p,
                                                      int64_t co, const T *restrict ft,
                                                      int64_t lp, T *dxb, int64_t seg_p,
                                                      const int64_t P) {
    const int64_t NV = lp / TFC_CONV_TL;
    const TFC_CONV_TV zero = {0};
    TFC_CONV_TV acc[TFC_CONV_MAX_P][TFC_CONV_MAX_NV];
    TFC_CONV_TILE_UNROLL
    for (int64_t p = 0; p < P; ++p) {
        TFC_CONV_TILE_UNROLL
        for (int64_t v = 0; v < NV; ++v) acc[p][v] = zero;
    }
    for (int64_t o = 0; o < co; ++o) {
        TFC_CONV_TV w[TFC_CONV_MAX_NV];
        TFC_CONV_TILE_UNROLL
        for (int64_t v = 0; v < NV; ++v)
            memcpy(&w[v], ft + o * lp + v * TFC_CONV_TL, sizeof(TFC_CONV_TV));
        TFC_CONV_TILE_UNROLL
        for (int64_t p = 0; p < P; ++p) {
            const T a = dy[p * dy_p + o];
            TFC_CONV_TILE_UNROLL
            for (int64_t v = 0; v < NV; ++v) acc[p][v] = TFC_CONV_TMADD(acc[p][v], a, w[v]);
        }
    }
    TFC_CONV_TILE_UNROLL
    for (int64_t p = 0; p < P; ++p) {
        T *seg = dxb + p * seg_p;
        TFC_CONV_TILE_UNROLL
        for (int64_t v = 0; v < NV; ++v) {
            TFC_CONV_TV cur;
            memcpy(&cur, seg + v * TFC_CONV_TL, sizeof(TFC_CONV_TV));
            cur += acc[p][v];
            memcpy(seg + v * TFC_CONV_TL, &cur, sizeof(TFC_CONV_TV));
        }
    }
}

/* One tile of the filter gradient: P filter taps (at offsets off[] from a pixel's window in
 * xp) x CB channels of dy (row stride cp), summed over every output pixel. */
TFC_CONV_INLINE void TFC_CONV_TFN(tfc_conv_filter_tile)(const tfc_conv_plan *g,
                                                        const T *restrict xp,
                                                        const int64_t *restrict off,
                                                        const T *restrict dy, T *restrict df,
                                                        int64_t nc, const int64_t P,
                                                        const int64_t CB) {
    const int64_t NV = CB / TFC_CONV_TL;
    const TFC_CONV_TV zero = {0};
    TFC_CONV_TV acc[TFC_CONV_MAX_P][TFC_CONV_MAX_NV];
    TFC_CONV_TILE_UNROLL
    for (int64_t p = 0; p < P; ++p) {
        TFC_CONV_TILE_UNROLL
        for (int64_t v = 0; v < NV; ++v) acc[p][v] = zero;
    }
    const int64_t c = g->in_c, cp = g->cp;
    for (int64_t n = 0; n < g->batch; ++n) {
        for (int64_t oh = 0; oh < g->out_h; ++oh) {
            const T *restrict xr = xp + (n * g->hp + oh * g->s_h) * g->wp * c;
            const T *restrict gr = dy + (n * g->out_h + oh) * g->out_w * cp;
            for (int64_t ow = 0; ow < g->out_w; ++ow) {
                const T *restrict xo = xr + ow * g->s_w * c;
                TFC_CONV_TV w[TFC_CONV_MAX_NV];
                TFC_CONV_TILE_UNROLL
                for (int64_t v = 0; v < NV; ++v)
                    memcpy(&w[v], gr + ow * cp + v * TFC_CONV_TL, sizeof(TFC_CONV_TV));
                TFC_CONV_TILE_UNROLL
                for (int64_t p = 0; p < P; ++p) {
                    const T a = xo[off[p]];
                    TFC_CONV_TILE_UNROLL
                    for (int64_t v = 0; v < NV; ++v) acc[p][v] = TFC_CONV_TMADD(acc[p][v], a, w[v]);
                }
            }
        }
    }
    TFC_CONV_TILE_UNROLL
    for (int64_t p = 0; p < P; ++p)
        TFC_CONV_TFN(tfc_conv_store)(df + p * g->out_c, acc[p], nc, CB, NULL, NULL,
                                     TFC_CONV_ACT_NONE);
}

/* before the columns kernels' loops over rows, channels and lanes (constant trip counts, at
 * most 24): rolled, GCC keeps their vectors on the stack */
#ifndef TFC_CONV_COLS_UNROLL
#if defined(__GNUC__) || defined(__clang__)
#define TFC_CONV_COLS_UNROLL _Pragma("GCC unroll 24")
#else
#define TFC_CONV_COLS_UNROLL
#endif
#endif

/* -- columns: vectors of consecutive output columns, per output channel -------------------
 * For s_w == 1, the output columns ow..ow+L-1 of one row read, at tap (kh, kw, ci), the input
 * columns ow+kw*d_w.. of one row of channel ci: one (unaligned) load of the bordered plane of
 * that channel, shared by every output channel, each with its filter value broadcast. So
 * every lane is useful whatever the channel count (NHWC tiles use 6 of 8 or 16 for 6). */

/* y[0 : CO * L] = the CO vectors v (channel o's L consecutive output columns) as NHWC pixels:
 * y[w * CO + o] = v[o][w]. Each vector of y takes lanes of every channel: two channels at a
 * time through GCC's two-input shuffle, then a select of that pair's lanes (masks computed
 * from the lane index, constants once CO is and the loops are unrolled). Whole vector stores:
 * element by element, this store was about a third of LeNet's conv1 at batch 1. */
#if TFC_GEMM_SHUFFLE
TFC_CONV_INLINE void TFC_CONV_TFN(tfc_conv_cols_interleave)(T *y, const TFC_CONV_TV *v,
                                                            const int64_t CO) {
    typedef TFC_CONV_IT ivec __attribute__((vector_size(sizeof(TFC_CONV_TV))));
    TFC_CONV_COLS_UNROLL for (int64_t k = 0; k < CO; ++k) {
        TFC_CONV_TV out = {0};
        TFC_CONV_COLS_UNROLL for (int64_t p = 0; p < CO; p += 2) {
            ivec idx, take;
            TFC_CONV_COLS_UNROLL for (int64_t i = 0; i < TFC_CONV_TL; ++i) {
                const int64_t e = k * TFC_CONV_TL + i, o = e % CO;
                idx[i] = (TFC_CONV_IT)(e / CO + (o == p + 1 ? TFC_CONV_TL : 0));
                take[i] = o == p || o == p + 1 ? -1 : 0;
            }
            const TFC_CONV_TV s = __builtin_shuffle(v[p], v[p + 1 < CO ? p + 1 : p], idx);
            out = (TFC_CONV_TV)(((ivec)s & take) | ((ivec)out & ~take));
        }
        memcpy(y + k * TFC_CONV_TL, &out, sizeof(out));
    }
}
#endif

/* R output rows x co channels x L columns at y (row_y apart, pixels g->ldy apart; nw <= L
 * columns stored): sums over the taps of the planes xb (c planes of hp rows of wb) at the
 * tile's first row and column times f [k_h, k_w, c, co], plus bias[o] (NULL: none), then
 * activation `act` (TFC_CONV_ACT_*), each step rounded as tfc_conv_epilogue_rows rounds it */
TFC_CONV_INLINE void TFC_CONV_TFN(tfc_conv_cols_tile)(const tfc_conv_plan *g,
                                                      const T *restrict xb, int64_t wb,
                                                      const T *restrict f, T *restrict y,
                                                      int64_t row_y, int64_t nw,
                                                      const int64_t R, const int64_t CO,
                                                      const T *restrict bias,
                                                      const int64_t act) {
    const TFC_CONV_TV zero = {0};
    TFC_CONV_TV acc[TFC_CONV_COLS_MAX_ACC];
    for (int64_t i = 0; i < R * CO; ++i) acc[i] = zero;
    const int64_t c = g->in_c;
    for (int64_t kh = 0; kh < g->k_h; ++kh) {
        for (int64_t kw = 0; kw < g->k_w; ++kw) {
            for (int64_t ci = 0; ci < c; ++ci) {
                const T *restrict xk = xb + (ci * g->hp + kh * g->d_h) * wb + kw * g->d_w;
                const T *restrict fk = f + ((kh * g->k_w + kw) * c + ci) * CO;
                for (int64_t r = 0; r < R; ++r) {
                    TFC_CONV_TV a;
                    memcpy(&a, xk + r * g->s_h * wb, sizeof(a));
                    for (int64_t o = 0; o < CO; ++o)
                        acc[r * CO + o] = TFC_CONV_TMADD(acc[r * CO + o], fk[o], a);
                }
            }
        }
    }
    TFC_CONV_COLS_UNROLL for (int64_t r = 0; r < R; ++r) {
        TFC_CONV_TV t[TFC_CONV_COLS_MAX_ACC];
        TFC_CONV_COLS_UNROLL for (int64_t o = 0; o < CO; ++o) {
            t[o] = acc[r * CO + o];
            if (bias != NULL) t[o] += bias[o];
            t[o] = TFC_CONV_TFN(tfc_conv_vact)(t[o], act);
        }
#if TFC_GEMM_SHUFFLE
        if (nw == TFC_CONV_TL && g->ldy == CO) { /* the tile's pixels are contiguous in y */
            TFC_CONV_TFN(tfc_conv_cols_interleave)(y + r * row_y, t, CO);
            continue;
        }
#endif
        T *restrict yr = y + r * row_y;
        for (int64_t w = 0; w < nw; ++w) {
            for (int64_t o = 0; o < CO; ++o) yr[w * g->ldy + o] = t[o][w];
        }
    }
}
