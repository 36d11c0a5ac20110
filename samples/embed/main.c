/* A plain C program embedding the Iris classifier that tfc compiled (build/iris/model.h): it
 * trains the network on twelve flowers for a few hundred steps, on the device, and classifies
 * the three flowers of TensorFlow's tutorial. Memory: one static state block and one static
 * arena, sized by model.h's macros; nothing is allocated.
 *
 *     make            # or: make CC=clang, make CC=aarch64-linux-gnu-gcc (see Makefile)
 */
#include <stdio.h>

#include "model.h"

/* 8-byte aligned static storage (C99 has no _Alignas) */
static union {
    double align;
    unsigned char bytes[IRIS_STATE_BYTES];
} state;
static union {
    double align;
    unsigned char bytes[IRIS_ARENA_BYTES];
} arena;

/* four flowers of each species from samples/data/iris_training.csv */
static const float train_x[IRIS_BATCH][4] = {
    {4.8f, 3.1f, 1.6f, 0.2f}, {4.8f, 3.0f, 1.4f, 0.3f}, {5.5f, 4.2f, 1.4f, 0.2f},
    {5.4f, 3.7f, 1.5f, 0.2f}, {6.2f, 2.2f, 4.5f, 1.5f}, {6.0f, 2.9f, 4.5f, 1.5f},
    {5.0f, 2.0f, 3.5f, 1.0f}, {5.0f, 2.3f, 3.3f, 1.0f}, {5.9f, 3.0f, 5.1f, 1.8f},
    {6.1f, 2.6f, 5.6f, 1.4f}, {6.8f, 3.0f, 5.5f, 2.1f}, {6.8f, 3.2f, 5.9f, 2.3f},
};
static const int32_t train_y[IRIS_BATCH] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};

static const char *const species[3] = {"setosa", "versicolor", "virginica"};

int main(void) {
    static float x[IRIS_BATCH][4], probabilities[IRIS_BATCH][3];
    const float tutorial[3][4] = {
        {5.1f, 3.3f, 1.7f, 0.5f}, {5.9f, 3.0f, 4.2f, 1.5f}, {6.9f, 3.1f, 5.4f, 2.1f}};
    printf("state %d bytes, arena %d bytes, weights %d bytes\n", IRIS_STATE_BYTES,
           IRIS_ARENA_BYTES, IRIS_WEIGHTS_BYTES);
    if (iris_init(state.bytes) != 0) return 1;
    for (int step = 1; step <= 300; ++step) {
        float loss;
        if (iris_train_step(state.bytes, &train_x[0][0], train_y, 0.01f, &loss, arena.bytes))
            return 1;
        if (step == 1 || step % 100 == 0) printf("step %d  loss %.4f\n", step, loss);
    }
    /* predict takes a full batch: the tutorial's three flowers, then zeros */
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) x[i][j] = tutorial[i][j];
    if (iris_predict(state.bytes, &x[0][0], &probabilities[0][0], arena.bytes) != 0) return 1;
    for (int i = 0; i < 3; ++i) {
        int best = 0;
        for (int c = 1; c < 3; ++c)
            if (probabilities[i][c] > probabilities[i][best]) best = c;
        printf("flower %d: %s (%.1f%%)\n", i, species[best], 100.0 * probabilities[i][best]);
    }
    return 0;
}
