/* What a target without a C library lacks: memcpy and friends, and the libm functions of
 * runtime/freestanding/math.h. Compile with -ffreestanding (so the compiler does not turn these
 * loops back into calls of themselves) and -Iruntime/freestanding.
 *
 * The math is textbook: reduce the argument exactly (Cody-Waite), evaluate a Taylor series on
 * the small remainder in double precision, scale back. Errors are a few double ulps, far below
 * a float ulp, so the float functions (the double result rounded) are nearly always correctly
 * rounded. */
#include <math.h>
#include <stdint.h>
#include <string.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n--) *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d < s) {
        while (n--) *d++ = *s++;
    } else {
        while (n--) d[n] = s[n];
    }
    return dst;
}

void *memset(void *dst, int c, size_t n) {
    unsigned char *d = dst;
    while (n--) *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n--; ++x, ++y) {
        if (*x != *y) return *x < *y ? -1 : 1;
    }
    return 0;
}

size_t strlen(const char *s) {
    size_t n = 0;
    while (s[n]) ++n;
    return n;
}

/* the nearest integer of |x| < 2^62, without the rounding-mode builtins */
static double round_int(double x) { return (double)(int64_t)(x + (x < 0 ? -0.5 : 0.5)); }

static const double LN2_HI = 6.93147180369123816490e-01; /* ln 2 with the low 32 bits zero */
static const double LN2_LO = 1.90821492927058770002e-10;
static const double INV_LN2 = 1.44269504088896338700e+00;

/* 2^k for an integer k in [-1074, 1023] */
static double pow2i(int k) {
    uint64_t bits;
    double d;
    if (k < -1022) { /* subnormal */
        bits = (uint64_t)1 << (k + 1074);
    } else {
        bits = (uint64_t)(k + 1023) << 52;
    }
    memcpy(&d, &bits, sizeof d);
    return d;
}

double exp(double x) {
    if (x != x) return x;
    if (x > 709.782712893384) return HUGE_VAL;
    if (x < -745.1332191019412) return 0.0;
    double kd = round_int(x * INV_LN2);
    int k = (int)kd;
    double r = (x - kd * LN2_HI) - kd * LN2_LO; /* |r| <= 0.35 */
    double p = 1.0;
    for (int n = 17; n >= 1; --n) p = 1.0 + p * r / n;
    if (k < -1021) return p * pow2i(k + 64) * pow2i(-64); /* a subnormal result, rounded once */
    if (k > 1023) return p * 2.0 * pow2i(k - 1);
    return p * pow2i(k);
}

double log(double x) {
    if (x != x || x == HUGE_VAL) return x;
    if (x < 0) return NAN;
    if (x == 0) return -HUGE_VAL;
    int e = 0;
    if (x < 2.2250738585072014e-308) { /* subnormal: scale into the normal range */
        x *= 18014398509481984.0;      /* 2^54 */
        e = -54;
    }
    uint64_t bits;
    memcpy(&bits, &x, sizeof x);
    e += (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* m in [1, 2) */
    double m;
    memcpy(&m, &bits, sizeof m);
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e += 1;
    }
    double f = m - 1.0, s = f / (2.0 + f), s2 = s * s; /* log m = 2 atanh s, |s| < 0.172 */
    double series = 0.0;
    for (int n = 25; n >= 3; n -= 2) series = (1.0 / n + series) * s2;
    double logm = 2.0 * s + 2.0 * s * series; /* 2 (s + s^3/3 + s^5/5 + ...) */
    return (e * LN2_LO + logm) + e * LN2_HI;
}

double log1p(double x) {
    double u = 1.0 + x;
    if (u == 1.0) return x;
    if (u == HUGE_VAL) return u;
    return log(u) * x / (u - 1.0); /* corrects the rounding of 1 + x (Kahan) */
}

double expm1(double x) {
    if (x > 709.782712893384) return HUGE_VAL;
    double u = exp(x);
    if (u == 1.0) return x;
    double um1 = u - 1.0;
    if (um1 == -1.0) return -1.0;
    if (x > 1.0) return um1; /* no cancellation to correct (and um1 * x could overflow) */
    return um1 * x / log(u); /* corrects the rounding of exp(x) - 1 (Kahan) */
}

double tanh(double x) {
    double a = fabs(x);
    if (a > 22.0) return copysign(1.0, x);
    double t = expm1(2.0 * a);
    return copysign(t / (t + 2.0), x);
}

double pow(double x, double y) {
    if (y == 0.0 || x == 1.0) return 1.0;
    if (x != x || y != y) return NAN;
    double sign = 1.0;
    if (x < 0) {
        if (trunc(y) != y) return NAN;
        if (fmod(y, 2.0) != 0.0) sign = -1.0;
        x = -x;
    }
    if (x == 0.0) return y > 0 ? 0.0 * sign : sign * HUGE_VAL;
    return sign * exp(y * log(x));
}

/* sin and cos of r in [-pi/4, pi/4] */
static double sin_kernel(double r) {
    double r2 = r * r, p = 0.0;
    for (int n = 19; n >= 3; n -= 2) p = (1.0 - p) * r2 / ((double)n * (n - 1));
    return r - r * p;
}

static double cos_kernel(double r) {
    double r2 = r * r, p = 0.0;
    for (int n = 20; n >= 2; n -= 2) p = (1.0 - p) * r2 / ((double)n * (n - 1));
    return 1.0 - p;
}

/* x - k pi/2 in three exact parts (Cody-Waite), accurate for |x| < 2^20 pi/2 */
static double reduce_pio2(double x, int *quadrant) {
    static const double PIO2_1 = 1.57079632673412561417e+00;
    static const double PIO2_2 = 6.07710050630396597660e-11;
    static const double PIO2_3 = 2.02226624879595063154e-21;
    double k = round_int(x * 6.36619772367581382433e-01);
    *quadrant = (int)((int64_t)k & 3);
    return ((x - k * PIO2_1) - k * PIO2_2) - k * PIO2_3;
}

double sin(double x) {
    if (isinf(x) || x != x) return NAN;
    int q;
    double r = reduce_pio2(x, &q);
    switch (q) {
        case 0: return sin_kernel(r);
        case 1: return cos_kernel(r);
        case 2: return -sin_kernel(r);
        default: return -cos_kernel(r);
    }
}

double cos(double x) {
    if (isinf(x) || x != x) return NAN;
    int q;
    double r = reduce_pio2(x, &q);
    switch (q) {
        case 0: return cos_kernel(r);
        case 1: return -sin_kernel(r);
        case 2: return -cos_kernel(r);
        default: return sin_kernel(r);
    }
}

double tan(double x) { return sin(x) / cos(x); }

/* exact: each subtraction of a power-of-two multiple of |y| is exact (Sterbenz) */
double fmod(double x, double y) {
    if (x != x || y != y || isinf(x) || y == 0.0) return NAN;
    if (isinf(y)) return x;
    double a = fabs(x), b = fabs(y);
    while (a >= b) {
        double t = b;
        while (t <= a * 0.5) t *= 2.0;
        a -= t;
    }
    return copysign(a, x);
}

float expf(float x) { return (float)exp(x); }
float expm1f(float x) { return (float)expm1(x); }
float logf(float x) { return (float)log(x); }
float log1pf(float x) { return (float)log1p(x); }
float powf(float x, float y) { return (float)pow(x, y); }
float sinf(float x) { return (float)sin(x); }
float cosf(float x) { return (float)cos(x); }
float tanf(float x) { return (float)tan(x); }
float tanhf(float x) { return (float)tanh(x); }
float fmodf(float x, float y) { return (float)fmod(x, y); }
