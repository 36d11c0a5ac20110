/* The depthwise kernels of tfc_depthwise.h for one element type: included once per type with
 * TFC_DW_T (the C type) and TFC_DW_TAG (its suffix: f32, f64) defined. No include guard. */

#define TFC_DW_CAT_(a, b) a##_##b
#define TFC_DW_CAT(a, b) TFC_DW_CAT_(a, b)
#define TFC_DW_FN(name) TFC_DW_CAT(name, TFC_DW_TAG)
#define TFC_DW_FMA TFC_DW_CAT(TFC_DW_FMA, TFC_DW_TAG)

typedef TFC_DW_T TFC_DW_FN(tfc_depthwise_vec) __attribute__((vector_size(TFC_DW_VBYTES)));
#define TFC_DW_V TFC_DW_FN(tfc_depthwise_vec)
#define TFC_DW_L ((int64_t)(sizeof(TFC_DW_V) / sizeof(TFC_DW_T)))

/* One register tile: P pixels (px elements apart in x, ypx in y) x NV vectors of channels,
 * summed over the taps (i, j), i < nkh, j < nkw: row, col elements apart in x, frow, fcol in
 * f. x and f point at the first tap of pixel 0, at the tile's first channel. P and NV are
 * constants where it is inlined, so the accumulators live in vector registers. */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_tile)(const TFC_DW_T *restrict x, int64_t px,
                                                 int64_t row, int64_t col, int64_t nkh,
                                                 int64_t nkw, const TFC_DW_T *restrict f,
                                                 int64_t frow, int64_t fcol,
                                                 TFC_DW_T *restrict y, int64_t ypx,
                                                 const int64_t P, const int64_t NV) {
    const TFC_DW_V zero = {0};
    TFC_DW_V acc[TFC_DW_P][TFC_DW_NV];
    TFC_DW_UNROLL
    for (int64_t p = 0; p < P; ++p) {
        TFC_DW_UNROLL
        for (int64_t v = 0; v < NV; ++v) acc[p][v] = zero;
    }
    for (int64_t i = 0; i < nkh; ++i) {
        TFC_DW_UNROLL
        for (int64_t j = 0; j < nkw; ++j) {
            const TFC_DW_T *restrict xk = x + i * row + j * col;
            const TFC_DW_T *restrict fk = f + i * frow + j * fcol;
            TFC_DW_V w[TFC_DW_NV];
            TFC_DW_UNROLL
            for (int64_t v = 0; v < NV; ++v) memcpy(&w[v], fk + v * TFC_DW_L, sizeof(TFC_DW_V));
            TFC_DW_UNROLL
            for (int64_t p = 0; p < P; ++p) {
                TFC_DW_UNROLL
                for (int64_t v = 0; v < NV; ++v) {
                    TFC_DW_V a;
                    memcpy(&a, xk + p * px + v * TFC_DW_L, sizeof(TFC_DW_V));
                    acc[p][v] = TFC_DW_FMA(acc[p][v], a, w[v]);
                }
            }
        }
    }
    TFC_DW_UNROLL
    for (int64_t p = 0; p < P; ++p) {
        TFC_DW_UNROLL
        for (int64_t v = 0; v < NV; ++v)
            memcpy(y + p * ypx + v * TFC_DW_L, &acc[p][v], sizeof(TFC_DW_V));
    }
}

/* The tile's sums for the last nc < one vector of channels, one value at a time */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_tail)(const TFC_DW_T *restrict x, int64_t px,
                                                 int64_t row, int64_t col, int64_t nkh,
                                                 int64_t nkw, const TFC_DW_T *restrict f,
                                                 int64_t frow, int64_t fcol,
                                                 TFC_DW_T *restrict y, int64_t ypx,
                                                 const int64_t P, int64_t nc) {
    for (int64_t p = 0; p < P; ++p) {
        for (int64_t c = 0; c < nc; ++c) {
            TFC_DW_T acc = 0;
            for (int64_t i = 0; i < nkh; ++i) {
                for (int64_t j = 0; j < nkw; ++j)
                    acc += x[p * px + i * row + j * col + c] * f[i * frow + j * fcol + c];
            }
            y[p * ypx + c] = acc;
        }
    }
}

/* Every channel (c of them) of P pixels: tiles of TFC_DW_NV vectors, one of the vectors left,
 * then the values left */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_pixels)(const TFC_DW_T *restrict x, int64_t px,
                                                   int64_t row, int64_t col, int64_t nkh,
                                                   int64_t nkw, const TFC_DW_T *restrict f,
                                                   int64_t frow, int64_t fcol,
                                                   TFC_DW_T *restrict y, int64_t ypx, int64_t c,
                                                   const int64_t P) {
    const int64_t block = TFC_DW_NV * TFC_DW_L;
    int64_t c0 = 0;
    for (; c0 + block <= c; c0 += block) {
        TFC_DW_FN(tfc_depthwise_tile)(x + c0, px, row, col, nkh, nkw, f + c0, frow, fcol,
                                      y + c0, ypx, P, TFC_DW_NV);
    }
    const int64_t nv = (c - c0) / TFC_DW_L;
    if (nv > 0) {
        TFC_DW_FN(tfc_depthwise_tile)(x + c0, px, row, col, nkh, nkw, f + c0, frow, fcol,
                                      y + c0, ypx, P, nv);
        c0 += nv * TFC_DW_L;
    }
    if (c0 < c) {
        TFC_DW_FN(tfc_depthwise_tail)(x + c0, px, row, col, nkh, nkw, f + c0, frow, fcol,
                                      y + c0, ypx, P, c - c0);
    }
}

/* One kernel's buffers, passed to its parts */
typedef struct {
    const TFC_DW_T *a, *b;
    TFC_DW_T *y;
} TFC_DW_FN(tfc_depthwise_call);

/* y = the forward convolution for output rows [r0, r1) of batch*out_h: tiles of TFC_DW_P
 * pixels where every tap column is inside the image, single pixels at the borders. */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_forward_rows)(const tfc_depthwise_plan *g,
                                                         const TFC_DW_T *restrict x,
                                                         const TFC_DW_T *restrict f,
                                                         TFC_DW_T *restrict y, int64_t r0,
                                                         int64_t r1) {
    const int64_t C = g->in_c, W = g->in_w, OW = g->out_w, KW = g->k_w;
    const int64_t row = g->d_h * W * C, col = g->d_w * C, px = g->s_w * C, frow = KW * C;
    /* the output columns whose taps are all inside the image: [ow_lo, ow_hi) */
    const int64_t ow_lo = (g->pad_left + g->s_w - 1) / g->s_w;
    const int64_t last = W - 1 + g->pad_left - (KW - 1) * g->d_w;
    const int64_t ow_hi = last < 0 ? 0 : (last / g->s_w + 1 < OW ? last / g->s_w + 1 : OW);
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / g->out_h, h0 = r % g->out_h * g->s_h - g->pad_top;
        TFC_DW_T *restrict yr = y + r * OW * C;
        int64_t kh0, nkh;
        tfc_depthwise_inside(h0, g->d_h, g->k_h, g->in_h, &kh0, &nkh);
        if (nkh == 0) {
            memset(yr, 0, (size_t)(OW * C) * sizeof(TFC_DW_T));
            continue;
        }
        const TFC_DW_T *restrict xr = x + (n * g->in_h + h0 + kh0 * g->d_h) * W * C;
        const TFC_DW_T *restrict fr = f + kh0 * frow;
        for (int64_t ow = 0; ow < OW;) {
            const int64_t w0 = ow * g->s_w - g->pad_left;
            if (ow >= ow_lo && ow + TFC_DW_P <= ow_hi) {
                TFC_DW_FN(tfc_depthwise_pixels)(xr + w0 * C, px, row, col, nkh, KW, fr, frow, C,
                                                yr + ow * C, C, C, TFC_DW_P);
                ow += TFC_DW_P;
                continue;
            }
            int64_t kw0, nkw;
            tfc_depthwise_inside(w0, g->d_w, KW, W, &kw0, &nkw);
            if (nkw == 0) {
                memset(yr + ow * C, 0, (size_t)C * sizeof(TFC_DW_T));
            } else {
                TFC_DW_FN(tfc_depthwise_pixels)(xr + (w0 + kw0 * g->d_w) * C, px, row, col, nkh,
                                                nkw, fr + kw0 * C, frow, C, yr + ow * C, C, C,
                                                1);
            }
            ow += 1;
        }
    }
}

/* dx = the input gradient for input rows [r0, r1) of batch*in_h, gathered: each input pixel
 * sums dy times the filter over the taps through which some output pixel read it. At stride 1
 * along the width, tiles of TFC_DW_P pixels where every tap column has an output column. */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_input_rows)(const tfc_depthwise_plan *g,
                                                       const TFC_DW_T *restrict f,
                                                       const TFC_DW_T *restrict dy,
                                                       TFC_DW_T *restrict dx, int64_t r0,
                                                       int64_t r1) {
    const int64_t C = g->in_c, W = g->in_w, OW = g->out_w, KW = g->k_w;
    /* stride 1: input columns iw whose every tap kw has the output column iw + pad - kw*d */
    const int64_t iw_lo = (KW - 1) * g->d_w - g->pad_left;
    const int64_t iw_hi = OW - g->pad_left < W ? OW - g->pad_left : W;
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / g->in_h, ih = r % g->in_h;
        TFC_DW_T *restrict dxr = dx + r * W * C;
        int64_t kh0, khs, nkh, oh0, ohs;
        tfc_depthwise_gather(ih, g->pad_top, g->s_h, g->d_h, g->k_h, g->out_h, &kh0, &khs, &nkh,
                             &oh0, &ohs);
        if (nkh == 0) {
            memset(dxr, 0, (size_t)(W * C) * sizeof(TFC_DW_T));
            continue;
        }
        const TFC_DW_T *restrict dyr = dy + (n * g->out_h + oh0) * OW * C;
        const TFC_DW_T *restrict fr = f + kh0 * KW * C;
        const int64_t row = -ohs * OW * C, frow = khs * KW * C;
        for (int64_t iw = 0; iw < W;) {
            if (g->s_w == 1 && iw >= iw_lo && iw + TFC_DW_P <= iw_hi) {
                TFC_DW_FN(tfc_depthwise_pixels)(dyr + (iw + g->pad_left) * C, C, row,
                                                -g->d_w * C, nkh, KW, fr, frow, C, dxr + iw * C,
                                                C, C, TFC_DW_P);
                iw += TFC_DW_P;
                continue;
            }
            int64_t kw0, kws, nkw, ow0, ows;
            tfc_depthwise_gather(iw, g->pad_left, g->s_w, g->d_w, KW, OW, &kw0, &kws, &nkw, &ow0,
                                 &ows);
            if (nkw == 0) {
                memset(dxr + iw * C, 0, (size_t)C * sizeof(TFC_DW_T));
            } else {
                TFC_DW_FN(tfc_depthwise_pixels)(dyr + ow0 * C, C, row, -ows * C, nkh, nkw,
                                                fr + kw0 * C, frow, kws * C, dxr + iw * C, C, C,
                                                1);
            }
            iw += 1;
        }
    }
}

/* One tile of the filter gradient: df_t[t] += the input vector of tap t times the dy vector,
 * summed over the output pixels [ow0, ow1) of one row (dy_row at its first channel; base: x's
 * element at tap (0, 0) of pixel 0, outside x where padded; df_t: df at the group's first tap
 * and the tile's first channel), in registers. CHECK (a constant): skip the taps outside
 * [kh0, kh0 + nkh) x the pixel's columns; 0 where every tap of the pixels is inside. */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_filter_row)(
    const tfc_depthwise_plan *g, const TFC_DW_T *restrict x, const TFC_DW_T *restrict dy_row,
    int64_t base, int64_t ow0, int64_t ow1, const int64_t *off, const int64_t *kh,
    const int64_t *kw, int64_t kh0, int64_t nkh, TFC_DW_T *restrict df_t, const int64_t NT,
    const int64_t NV, const int CHECK) {
    const int64_t C = g->in_c, step = g->s_w * C;
    TFC_DW_V acc[TFC_DW_TG][TFC_DW_NF];
    TFC_DW_UNROLL
    for (int64_t t = 0; t < NT; ++t) {
        TFC_DW_UNROLL
        for (int64_t v = 0; v < NV; ++v)
            memcpy(&acc[t][v], df_t + t * C + v * TFC_DW_L, sizeof(TFC_DW_V));
    }
    for (int64_t ow = ow0; ow < ow1; ++ow) {
        const int64_t at = base + ow * step;
        int64_t kw0 = 0, nkw = g->k_w;
        if (CHECK)
            tfc_depthwise_inside(ow * g->s_w - g->pad_left, g->d_w, g->k_w, g->in_w, &kw0, &nkw);
        TFC_DW_V d[TFC_DW_NF];
        TFC_DW_UNROLL
        for (int64_t v = 0; v < NV; ++v)
            memcpy(&d[v], dy_row + ow * C + v * TFC_DW_L, sizeof(TFC_DW_V));
        TFC_DW_UNROLL
        for (int64_t t = 0; t < NT; ++t) {
            if (CHECK && (kh[t] < kh0 || kh[t] >= kh0 + nkh || kw[t] < kw0 || kw[t] >= kw0 + nkw))
                continue;
            TFC_DW_UNROLL
            for (int64_t v = 0; v < NV; ++v) {
                TFC_DW_V a;
                memcpy(&a, x + (at + off[t] + v * TFC_DW_L), sizeof(TFC_DW_V));
                acc[t][v] = TFC_DW_FMA(acc[t][v], a, d[v]);
            }
        }
    }
    TFC_DW_UNROLL
    for (int64_t t = 0; t < NT; ++t) {
        TFC_DW_UNROLL
        for (int64_t v = 0; v < NV; ++v)
            memcpy(df_t + t * C + v * TFC_DW_L, &acc[t][v], sizeof(TFC_DW_V));
    }
}

/* df[t0 : t0 + NT] += the products of NV vectors of channels at c0 over the output rows
 * [r0, r1) of batch*out_h, for the taps t0 .. t0 + NT - 1 (NT <= TFC_DW_TG): each pixel's dy
 * vectors are loaded once and multiplied by the input vector of every tap of the group inside
 * the image, with no test per tap where the whole window is inside. */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_filter_taps)(const tfc_depthwise_plan *g,
                                                        const TFC_DW_T *restrict x,
                                                        const TFC_DW_T *restrict dy,
                                                        TFC_DW_T *restrict df, int64_t c0,
                                                        int64_t t0, int64_t r0, int64_t r1,
                                                        const int64_t NT, const int64_t NV) {
    const int64_t C = g->in_c, W = g->in_w, OW = g->out_w;
    int64_t kh[TFC_DW_TG], kw[TFC_DW_TG], off[TFC_DW_TG];
    for (int64_t t = 0; t < NT; ++t) {
        kh[t] = (t0 + t) / g->k_w;
        kw[t] = (t0 + t) % g->k_w;
        off[t] = (kh[t] * g->d_h * W + kw[t] * g->d_w) * C;
    }
    /* the output columns whose taps are all inside the image: [ow_lo, ow_hi) */
    const int64_t last = W - 1 + g->pad_left - (g->k_w - 1) * g->d_w;
    const int64_t ow_hi = last < 0 ? 0 : (last / g->s_w + 1 < OW ? last / g->s_w + 1 : OW);
    const int64_t first = (g->pad_left + g->s_w - 1) / g->s_w;
    const int64_t ow_lo = first < ow_hi ? first : ow_hi;
    TFC_DW_T *restrict df_t = df + t0 * C + c0;
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / g->out_h, h0 = r % g->out_h * g->s_h - g->pad_top;
        int64_t kh0, nkh;
        tfc_depthwise_inside(h0, g->d_h, g->k_h, g->in_h, &kh0, &nkh);
        const TFC_DW_T *restrict dy_row = dy + r * OW * C + c0;
        const int64_t base = ((n * g->in_h + h0) * W - g->pad_left) * C + c0;
        if (nkh < g->k_h) {
            TFC_DW_FN(tfc_depthwise_filter_row)(g, x, dy_row, base, 0, OW, off, kh, kw, kh0, nkh,
                                                df_t, NT, NV, 1);
            continue;
        }
        TFC_DW_FN(tfc_depthwise_filter_row)(g, x, dy_row, base, 0, ow_lo, off, kh, kw, kh0, nkh,
                                            df_t, NT, NV, 1);
        TFC_DW_FN(tfc_depthwise_filter_row)(g, x, dy_row, base, ow_lo, ow_hi, off, kh, kw, kh0,
                                            nkh, df_t, NT, NV, 0);
        TFC_DW_FN(tfc_depthwise_filter_row)(g, x, dy_row, base, ow_hi, OW, off, kh, kw, kh0,
                                            nkh, df_t, NT, NV, 1);
    }
}

/* df += the products of NV vectors at c0 over the output rows [r0, r1), every tap group */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_filter_block)(const tfc_depthwise_plan *g,
                                                         const TFC_DW_T *restrict x,
                                                         const TFC_DW_T *restrict dy,
                                                         TFC_DW_T *restrict df, int64_t c0,
                                                         int64_t r0, int64_t r1,
                                                         const int64_t NV) {
    const int64_t taps = g->k_h * g->k_w;
    for (int64_t t0 = 0; t0 < taps; t0 += TFC_DW_TG) {
        if (taps - t0 >= TFC_DW_TG) {
            TFC_DW_FN(tfc_depthwise_filter_taps)(g, x, dy, df, c0, t0, r0, r1, TFC_DW_TG, NV);
        } else {
            TFC_DW_FN(tfc_depthwise_filter_taps)(g, x, dy, df, c0, t0, r0, r1,
                                                 taps % TFC_DW_TG, NV);
        }
    }
}

/* df for the channels [c0, C) (less than one vector), one value at a time */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_filter_tail)(const tfc_depthwise_plan *g,
                                                        const TFC_DW_T *restrict x,
                                                        const TFC_DW_T *restrict dy,
                                                        TFC_DW_T *restrict df, int64_t c0) {
    const int64_t C = g->in_c;
    for (int64_t t = 0; t < g->k_h * g->k_w; ++t) {
        const int64_t kh = t / g->k_w, kw = t % g->k_w;
        for (int64_t c = c0; c < C; ++c) df[t * C + c] = 0;
        for (int64_t n = 0; n < g->batch; ++n) {
            for (int64_t oh = 0; oh < g->out_h; ++oh) {
                const int64_t ih = oh * g->s_h - g->pad_top + kh * g->d_h;
                if (ih < 0 || ih >= g->in_h) continue;
                for (int64_t ow = 0; ow < g->out_w; ++ow) {
                    const int64_t iw = ow * g->s_w - g->pad_left + kw * g->d_w;
                    if (iw < 0 || iw >= g->in_w) continue;
                    const TFC_DW_T *restrict xp = x + ((n * g->in_h + ih) * g->in_w + iw) * C;
                    const TFC_DW_T *restrict dp = dy + ((n * g->out_h + oh) * g->out_w + ow) * C;
                    for (int64_t c = c0; c < C; ++c) df[t * C + c] += xp[c] * dp[c];
                }
            }
        }
    }
}

/* The filter gradient's parts: contiguous runs of the blocks of TFC_DW_NF vectors of channels,
 * the last part also the vectors and values left over (each part owns its channels: no partial
 * sums to add up, and every sum is taken in the same order whatever the thread count). */
TFC_DW_INLINE int64_t TFC_DW_FN(tfc_depthwise_filter_blocks_per_part)(const tfc_depthwise_plan *g) {
    const int64_t blocks = g->in_c / (TFC_DW_NF * TFC_DW_L);
    return (blocks + TFC_DW_FILTER_PARTS - 1) / TFC_DW_FILTER_PARTS;
}

TFC_DW_INLINE int64_t TFC_DW_FN(tfc_depthwise_filter_parts)(const tfc_depthwise_plan *g) {
    const int64_t blocks = g->in_c / (TFC_DW_NF * TFC_DW_L);
    const int64_t per = TFC_DW_FN(tfc_depthwise_filter_blocks_per_part)(g);
    return blocks < 1 ? 1 : (blocks + per - 1) / per;
}

/* One part: the output rows in bands (their x and dy rows stay in cache while each block of
 * the part's channels goes over them), each band's products added to df. */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_filter_part)(const tfc_depthwise_plan *g, void *call,
                                                        int64_t part) {
    const TFC_DW_FN(tfc_depthwise_call) *k = (const TFC_DW_FN(tfc_depthwise_call) *)call;
    const int64_t block = TFC_DW_NF * TFC_DW_L, C = g->in_c, taps = g->k_h * g->k_w;
    const int64_t blocks = C / block, rest = C % block / TFC_DW_L;
    const int64_t parts = TFC_DW_FN(tfc_depthwise_filter_parts)(g);
    const int64_t per = TFC_DW_FN(tfc_depthwise_filter_blocks_per_part)(g), b0 = part * per;
    const int64_t b1 = blocks < b0 + per ? blocks : b0 + per;
    const int64_t c0 = b0 * block;
    const int64_t c1 = part == parts - 1 ? C - C % TFC_DW_L : b1 * block;
    const int64_t rows = g->batch * g->out_h;
    const int64_t band_rows = TFC_DW_BAND / (g->out_w * C) > 0 ? TFC_DW_BAND / (g->out_w * C) : 1;
    for (int64_t t = 0; t < taps; ++t) {
        for (int64_t c = c0; c < c1; ++c) k->y[t * C + c] = 0;
    }
    for (int64_t r0 = 0; r0 < rows; r0 += band_rows) {
        const int64_t r1 = rows - r0 < band_rows ? rows : r0 + band_rows;
        for (int64_t b = b0; b < b1; ++b) {
            TFC_DW_FN(tfc_depthwise_filter_block)(g, k->a, k->b, k->y, b * block, r0, r1,
                                                  TFC_DW_NF);
        }
        if (part == parts - 1 && rest > 0) {
            TFC_DW_FN(tfc_depthwise_filter_block)(g, k->a, k->b, k->y, blocks * block, r0, r1,
                                                  rest);
        }
    }
    if (part == parts - 1 && C % TFC_DW_L != 0)
        TFC_DW_FN(tfc_depthwise_filter_tail)(g, k->a, k->b, k->y, C - C % TFC_DW_L);
}

TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_forward_part)(const tfc_depthwise_plan *g, void *call,
                                                         int64_t part) {
    const TFC_DW_FN(tfc_depthwise_call) *k = (const TFC_DW_FN(tfc_depthwise_call) *)call;
    int64_t r0, r1;
    tfc_depthwise_part_rows(g->batch * g->out_h, part, &r0, &r1);
    TFC_DW_FN(tfc_depthwise_forward_rows)(g, k->a, k->b, k->y, r0, r1);
}

TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_input_part)(const tfc_depthwise_plan *g, void *call,
                                                       int64_t part) {
    const TFC_DW_FN(tfc_depthwise_call) *k = (const TFC_DW_FN(tfc_depthwise_call) *)call;
    int64_t r0, r1;
    tfc_depthwise_part_rows(g->batch * g->in_h, part, &r0, &r1);
    TFC_DW_FN(tfc_depthwise_input_rows)(g, k->a, k->b, k->y, r0, r1);
}

/* multiply-adds of one kernel: the threads' threshold */
static inline double TFC_DW_FN(tfc_depthwise_work)(const tfc_depthwise_plan *g) {
    return (double)(g->batch * g->out_h * g->out_w) * (double)(g->in_c * g->k_h * g->k_w);
}

/* y = depthwise_conv2d(x, f); `part` is the template's tfc_depthwise_forward_part with the plan */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_forward)(const tfc_depthwise_plan *g,
                                                    const TFC_DW_T *x, const TFC_DW_T *f,
                                                    TFC_DW_T *y, tfc_threads_fn part) {
    TFC_DW_FN(tfc_depthwise_call) call = {x, f, y};
    tfc_depthwise_run(TFC_DW_FN(tfc_depthwise_work)(g), TFC_DW_ROW_PARTS, part, &call);
}

/* dx from f and dy; `part`: tfc_depthwise_input_part with the plan */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_input)(const tfc_depthwise_plan *g, const TFC_DW_T *f,
                                                  const TFC_DW_T *dy, TFC_DW_T *dx,
                                                  tfc_threads_fn part) {
    TFC_DW_FN(tfc_depthwise_call) call = {f, dy, dx};
    tfc_depthwise_run(TFC_DW_FN(tfc_depthwise_work)(g), TFC_DW_ROW_PARTS, part, &call);
}

/* df from x and dy; `part`: tfc_depthwise_filter_part with the plan */
TFC_DW_INLINE void TFC_DW_FN(tfc_depthwise_filter)(const tfc_depthwise_plan *g,
                                                   const TFC_DW_T *x, const TFC_DW_T *dy,
                                                   TFC_DW_T *df, tfc_threads_fn part) {
    TFC_DW_FN(tfc_depthwise_call) call = {x, dy, df};
    tfc_depthwise_run(TFC_DW_FN(tfc_depthwise_work)(g), TFC_DW_FN(tfc_depthwise_filter_parts)(g),
                      part, &call);
}

#undef TFC_DW_V
#undef TFC_DW_L
#undef TFC_DW_FMA
#undef TFC_DW_FN
#undef TFC_DW_CAT
#undef TFC_DW_CAT_
