/* math.h for a target without a C library (wasm32 freestanding): the functions tfc's element-
 * wise ops and random ops call. Rounding, absolute value, square root and min/max are compiler
 * builtins (single instructions on wasm32); tfc_freestanding.c defines the others, in double
 * precision (the float versions round the double result), to within a few ulps. */
#ifndef TFC_FREESTANDING_MATH_H
#define TFC_FREESTANDING_MATH_H

#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define HUGE_VAL (__builtin_huge_val())
#define HUGE_VALF (__builtin_huge_valf())
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define isfinite(x) __builtin_isfinite(x)
#define signbit(x) __builtin_signbit(x)

static inline double fabs(double x) { return __builtin_fabs(x); }
static inline float fabsf(float x) { return __builtin_fabsf(x); }
static inline double sqrt(double x) { return __builtin_sqrt(x); }
static inline float sqrtf(float x) { return __builtin_sqrtf(x); }
static inline double floor(double x) { return __builtin_floor(x); }
static inline float floorf(float x) { return __builtin_floorf(x); }
static inline double ceil(double x) { return __builtin_ceil(x); }
static inline float ceilf(float x) { return __builtin_ceilf(x); }
static inline double trunc(double x) { return __builtin_trunc(x); }
static inline float truncf(float x) { return __builtin_truncf(x); }
static inline double nearbyint(double x) { return __builtin_nearbyint(x); }
static inline float nearbyintf(float x) { return __builtin_nearbyintf(x); }
static inline double rint(double x) { return __builtin_rint(x); }
static inline float rintf(float x) { return __builtin_rintf(x); }
static inline double copysign(double x, double y) { return __builtin_copysign(x, y); }
static inline float copysignf(float x, float y) { return __builtin_copysignf(x, y); }
static inline double fmax(double a, double b) { return __builtin_fmax(a, b); }
static inline float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
static inline double fmin(double a, double b) { return __builtin_fmin(a, b); }
static inline float fminf(float a, float b) { return __builtin_fminf(a, b); }

double exp(double x);
double expm1(double x);
double log(double x);
double log1p(double x);
double pow(double x, double y);
double sin(double x);
double cos(double x);
double tan(double x);
double tanh(double x);
double fmod(double x, double y);
double atan(double x);
double asin(double x);
double acos(double x);
double sinh(double x);
double cosh(double x);
double asinh(double x);
double acosh(double x);
double atanh(double x);
double erf(double x);
double erfc(double x);
double lgamma(double x);
double atan2(double y, double x);
float expf(float x);
float expm1f(float x);
float logf(float x);
float log1pf(float x);
float powf(float x, float y);
float sinf(float x);
float cosf(float x);
float tanf(float x);
float tanhf(float x);
float fmodf(float x, float y);
float atanf(float x);
float asinf(float x);
float acosf(float x);
float sinhf(float x);
float coshf(float x);
float asinhf(float x);
float acoshf(float x);
float atanhf(float x);
float erff(float x);
float erfcf(float x);
float lgammaf(float x);
float atan2f(float y, float x);

#endif /* TFC_FREESTANDING_MATH_H */
