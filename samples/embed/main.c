/* A plain C program embedding the Iris classifier that tfc compiled (build/iris/model.h): it
 * trains the network on twelve flowers for a few hundred steps, on the device, and classifies
 * the three flowers of TensorFlow's tutorial. Memory: one static state block and one static
 * arena, sized by model.h's macros; nothing is allocated. Every call returns a status code
 * (model.h lists them): the program prints it and stops on the first that is not TFC_OK.
 *
 *     make            # or: make CC=clang, make cortex-m4, make wasm (see Makefile)
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
    int rc;
    printf("state %d bytes, arena %d bytes, stack %d bytes, weights %d bytes\n",
           IRIS_STATE_BYTES, IRIS_ARENA_BYTES, IRIS_STACK_BYTES, IRIS_WEIGHTS_BYTES);
    rc = iris_init(state.bytes, sizeof state.bytes);
    if (rc != TFC_OK) {
        printf("iris_init: status %d\n", rc);
        return 1;
    }
    for (int step = 1; step <= 300; ++step) {
        float loss;
        rc = iris_train_step(state.bytes, sizeof state.bytes, IRIS_BATCH, &train_x[0][0], train_y,
                             0.01f, &loss, arena.bytes, sizeof arena.bytes);
        if (rc != TFC_OK) {
            printf("iris_train_step: status %d\n", rc);
            return 1;
        }
        if (step == 1 || step % 100 == 0) printf("step %d  loss %.4f\n", step, loss);
    }
    /* predict takes a full batch: the tutorial's three flowers, then zeros */
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) x[i][j] = tutorial[i][j];
    rc = iris_predict(state.bytes, sizeof state.bytes, IRIS_BATCH, &x[0][0], &probabilities[0][0],
                      arena.bytes, sizeof arena.bytes);
    if (rc != TFC_OK) {
        printf("iris_predict: status %d\n", rc);
        return 1;
    }
    for (int i = 0; i < 3; ++i) {
        int best = 0;
        for (int c = 1; c < 3; ++c)
            if (probabilities[i][c] > probabilities[i][best]) best = c;
        printf("flower %d: %s (%.1f%%)\n", i, species[best], 100.0 * probabilities[i][best]);
    }
    return 0;
}
