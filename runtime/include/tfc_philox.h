/* Philox-4x32-10 (Salmon et al., 2011) and the distributions TensorFlow's random ops draw from it.
 *
 * The stream follows TensorFlow's GuardedPhiloxRandom: key = (seed lo, seed hi), counter =
 * (0, 0, seed2 lo, seed2 hi); each run of an op reserves 256 128-bit samples per output element,
 * so successive runs draw fresh numbers and a new session with the same seeds starts over.
 * tfc/ops/philox.py is the NumPy twin of this file; the tests hold the two to the same bits. */
#ifndef TFC_PHILOX_H
#define TFC_PHILOX_H

#include "tfc_hd.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define TFC_PHILOX_W32A 0x9E3779B9u
#define TFC_PHILOX_W32B 0xBB67AE85u
#define TFC_PHILOX_M4x32A 0xD2511F53u
#define TFC_PHILOX_M4x32B 0xCD9E8D57u
#define TFC_PHILOX_SAMPLES_PER_OUTPUT 256
#define TFC_TWO_PI 6.283185307179586476925286766559

typedef struct {
    uint32_t ctr[4];
    uint32_t key[2];
} tfc_philox;

static inline TFC_HD void tfc_philox_block(const uint32_t ctr_in[4], const uint32_t key_in[2],
                                    uint32_t out[4]) {
    uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
    uint32_t k0 = key_in[0], k1 = key_in[1];
    for (int round = 0; round < 10; ++round) {
        uint64_t p0 = (uint64_t)TFC_PHILOX_M4x32A * c0;
        uint64_t p1 = (uint64_t)TFC_PHILOX_M4x32B * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += TFC_PHILOX_W32A;
        k1 += TFC_PHILOX_W32B;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* Advance the 128-bit counter by n, as PhiloxRandom::Skip does. */
static inline TFC_HD void tfc_philox_skip(tfc_philox *g, uint64_t n) {
    uint32_t lo = (uint32_t)n, hi = (uint32_t)(n >> 32);
    g->ctr[0] += lo;
    if (g->ctr[0] < lo) ++hi;
    g->ctr[1] += hi;
    if (g->ctr[1] < hi) {
        if (++g->ctr[2] == 0) ++g->ctr[3];
    }
}

/* Next 4 x 32 bits; the counter then moves on by one. */
static inline TFC_HD void tfc_philox_next(tfc_philox *g, uint32_t out[4]) {
    tfc_philox_block(g->ctr, g->key, out);
    tfc_philox_skip(g, 1);
}

/* state: {seed, seed2, samples reserved so far}. Reserves `n` outputs' worth for this run. */
static inline TFC_HD tfc_philox tfc_philox_reserve(uint64_t *state, int64_t n) {
    tfc_philox g;
    g.key[0] = (uint32_t)state[0];
    g.key[1] = (uint32_t)(state[0] >> 32);
    g.ctr[0] = 0;
    g.ctr[1] = 0;
    g.ctr[2] = (uint32_t)state[1];
    g.ctr[3] = (uint32_t)(state[1] >> 32);
    tfc_philox_skip(&g, state[2]);
    state[2] += (uint64_t)n * TFC_PHILOX_SAMPLES_PER_OUTPUT;
    return g;
}

static inline TFC_HD float tfc_u32_to_f32(uint32_t x) {
    uint32_t bits = (127u << 23) | (x & 0x7fffffu);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f - 1.0f;
}

static inline TFC_HD double tfc_u64_to_f64(uint32_t x0, uint32_t x1) {
    uint64_t bits = (1023ull << 52) | ((uint64_t)(x0 & 0xfffffu) << 32) | x1;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d - 1.0;
}

/* Box-Muller, computed in double so the C and NumPy versions agree to the last bit. */
static inline TFC_HD void tfc_box_muller_f32(uint32_t x0, uint32_t x1, float *f0, float *f1) {
    float u1 = tfc_u32_to_f32(x0);
    if (u1 < 1.0e-7f) u1 = 1.0e-7f;
    double v1 = TFC_TWO_PI * (double)tfc_u32_to_f32(x1);
    double u2 = sqrt(-2.0 * log((double)u1));
    *f0 = (float)(sin(v1) * u2);
    *f1 = (float)(cos(v1) * u2);
}

static inline TFC_HD void tfc_box_muller_f64(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3,
                                      double *d0, double *d1) {
    double u1 = tfc_u64_to_f64(x0, x1);
    if (u1 < 1.0e-7) u1 = 1.0e-7;
    double v1 = TFC_TWO_PI * tfc_u64_to_f64(x2, x3);
    double u2 = sqrt(-2.0 * log(u1));
    *d0 = sin(v1) * u2;
    *d1 = cos(v1) * u2;
}

/* Uniform [0, 1): one 128-bit sample per group of 4 floats or 2 doubles. */
static inline TFC_HD void tfc_random_uniform_f32(float *out, int64_t n, uint64_t *state) {
    tfc_philox g = tfc_philox_reserve(state, n);
    uint32_t s[4];
    for (int64_t i = 0; i < n; i += 4) {
        tfc_philox_next(&g, s);
        for (int64_t j = 0; j < 4 && i + j < n; ++j) out[i + j] = tfc_u32_to_f32(s[j]);
    }
}

static inline TFC_HD void tfc_random_uniform_f64(double *out, int64_t n, uint64_t *state) {
    tfc_philox g = tfc_philox_reserve(state, n);
    uint32_t s[4];
    for (int64_t i = 0; i < n; i += 2) {
        tfc_philox_next(&g, s);
        out[i] = tfc_u64_to_f64(s[0], s[1]);
        if (i + 1 < n) out[i + 1] = tfc_u64_to_f64(s[2], s[3]);
    }
}

static inline TFC_HD void tfc_random_normal_f32(float *out, int64_t n, uint64_t *state) {
    tfc_philox g = tfc_philox_reserve(state, n);
    uint32_t s[4];
    float f[4];
    for (int64_t i = 0; i < n; i += 4) {
        tfc_philox_next(&g, s);
        tfc_box_muller_f32(s[0], s[1], &f[0], &f[1]);
        tfc_box_muller_f32(s[2], s[3], &f[2], &f[3]);
        for (int64_t j = 0; j < 4 && i + j < n; ++j) out[i + j] = f[j];
    }
}

static inline TFC_HD void tfc_random_normal_f64(double *out, int64_t n, uint64_t *state) {
    tfc_philox g = tfc_philox_reserve(state, n);
    uint32_t s[4];
    double d[2];
    for (int64_t i = 0; i < n; i += 2) {
        tfc_philox_next(&g, s);
        tfc_box_muller_f64(s[0], s[1], s[2], s[3], &d[0], &d[1]);
        out[i] = d[0];
        if (i + 1 < n) out[i + 1] = d[1];
    }
}

/* One 32-bit sample at a time from a Philox stream (TensorFlow's SingleSampleAdapter). */
typedef struct {
    tfc_philox g;
    uint32_t buf[4];
    int used;
} tfc_philox_single;

static inline TFC_HD uint32_t tfc_philox_single_next(tfc_philox_single *s) {
    if (s->used == 4) {
        tfc_philox_next(&s->g, s->buf);
        s->used = 0;
    }
    return s->buf[s->used++];
}

/* Normal truncated to (-2, 2) by rejection; each group of outputs restarts its own sub-stream
 * (256 samples per output apart) so results do not depend on how the work is split. */
static inline TFC_HD void tfc_random_truncated_normal_f32(float *out, int64_t n, uint64_t *state) {
    tfc_philox base = tfc_philox_reserve(state, n);
    for (int64_t group = 0; group * 4 < n; ++group) {
        tfc_philox_single s = {base, {0, 0, 0, 0}, 4};
        tfc_philox_skip(&s.g, (uint64_t)group * TFC_PHILOX_SAMPLES_PER_OUTPUT);
        int64_t filled = 0;
        while (filled < 4) {
            uint32_t x0 = tfc_philox_single_next(&s), x1 = tfc_philox_single_next(&s);
            float f[2];
            tfc_box_muller_f32(x0, x1, &f[0], &f[1]);
            for (int k = 0; k < 2 && filled < 4; ++k) {
                if (fabsf(f[k]) < 2.0f) {
                    if (group * 4 + filled < n) out[group * 4 + filled] = f[k];
                    ++filled;
                }
            }
        }
    }
}

static inline TFC_HD void tfc_random_truncated_normal_f64(double *out, int64_t n, uint64_t *state) {
    tfc_philox base = tfc_philox_reserve(state, n);
    for (int64_t group = 0; group * 2 < n; ++group) {
        tfc_philox_single s = {base, {0, 0, 0, 0}, 4};
        tfc_philox_skip(&s.g, (uint64_t)group * 2 * TFC_PHILOX_SAMPLES_PER_OUTPUT / 4);
        int64_t filled = 0;
        while (filled < 2) {
            uint32_t x0 = tfc_philox_single_next(&s), x1 = tfc_philox_single_next(&s);
            uint32_t x2 = tfc_philox_single_next(&s), x3 = tfc_philox_single_next(&s);
            double d[2];
            tfc_box_muller_f64(x0, x1, x2, x3, &d[0], &d[1]);
            for (int k = 0; k < 2 && filled < 2; ++k) {
                if (fabs(d[k]) < 2.0) {
                    if (group * 2 + filled < n) out[group * 2 + filled] = d[k];
                    ++filled;
                }
            }
        }
    }
}

/* -- sampling ops: each draws its own amount, as its TensorFlow kernel does ------------------- */

/* Reserve `n128` 128-bit samples for this run (GuardedPhiloxRandom::ReserveSamples128). */
static inline TFC_HD tfc_philox tfc_philox_reserve_samples(uint64_t *state, uint64_t n128) {
    tfc_philox g;
    g.key[0] = (uint32_t)state[0];
    g.key[1] = (uint32_t)(state[0] >> 32);
    g.ctr[0] = 0;
    g.ctr[1] = 0;
    g.ctr[2] = (uint32_t)state[1];
    g.ctr[3] = (uint32_t)(state[1] >> 32);
    tfc_philox_skip(&g, state[2]);
    state[2] += n128;
    return g;
}

/* This run's stream skipped by `skip` blocks, without reserving: a GPU thread's start for one
 * output of a kernel that reserves for all of them afterwards (tfc_philox_reserve's order). */
static inline TFC_HD tfc_philox tfc_philox_at(const uint64_t *state, uint64_t skip) {
    tfc_philox g;
    g.key[0] = (uint32_t)state[0];
    g.key[1] = (uint32_t)(state[0] >> 32);
    g.ctr[0] = 0;
    g.ctr[1] = 0;
    g.ctr[2] = (uint32_t)state[1];
    g.ctr[3] = (uint32_t)(state[1] >> 32);
    tfc_philox_skip(&g, state[2]);
    tfc_philox_skip(&g, skip);
    return g;
}

/* Doubles of one distribution drawn a block (two values) at a time and handed out from the
 * block's end, as TensorFlow's gamma and Poisson kernels take them (`left`: not yet taken). */
typedef struct {
    double v[2];
    int left;
} tfc_philox_pool;

/* Uniform [0, 1) doubles. */
static inline TFC_HD double tfc_pool_uniform(tfc_philox *g, tfc_philox_pool *p) {
    if (p->left == 0) {
        uint32_t s[4];
        tfc_philox_next(g, s);
        p->v[0] = tfc_u64_to_f64(s[0], s[1]);
        p->v[1] = tfc_u64_to_f64(s[2], s[3]);
        p->left = 2;
    }
    return p->v[--p->left];
}

/* Standard normal doubles, by Box-Muller. */
static inline TFC_HD double tfc_pool_normal(tfc_philox *g, tfc_philox_pool *p) {
    if (p->left == 0) {
        uint32_t s[4];
        tfc_philox_next(g, s);
        tfc_box_muller_f64(s[0], s[1], s[2], s[3], &p->v[0], &p->v[1]);
        p->left = 2;
    }
    return p->v[--p->left];
}

/* One Gamma(alpha, 1) sample (TensorFlow's RandomGamma: the same draws in the same order, all
 * in double whatever the output type): alpha 1 is an exponential, -log(1 - u); others come from
 * Marsaglia and Tsang's transformation-rejection, where for alpha < 1 the sample of alpha + 1
 * is scaled by u^(1/alpha). */
static inline TFC_HD double tfc_gamma_sample(tfc_philox *g, double alpha) {
    tfc_philox_pool normals = {{0, 0}, 0}, uniforms = {{0, 0}, 0};
    if (alpha == 1.0) return -log(1.0 - tfc_pool_uniform(g, &uniforms));
    const int below_one = alpha < 1.0;
    const double d = alpha + (below_one ? 2.0 / 3.0 : -1.0 / 3.0);
    const double c = 1.0 / 3.0 / sqrt(d);
    for (;;) {
        const double x = tfc_pool_normal(g, &normals);
        double v = 1.0 + c * x;
        if (v <= 0.0) continue;
        v = v * v * v;
        const double u = tfc_pool_uniform(g, &uniforms);
        if (u < 1.0 - 0.0331 * (x * x) * (x * x) || log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) {
            double sample = d * v;
            if (below_one) sample *= pow(tfc_pool_uniform(g, &uniforms), 1.0 / alpha);
            return sample;
        }
    }
}

/* log(k!) for a whole k >= 0: the product's log up to 18! (exact in double), then Stirling's
 * series (its error below 1e-15 from 20 on). */
static inline TFC_HD double tfc_log_factorial(double k) {
    if (k < 19.0) {
        double product = 1.0;
        for (double i = 2.0; i <= k; i += 1.0) product *= i;
        return log(product);
    }
    const double n = k + 1.0, r = 1.0 / n, r2 = r * r;
    const double series = r * (1.0 / 12.0 - r2 * (1.0 / 360.0 - r2 * (1.0 / 1260.0 - r2 / 1680.0)));
    return (n - 0.5) * log(n) - n + 0.91893853320467274178 + series;
}

/* One Poisson(rate) sample (TensorFlow's RandomPoisson: uniform doubles, Knuth's product
 * below rate 10, Hormann's transformed rejection above; `highest`: the largest value of the
 * output type, beyond which a draw is retried; a rate that is NaN or beyond it comes back
 * unchanged, where TensorFlow's kernel would retry forever). */
static inline TFC_HD double tfc_poisson_sample(tfc_philox *g, double rate, double highest) {
    tfc_philox_pool uniforms = {{0, 0}, 0};
    if (!(rate <= highest)) return rate;
    if (rate < 10.0) {
        const double limit = exp(-rate);
        double product = 1.0, x = 0.0;
        for (;;) {
            product *= tfc_pool_uniform(g, &uniforms);
            if (product <= limit && x <= highest) return x;
            x += 1.0;
        }
    }
    const double log_rate = log(rate);
    const double b = 0.931 + 2.53 * sqrt(rate);
    const double a = -0.059 + 0.02483 * b;
    const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    for (;;) {
        const double u = tfc_pool_uniform(g, &uniforms) - 0.5;
        const double v = tfc_pool_uniform(g, &uniforms);
        const double us = 0.5 - fabs(u);
        const double k = floor((2.0 * a / us + b) * u + rate + 0.43);
        if (k > highest) continue;
        if (us >= 0.07 && v <= 0.9277 - 3.6224 / (b - 2.0)) return k;
        if (k < 0.0 || (us < 0.013 && v > us)) continue;
        const double s = log(v * inv_alpha / (a / (us * us) + b));
        const double t = -rate + k * log_rate - tfc_log_factorial(k);
        if (s <= t) return k;
    }
}

#endif /* TFC_PHILOX_H */
