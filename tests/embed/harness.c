/* The embedded-library test program: one source for every target of tests/test_embed*.py.
 *
 * harness_data.h (written by the test) includes the generated model.h and defines the inputs,
 * the number of training steps and the H_* macros naming the model's entry points. The program
 * runs predict, then H_STEPS training steps (each followed by predict), and emits every result
 * as 32-bit words (a float's bits, exactly): on Linux as hex lines on stdout, on a Cortex-M4 as
 * hex lines through semihosting, on wasm32 into an exported buffer. */
#include <stdint.h>
#include <string.h>

#include "harness_data.h"

/* 8-byte aligned buffers without C11's _Alignas */
typedef union {
    uint64_t u;
    double d;
    unsigned char b[8];
} h_align;
#define H_WORDS(bytes) (((bytes) + 7) / 8 + 1)
static h_align arena[H_WORDS(H_ARENA_BYTES)];
#if H_STATE
static h_align state[H_WORDS(H_STATE_BYTES)];
#else
static h_align state[1];
#endif

void harness_emit(uint32_t word);

static void emit_floats(const float *x, int n) {
    for (int i = 0; i < n; ++i) {
        uint32_t w;
        memcpy(&w, &x[i], sizeof w);
        harness_emit(w);
    }
}

static float outputs[H_OUT_COUNT];

int harness_run(void);
int harness_run(void) {
    int rc;
    (void)state;
#if H_STATE
    rc = H_INIT(state, sizeof state);
    if (rc != 0) return 10 + rc;
#endif
#if H_TRAIN
    for (int step = 0; step <= H_STEPS; ++step) {
        if (step > 0) {
            float loss = 0;
            rc = H_TRAIN_STEP(state, sizeof state, h_features, h_labels, &loss, arena,
                              sizeof arena);
            if (rc != 0) return 20 + rc;
            emit_floats(&loss, 1);
        }
        rc = H_PREDICT(state, sizeof state, h_features, outputs, arena, sizeof arena);
        if (rc != 0) return 30 + rc;
        emit_floats(outputs, H_OUT_COUNT);
    }
#else
    rc = H_PREDICT(state, sizeof state, h_features, outputs, arena, sizeof arena);
    if (rc != 0) return 30 + rc;
    emit_floats(outputs, H_OUT_COUNT);
#endif
    return 0;
}

#if defined(HARNESS_STDIO)
#include <stdio.h>
void harness_emit(uint32_t word) { printf("%08lx\n", (unsigned long)word); }
int main(void) {
    int rc = harness_run();
    printf("end %d\n", rc);
    return rc;
}

#elif defined(HARNESS_WASM)
#define H_MAX_WORDS 4096
static uint32_t emitted[H_MAX_WORDS];
static int n_emitted;
void harness_emit(uint32_t word) {
    if (n_emitted < H_MAX_WORDS) emitted[n_emitted] = word;
    ++n_emitted;
}
__attribute__((export_name("run"))) int run(void) { return harness_run(); }
__attribute__((export_name("words"))) uint32_t *words(void) { return emitted; }
__attribute__((export_name("n_words"))) int n_words(void) { return n_emitted; }

#elif defined(HARNESS_SEMIHOSTING)
/* samples/embed/cortex-m4/startup.c calls main and exits with its status */
void tfc_semihosting_write0(const char *text);
void harness_emit(uint32_t word) {
    char line[10];
    for (int i = 0; i < 8; ++i) line[i] = "0123456789abcdef"[(word >> (28 - 4 * i)) & 15u];
    line[8] = '\n';
    line[9] = '\0';
    tfc_semihosting_write0(line);
}
int main(void);
int main(void) {
    int rc = harness_run();
    tfc_semihosting_write0(rc == 0 ? "end 0\n" : "end failed\n");
    return rc;
}
#endif
