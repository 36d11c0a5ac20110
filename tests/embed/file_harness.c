/* A one-input, one-output model's embeddable library run on a file: reads H_IN_COUNT
 * little-endian float32 values from argv[1], calls predict once with an arena of H_ARENA_BYTES
 * bytes, writes the H_OUT_COUNT outputs to argv[2] (tests/test_onnx_light.py). harness_data.h
 * defines the counts and H_PREDICT(x, y, arena, arena_bytes) for the model's prefix. Exits with
 * predict's status, or 100 + a number when a file cannot be read or written. */
#include <stdio.h>
#include <stdlib.h>

#include "harness_data.h"

int main(int argc, char **argv) {
    if (argc != 3) return 100;
    float *x = malloc(sizeof(float) * (size_t)H_IN_COUNT);
    float *y = malloc(sizeof(float) * (size_t)H_OUT_COUNT);
    /* the arena is large (a CNN's activations and the weights it generates): the heap, not
     * BSS; malloc's alignment (16 bytes on the hosts this runs on) covers H_ARENA_ALIGN */
    void *arena = malloc((size_t)H_ARENA_BYTES);
    if (!x || !y || !arena) return 101;
    FILE *in = fopen(argv[1], "rb");
    if (!in) return 102;
    size_t got = fread(x, sizeof(float), (size_t)H_IN_COUNT, in);
    fclose(in);
    if (got != (size_t)H_IN_COUNT) return 103;
    int rc = H_PREDICT(x, y, arena, (size_t)H_ARENA_BYTES);
    if (rc != 0) return rc;
    FILE *out = fopen(argv[2], "wb");
    if (!out) return 104;
    size_t put = fwrite(y, sizeof(float), (size_t)H_OUT_COUNT, out);
    if (fclose(out) != 0 || put != (size_t)H_OUT_COUNT) return 105;
    free(arena);
    free(y);
    free(x);
    return 0;
}
