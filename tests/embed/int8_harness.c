/* An int8 model's embeddable library run on the rows of int8_data.h (written by
 * tests/test_tflite.py): each row's int8 outputs, one per line, in decimal. With
 * -DHARNESS_SEMIHOSTING the lines go out over ARM semihosting (samples/embed/cortex-m4); else
 * to stdout. main returns the first non-zero status of predict. */
#include <stdint.h>

#include "int8_data.h"

#if defined(HARNESS_SEMIHOSTING)
void tfc_semihosting_write0(const char *text);
#define EMIT(text) tfc_semihosting_write0(text)
#else
#include <stdio.h>
#define EMIT(text) fputs(text, stdout)
#endif

static unsigned char arena[H_ARENA_BYTES] __attribute__((aligned(16)));
static int8_t out[H_OUT_COUNT];

static void emit_int(int v) {
    char line[8], *p = line + sizeof line - 1;
    int negative = v < 0;
    unsigned u = negative ? (unsigned)-v : (unsigned)v;
    *p = '\0';
    *--p = '\n';
    do {
        *--p = (char)('0' + u % 10u);
        u /= 10u;
    } while (u);
    if (negative) *--p = '-';
    EMIT(p);
}

int main(void);
int main(void) {
    for (int r = 0; r < H_ROWS; ++r) {
        int rc = H_PREDICT(h_x + r * H_IN_COUNT, out, arena, sizeof arena);
        if (rc != 0) return rc;
        for (int j = 0; j < H_OUT_COUNT; ++j) emit_int(out[j]);
    }
    EMIT("end 0\n");
    return 0;
}
