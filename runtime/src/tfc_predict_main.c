/* The standalone `predict` executable: restores a checkpoint, runs the compiled predict program
 * over a CSV or .npy file (full batches, then the tail one example at a time) and prints one
 * line per example or writes .npy; a label column, when present, gives the accuracy. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc_driver.h"
#include "tfc_model.h"

static const char *const PROG = "predict";

/* Whether the model has variables a checkpoint holds (an imported ONNX model has none: its
 * weights are constants of the program, and predict needs no --checkpoint). */
static int has_saved_state(const tfc_model *m) {
    for (int i = 0; i < m->n_state; ++i)
        if (m->state[i].saved) return 1;
    return 0;
}

static void usage(const tfc_model *m, FILE *f) {
    const tfc_program *p = m->predict;
    fprintf(f,
            "usage: predict %s--data FILE [--output OUT.npy] [--threads T]\n"
            "               [--allow-nonfinite]\n"
            "\n"
            "Runs model '%s' on every row of FILE (CSV or 2-D .npy)%s.\n"
            "Prints one line per example, or writes OUT.npy (OUT_<name>.npy per output when the\n"
            "model has several). When FILE has one column more than the %" PRId64 " features,\n"
            "the last column is the label and the accuracy is printed; a label must be one of\n"
            "the model's classes. nan and inf are refused unless --allow-nonfinite.\n"
            "\noutputs:",
            has_saved_state(m) ? "--checkpoint CKPT " : "", m->name,
            has_saved_state(m) ? " with the variables of CKPT\n(a checkpoint directory, whose "
                                 "latest checkpoint is used, or a checkpoint prefix)"
                               : "",
            tfc_tensor_example_size(&p->inputs[m->predict_features]));
    for (int i = 0; i < p->n_outputs; ++i)
        fprintf(f, " %s (%" PRId64 " per example)", p->outputs[i].name,
                tfc_tensor_example_size(&p->outputs[i]));
    fprintf(f, "\n");
}

typedef struct {
    tfc_dataset data;
    tfc_model_state state;
    int64_t *rows;
    void *features;    /* one batch of features */
    void **outputs;    /* one batch of every output */
    void **results;    /* every example of every output */
} predict_run;

static void predict_run_free(const tfc_program *p, predict_run *r) {
    for (int i = 0; i < p->n_outputs; ++i) {
        if (r->outputs != NULL) free(r->outputs[i]);
        if (r->results != NULL) free(r->results[i]);
    }
    free(r->outputs);
    free(r->results);
    free(r->features);
    free(r->rows);
    tfc_model_state_free(&r->state);
    tfc_dataset_free(&r->data);
}

/* Run `program` (batch n) on rows [first, first + count) of the data, padding a short batch
 * with copies of the last row, and append `count` examples of each output to the results. */
static int run_chunk(const tfc_model *m, const tfc_program *program, int64_t n, int64_t first,
                     int64_t count, int64_t n_features, predict_run *r, tfc_error *err) {
    for (int64_t i = 0; i < n; ++i) r->rows[i] = first + (i < count ? i : count - 1);
    const tfc_tensor_spec *fin = &program->inputs[m->predict_features];
    int status = tfc_dataset_gather(&r->data, r->rows, n, 0, n_features, fin->dtype,
                                    r->features, err);
    if (status != TFC_OK) return status;
    const void *inputs[1] = {r->features};
    status = tfc_model_run(&r->state, program, inputs, r->outputs, err);
    if (status != TFC_OK) return status;
    for (int i = 0; i < program->n_outputs; ++i) {
        const tfc_tensor_spec *o = &program->outputs[i];
        int64_t bytes = tfc_tensor_example_size(o) * tfc_dtype_size(o->dtype);
        memcpy((char *)r->results[i] + first * bytes, r->outputs[i], (size_t)(count * bytes));
    }
    return TFC_OK;
}

static void print_value(const void *data, int dtype, int64_t k) {
    switch (dtype) {
    case TFC_DT_F32: printf("%.6g", ((const float *)data)[k]); break;
    case TFC_DT_F64: printf("%.6g", ((const double *)data)[k]); break;
    case TFC_DT_I32: printf("%" PRId32, ((const int32_t *)data)[k]); break;
    case TFC_DT_I64: printf("%" PRId64, ((const int64_t *)data)[k]); break;
    default: printf("%d", ((const unsigned char *)data)[k]); break;
    }
}

static int write_outputs(const tfc_model *m, const char *output, predict_run *r,
                         tfc_error *err) {
    const tfc_program *p = m->predict;
    int64_t rows = r->data.rows;
    if (output == NULL) {
        for (int64_t e = 0; e < rows; ++e) {
            for (int i = 0; i < p->n_outputs; ++i) {
                const tfc_tensor_spec *o = &p->outputs[i];
                int64_t k = tfc_tensor_example_size(o);
                if (p->n_outputs > 1) printf("%s%s:", i ? "  " : "", o->name);
                for (int64_t j = 0; j < k; ++j) {
                    if (j || p->n_outputs > 1) putchar(' ');
                    print_value(r->results[i], o->dtype, e * k + j);
                }
            }
            putchar('\n');
        }
        return TFC_OK;
    }
    for (int i = 0; i < p->n_outputs; ++i) {
        const tfc_tensor_spec *o = &p->outputs[i];
        char path[4096];
        size_t n = strlen(output);
        if (p->n_outputs == 1)
            snprintf(path, sizeof(path), "%s", output);
        else if (n >= 4 && strcmp(output + n - 4, ".npy") == 0)
            snprintf(path, sizeof(path), "%.*s_%s.npy", (int)(n - 4), output, o->name);
        else
            snprintf(path, sizeof(path), "%s_%s.npy", output, o->name);
        int64_t dims[TFC_CHECKPOINT_MAX_RANK];
        int rank = o->rank < TFC_CHECKPOINT_MAX_RANK ? o->rank : TFC_CHECKPOINT_MAX_RANK;
        for (int d = 0; d < rank; ++d) dims[d] = o->dims[d];
        dims[0] = rows;
        int status = tfc_npy_write(path, o->dtype, rank, dims, r->results[i], err);
        if (status != TFC_OK) return status;
    }
    return TFC_OK;
}

/* The class of example e: the argmax of the output's values, or the value itself. */
static int64_t predicted_class(const tfc_model *m, const predict_run *r, int64_t e) {
    const tfc_tensor_spec *o = &m->predict->outputs[m->predict_classes];
    int64_t k = tfc_tensor_example_size(o);
    if (!m->predict_argmax) return (int64_t)tfc_driver_element(r->results[m->predict_classes],
                                                               o->dtype, e);
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j)
        if (tfc_driver_element(r->results[m->predict_classes], o->dtype, e * k + j) >
            tfc_driver_element(r->results[m->predict_classes], o->dtype, e * k + best))
            best = j;
    return best;
}

/* How many classes a label column may name: the model's train labels', else the width of the
 * scores compared with it; 0 when only "an integer >= 0" is known. */
static int64_t label_range(const tfc_model *m) {
    if (m->label_classes > 0) return m->label_classes;
    if (m->predict_classes >= 0 && m->predict_argmax)
        return tfc_tensor_example_size(&m->predict->outputs[m->predict_classes]);
    return 0;
}

static int predict(const tfc_model *m, const char *checkpoint, const char *data,
                   const char *output, int allow_nonfinite, predict_run *r) {
    const tfc_program *p = m->predict;
    char msg[4096];
    tfc_error err = {msg, sizeof(msg), NULL};
    msg[0] = '\0';
    if (tfc_dataset_load(&r->data, data, &err) != TFC_OK) return tfc_driver_error(PROG, "%s", msg);
    const tfc_tensor_spec *fin = &p->inputs[m->predict_features];
    int64_t n_features = tfc_tensor_example_size(fin);
    if (r->data.cols != n_features && r->data.cols != n_features + 1)
        return tfc_driver_error(PROG, "%s has %" PRId64 " columns; model '%s' takes %" PRId64
                                " features (and optionally a label, the last column): expected "
                                "%" PRId64 " or %" PRId64, data, r->data.cols, m->name,
                                n_features, n_features, n_features + 1);
    int labeled = r->data.cols == n_features + 1;
    if ((!allow_nonfinite && tfc_dataset_check_finite(&r->data, 0, r->data.cols, &err)) ||
        (labeled && (m->label_classes > 0 || m->predict_classes >= 0) &&
         tfc_dataset_check_labels(&r->data, n_features, 1, label_range(m), &err)))
        return tfc_driver_error(PROG, "%s", msg);

    if (tfc_model_state_init(&r->state, m, 0, &err) != TFC_OK)
        return tfc_driver_error(PROG, "%s", msg);
    if (checkpoint != NULL &&
        tfc_model_restore(&r->state, checkpoint, p, NULL, 0, &err) != TFC_OK)
        return tfc_driver_error(PROG, "%s", msg);

    int64_t batch = m->batch;
    r->rows = malloc((size_t)batch * sizeof(int64_t));
    r->features = tfc_aligned_alloc(fin->nbytes);
    r->outputs = calloc((size_t)(p->n_outputs > 0 ? p->n_outputs : 1), sizeof(void *));
    r->results = calloc((size_t)(p->n_outputs > 0 ? p->n_outputs : 1), sizeof(void *));
    if (r->rows == NULL || r->features == NULL || r->outputs == NULL || r->results == NULL)
        return tfc_driver_error(PROG, "out of memory");
    for (int i = 0; i < p->n_outputs; ++i) {
        const tfc_tensor_spec *o = &p->outputs[i];
        r->outputs[i] = tfc_aligned_alloc(o->nbytes);
        r->results[i] = tfc_aligned_alloc(r->data.rows * tfc_tensor_example_size(o) *
                                          tfc_dtype_size(o->dtype));
        if (r->outputs[i] == NULL || r->results[i] == NULL)
            return tfc_driver_error(PROG, "out of memory");
    }
    int64_t e = 0;
    for (; e + batch <= r->data.rows; e += batch)
        if (run_chunk(m, p, batch, e, batch, n_features, r, &err) != TFC_OK) goto failed;
    /* the tail: one example at a time, or a padded batch when there is no batch-1 program */
    if (m->predict_one != NULL) {
        for (; e < r->data.rows; ++e)
            if (run_chunk(m, m->predict_one, 1, e, 1, n_features, r, &err) != TFC_OK)
                goto failed;
    } else if (e < r->data.rows) {
        if (run_chunk(m, p, batch, e, r->data.rows - e, n_features, r, &err) != TFC_OK)
            goto failed;
    }
    if (write_outputs(m, output, r, &err) != TFC_OK) return tfc_driver_error(PROG, "%s", msg);
    if (labeled && m->predict_classes >= 0) {
        int64_t correct = 0;
        for (int64_t k = 0; k < r->data.rows; ++k) {
            double label = r->data.values[k * r->data.cols + n_features];
            if ((double)predicted_class(m, r, k) == label) ++correct;
        }
        printf("accuracy %.4f (%" PRId64 " of %" PRId64 ")\n",
               (double)correct / (double)r->data.rows, correct, r->data.rows);
    } else if (labeled) {
        fprintf(stderr, "predict: the model names no output to compare with the labels; no "
                        "accuracy\n");
    }
    return 0;
failed:
    return tfc_driver_error(PROG, "%s%s%s%s", msg, err.node ? " (node " : "",
                            err.node ? err.node : "", err.node ? ")" : "");
}

int tfc_predict_main(const tfc_model *m, int argc, char **argv) {
    if (m->predict == NULL)
        return tfc_driver_error(PROG, "model '%s' has no predict signature", m->name);
    const char *checkpoint = NULL, *data = NULL, *output = NULL;
    int allow_nonfinite = 0;
    for (int i = 1; i < argc; ++i) {
        const char *v = NULL;
        int r = 0;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(m, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--allow-nonfinite") == 0) {
            allow_nonfinite = 1;
            continue;
        }
        if ((r = tfc_driver_option(PROG, argc, argv, &i, "--checkpoint", &v)) > 0)
            checkpoint = v;
        else if (r == 0 && (r = tfc_driver_option(PROG, argc, argv, &i, "--data", &v)) > 0)
            data = v;
        else if (r == 0 && (r = tfc_driver_option(PROG, argc, argv, &i, "--output", &v)) > 0)
            output = v;
        else if (r == 0 && (r = tfc_driver_option(PROG, argc, argv, &i, "--threads", &v)) > 0) {
            if (tfc_driver_threads(PROG, v)) return 1;
        } else if (r == 0)
            return tfc_driver_error(PROG, "unknown argument '%s' (see predict --help)", argv[i]);
        if (r < 0) return 1;
    }
    if (data == NULL || (checkpoint == NULL && has_saved_state(m)))
        return tfc_driver_error(PROG, "%s are required (see predict --help)",
                                has_saved_state(m) ? "--checkpoint and --data" : "--data");
    predict_run r;
    memset(&r, 0, sizeof(r));
    int status = predict(m, checkpoint, data, output, allow_nonfinite, &r);
    predict_run_free(m->predict, &r);
    return status;
}
