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

/* -- inverse trigonometric: atan on [0, 1] after two angle halvings, the rest from it -- */
static const double PI = 3.14159265358979311600e+00;
static const double PI_2 = 1.57079632679489655800e+00;

double atan(double x) {
    if (x != x) return x;
    double a = fabs(x);
    int inverted = a > 1.0;
    if (inverted) a = 1.0 / a; /* atan a = pi/2 - atan(1/a) */
    /* atan a = 2 atan(a / (1 + sqrt(1 + a^2))), twice: |a| <= tan(pi/16) < 0.2 */
    a = a / (1.0 + sqrt(1.0 + a * a));
    a = a / (1.0 + sqrt(1.0 + a * a));
    double a2 = a * a, s = 0.0;
    for (int n = 25; n >= 1; n -= 2) s = 1.0 / n - a2 * s; /* 1 - a^2/3 + a^4/5 - ... */
    double r = 4.0 * a * s;
    if (inverted) r = PI_2 - r;
    return copysign(r, x);
}

double atan2(double y, double x) {
    if (x != x || y != y) return x + y;
    if (y == 0.0) return signbit(x) ? copysign(PI, y) : y;
    if (x == 0.0) return copysign(PI_2, y);
    if (isinf(x) && isinf(y)) return copysign(signbit(x) ? 3.0 * PI / 4.0 : PI / 4.0, y);
    double r = atan(fabs(y) / fabs(x)); /* an overflowing quotient is inf: pi/2 */
    if (signbit(x)) r = PI - r;
    return copysign(r, y);
}

double asin(double x) { return atan2(x, sqrt((1.0 - x) * (1.0 + x))); }

double acos(double x) { return atan2(sqrt((1.0 - x) * (1.0 + x)), x); }

/* -- hyperbolic: from expm1 (no cancellation near 0), exp of half the argument when large -- */
double sinh(double x) {
    double a = fabs(x), r;
    if (a < 22.0) {
        double t = expm1(a);
        r = 0.5 * (t + t / (t + 1.0));
    } else {
        double h = exp(0.5 * a); /* e^a / 2 without overflowing before the result does */
        r = 0.5 * h * h;
    }
    return copysign(r, x);
}

double cosh(double x) {
    double a = fabs(x);
    if (a < 22.0) {
        double e = exp(a);
        return 0.5 * (e + 1.0 / e);
    }
    double h = exp(0.5 * a);
    return 0.5 * h * h;
}

double asinh(double x) {
    double a = fabs(x), r;
    if (a > 268435456.0) { /* 2^28: sqrt(a^2 + 1) is a */
        r = log(a) + (LN2_HI + LN2_LO);
    } else if (a > 2.0) {
        r = log(2.0 * a + 1.0 / (sqrt(a * a + 1.0) + a));
    } else {
        r = log1p(a + a * a / (1.0 + sqrt(1.0 + a * a)));
    }
    return copysign(r, x);
}

double acosh(double x) {
    if (x != x || x < 1.0) return NAN;
    if (x > 268435456.0) return log(x) + (LN2_HI + LN2_LO);
    if (x > 2.0) return log(2.0 * x - 1.0 / (x + sqrt(x * x - 1.0)));
    double t = x - 1.0; /* exact */
    return log1p(t + sqrt(2.0 * t + t * t));
}

double atanh(double x) {
    double a = fabs(x);
    if (x != x || a > 1.0) return NAN;
    if (a == 1.0) return copysign(HUGE_VAL, x);
    return copysign(0.5 * log1p(2.0 * a / (1.0 - a)), x);
}

/* -- erf, erfc: Taylor series near 0, Laplace's continued fraction for erfc beyond -- */
static const double TWO_OVER_SQRT_PI = 1.12837916709551255856e+00;

/* e^(-x^2) with x^2 split exactly: s^2 + (x - s)(x + s), s = x with 24 significant bits */
static double exp_minus_square(double x) {
    double s = (double)(float)x;
    return exp(-s * s) * exp(-(x - s) * (x + s));
}

static double erf_series(double x) { /* |x| < 1: terms fall at once, little cancellation */
    double x2 = x * x, term = 1.0, sum = 1.0;
    for (int n = 1; n < 28; ++n) {
        term *= -x2 / n;
        sum += term / (2 * n + 1);
    }
    return TWO_OVER_SQRT_PI * x * sum;
}

static double erfc_fraction(double x) { /* x >= 0.5: 2x e^(-x^2) / sqrt(pi) / (2x^2 + 1 - 1*2/(2x^2 + 5 - ...)) */
    if (x > 27.3) return 0.0;
    double z = 2.0 * x * x, t = 0.0;
    for (int k = (int)(8.0 + 80.0 / (x * x)); k >= 1; --k) {
        t = (2.0 * k - 1.0) * (2.0 * k) / (z + 4.0 * k + 1.0 - t);
    }
    return TWO_OVER_SQRT_PI * x * exp_minus_square(x) / (z + 1.0 - t);
}

double erf(double x) {
    if (x != x) return x;
    double a = fabs(x);
    if (a < 1.0) return erf_series(x);
    return copysign(1.0 - erfc_fraction(a), x);
}

double erfc(double x) {
    if (x != x) return x;
    if (x < 0.5) return 1.0 - erf(x);
    return erfc_fraction(x);
}

/* -- lgamma: Stirling's series from 10 on, the recurrence below, reflection for x < 0 -- */
double lgamma(double x) {
    if (x != x) return x;
    if (isinf(x)) return HUGE_VAL;
    if (x <= 0.0 && trunc(x) == x) return HUGE_VAL; /* the poles */
    if (x == 1.0 || x == 2.0) return 0.0; /* exactly, where the recurrence would leave ulps */
    if (x < 0.0) {
        double r = x - floor(x); /* sin(pi x) = +-sin(pi r), r in (0, 1) */
        double s = fabs(sin(PI * (r > 0.5 ? 1.0 - r : r)));
        return log(PI / (s * -x)) - lgamma(-x); /* Gamma(x) Gamma(1 - x) = pi / sin(pi x) */
    }
    double z = x, product = 1.0;
    while (z < 10.0) {
        product *= z;
        z += 1.0;
    }
    double inv = 1.0 / z, inv2 = inv * inv;
    double series = inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 * (1.0 / 1680
                    - inv2 * (1.0 / 1188 - inv2 * (691.0 / 360360 - inv2 / 156))))));
    double logz = log(z);
    double stirling = z * (logz - 1.0) - 0.5 * logz + 0.91893853320467274178 + series;
    return product == 1.0 ? stirling : stirling - log(product);
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
float atanf(float x) { return (float)atan(x); }
float asinf(float x) { return (float)asin(x); }
float acosf(float x) { return (float)acos(x); }
float sinhf(float x) { return (float)sinh(x); }
float coshf(float x) { return (float)cosh(x); }
float asinhf(float x) { return (float)asinh(x); }
float acoshf(float x) { return (float)acosh(x); }
float atanhf(float x) { return (float)atanh(x); }
float erff(float x) { return (float)erf(x); }
float erfcf(float x) { return (float)erfc(x); }
float lgammaf(float x) { return (float)lgamma(x); }
float atan2f(float y, float x) { return (float)atan2(y, x); }
