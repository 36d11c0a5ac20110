/* Misuses of the embeddable library's entry points (tests/test_embed*.py): NULL pointers, short
 * and misaligned blocks, counts that are not the batch, NaN and infinite inputs; each must
 * return its status code of model.h, a refused train step leaving the state as it was. Prints
 * "ok", or the first call that returned something else. For a model with features [None, 4]
 * and a train signature, compiled by tfc compile --target embed (prefix model_). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"
#define EXPECT(call, code)                                                                   \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        if (rc_ != (code)) {                                                                 \
            printf("line %d: %s returned %d, not %s\n", __LINE__, #call, rc_, #code);        \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)
#define SAME(a, b) EXPECT(memcmp(a, b, SB) == 0 ? TFC_OK : TFC_ERR_UNKNOWN, TFC_OK)
#define N MODEL_BATCH
#define X MODEL_TRAIN_IN_FEATURES_COUNT
#define OUT MODEL_PREDICT_OUT_PROBABILITIES_COUNT

int main(void) {
    const size_t SB = MODEL_STATE_BYTES, AB = MODEL_ARENA_BYTES;
    /* every block exactly as large as model.h says, so ASan sees any access past it */
    unsigned char *state = malloc(SB), *before = malloc(SB), *arena = malloc(AB);
    unsigned char *wide = malloc(AB + 8), *short_arena = malloc(AB - 16), *saved = malloc(SB);
    float *x = malloc(sizeof(float) * X), *few = malloc(sizeof(float) * (X - X / N));
    float *probabilities = malloc(sizeof(float) * OUT), loss = 0;
    int32_t *y = malloc(sizeof(int32_t) * N);
    for (int i = 0; i < X; ++i) x[i] = (float)(i % 7) * 0.3f - 1.0f;
    for (int i = 0; i < X - X / N; ++i) few[i] = x[i];
    for (int i = 0; i < N; ++i) y[i] = i % 3;

    EXPECT(model_init(NULL, SB), TFC_ERR_NULL_POINTER);
    EXPECT(model_init(state + 4, SB), TFC_ERR_ALIGNMENT);
    EXPECT(model_init(state, SB - 1), TFC_ERR_BUFFER_TOO_SMALL);
    EXPECT(model_init(state, SB), TFC_OK);

    EXPECT(model_train_step(NULL, SB, N, x, y, 0.1f, &loss, arena, AB), TFC_ERR_NULL_POINTER);
    EXPECT(model_train_step(state, SB, N, NULL, y, 0.1f, &loss, arena, AB), TFC_ERR_NULL_POINTER);
    EXPECT(model_train_step(state, SB, N, x, NULL, 0.1f, &loss, arena, AB), TFC_ERR_NULL_POINTER);
    EXPECT(model_train_step(state, SB, N, x, y, 0.1f, &loss, NULL, AB), TFC_ERR_NULL_POINTER);
    EXPECT(model_train_step(state, SB, N, x, y, 0.1f, &loss, wide + 1, AB), TFC_ERR_ALIGNMENT);
    EXPECT(model_train_step(state + 4, SB, N, x, y, 0.1f, &loss, arena, AB), TFC_ERR_ALIGNMENT);
    EXPECT(model_train_step(state, SB, N, x, y, 0.1f, &loss, short_arena, AB - 16),
           TFC_ERR_ARENA_TOO_SMALL);
    EXPECT(model_train_step(state, SB - 8, N, x, y, 0.1f, &loss, arena, AB),
           TFC_ERR_BUFFER_TOO_SMALL);
    EXPECT(model_train_step(state, SB, N - 1, few, y, 0.1f, &loss, arena, AB),
           TFC_ERR_INVALID_ARGUMENT);

    /* a NaN or infinite feature or learning rate: refused, the state (the random streams
       too) as it was */
    memcpy(before, state, SB);
    x[1] = NAN;
    EXPECT(model_train_step(state, SB, N, x, y, 0.1f, &loss, arena, AB), TFC_ERR_NON_FINITE);
    SAME(state, before);
    x[1] = -INFINITY;
    EXPECT(model_train_step(state, SB, N, x, y, 0.1f, NULL, arena, AB), TFC_ERR_NON_FINITE);
    SAME(state, before);
    x[1] = 0.5f;
    EXPECT(model_train_step(state, SB, N, x, y, NAN, &loss, arena, AB), TFC_ERR_NON_FINITE);
    EXPECT(model_train_step(state, SB, N, x, y, INFINITY, &loss, arena, AB), TFC_ERR_NON_FINITE);
    SAME(state, before);
    /* and the next valid step runs, and changes the state */
    EXPECT(model_train_step(state, SB, N, x, y, 0.1f, &loss, arena, AB), TFC_OK);
    EXPECT(memcmp(state, before, SB) != 0 && isfinite(loss) ? TFC_OK : TFC_ERR_UNKNOWN, TFC_OK);

    EXPECT(model_predict(state, SB, N, NULL, probabilities, arena, AB), TFC_ERR_NULL_POINTER);
    EXPECT(model_predict(state, SB, N, x, NULL, arena, AB), TFC_ERR_NULL_POINTER);
    EXPECT(model_predict(NULL, SB, N, x, probabilities, arena, AB), TFC_ERR_NULL_POINTER);
    EXPECT(model_predict(state, SB, N, x, probabilities, NULL, AB), TFC_ERR_NULL_POINTER);
    EXPECT(model_predict(state, SB, N, x, probabilities, wide + 1, AB), TFC_ERR_ALIGNMENT);
    EXPECT(model_predict(state, SB, N, x, probabilities, short_arena, AB - 16),
           TFC_ERR_ARENA_TOO_SMALL);
    EXPECT(model_predict(state, SB, N + 1, x, probabilities, arena, AB),
           TFC_ERR_INVALID_ARGUMENT);
    EXPECT(model_predict(state, SB, N, x, probabilities, arena, AB), TFC_OK);

    EXPECT(model_save(NULL, SB, saved, MODEL_SAVE_BYTES), TFC_ERR_NULL_POINTER);
    EXPECT(model_save(state, SB, NULL, MODEL_SAVE_BYTES), TFC_ERR_NULL_POINTER);
    EXPECT(model_save(state, SB, saved, MODEL_SAVE_BYTES - 1), TFC_ERR_BUFFER_TOO_SMALL);
    EXPECT(model_save(state, SB, saved, MODEL_SAVE_BYTES), TFC_OK);
    EXPECT(model_restore(state, SB - 1, saved, MODEL_SAVE_BYTES), TFC_ERR_BUFFER_TOO_SMALL);
    EXPECT(model_restore(state, SB, saved, MODEL_SAVE_BYTES), TFC_OK);
    printf("ok\n");
    free(state), free(before), free(arena), free(wide), free(short_arena), free(saved);
    free(x), free(few), free(probabilities), free(y);
    return 0;
}
