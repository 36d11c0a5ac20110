/* The standalone `train` executable: reads a CSV or .npy file, shuffles and batches it, runs
 * the compiled training step until the global step reaches --steps, logs progress and writes
 * safetensors checkpoints that tf.train.Saver reads; a checkpoint directory that already holds
 * one resumes from it. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfc_driver.h"
#include "tfc_events.h"
#include "tfc_model.h"

static const char *const PROG = "train";

static void usage(const tfc_model *m, FILE *f) {
    fprintf(f,
            "usage: train --data FILE --steps N --checkpoint-dir DIR [--batch B] [--lr X]\n"
            "             [--hparam NAME=VALUE] [--seed S] [--log-every K] [--save-every M]\n"
            "             [--max-to-keep K] [--no-shuffle] [--threads T] [--allow-nonfinite]\n"
            "             [--logdir L]\n"
            "\n"
            "Trains model '%s' (compiled for batch %" PRId64 ") on FILE: CSV (numbers; the last\n"
            "column is the label; a header row is skipped) or .npy (2-D, the label last).\n"
            "\n"
            "  --steps N           train until the global step reaches N (a resumed run continues\n"
            "                      from the checkpoint's step: N is a total, not a count)\n"
            "  --checkpoint-dir D  checkpoints are written there (D/model.ckpt-STEP.safetensors);\n"
            "                      if D holds one, training resumes from the latest\n"
            "  --batch B           must be the compiled batch (tfc compile --batch B)\n"
            "  --lr X              sets the hyperparameter learning_rate\n"
            "  --hparam NAME=X     sets any hyperparameter of the model\n"
            "  --seed S            seeds the shuffling and unseeded random ops (default 0)\n"
            "  --log-every K       a progress line every K steps (default 100; 0: none)\n"
            "  --save-every M      a checkpoint every M steps (default 1000; 0: only at the end)\n"
            "  --max-to-keep K     keep the newest K checkpoints (default 5; 0: all)\n"
            "  --no-shuffle        batches in file order\n"
            "  --threads T         threads for large kernels (default: TFC_NUM_THREADS, else 1)\n"
            "  --allow-nonfinite   read nan, inf (and values out of range) as they are; without\n"
            "                      it they are refused, naming the file, line and column\n"
            "  --logdir L          TensorBoard event files in L: at every progress line the loss,\n"
            "                      examples/sec, global_step/sec, the learning rate and the\n"
            "                      model's tf.summary.scalar values (tensorboard --logdir L)\n"
            "\n"
            "Labels that are class ids must be integers in [0, classes) of the model; a value\n"
            "that is not is refused where it is read. Temporary files of saves that were killed\n"
            "and checkpoint files the checkpoint state file does not name are removed from D at\n"
            "the start (with --max-to-keep 0 every checkpoint file is kept).\n",
            m->name, m->batch);
    if (m->n_hyperparameters > 0) {
        fprintf(f, "\nhyperparameters (default):\n");
        for (int i = 0; i < m->n_hyperparameters; ++i)
            fprintf(f, "  %s (%g)\n", m->hyperparameters[i].name,
                    m->hyperparameters[i].default_value);
    }
}

typedef struct {
    const char *data, *dir, *logdir;
    int64_t steps, batch, seed, log_every, save_every, max_to_keep;
    int shuffle, allow_nonfinite;
    double *hparams; /* one value per hyperparameter */
} train_options;

static int unknown_hparam(const tfc_model *m, const char *option, const char *name, int len) {
    char known[512] = "";
    size_t used = 0;
    for (int i = 0; i < m->n_hyperparameters && used < sizeof(known); ++i)
        used += (size_t)snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                                 m->hyperparameters[i].name);
    return tfc_driver_error(PROG, "%s: model '%s' declares no hyperparameter '%.*s' "
                            "(declared: %s)", option, m->name, len, name,
                            m->n_hyperparameters ? known : "none");
}

/* 0: run, 1: failed (message printed), 2: --help printed. */
static int parse_options(const tfc_model *m, int argc, char **argv, train_options *o) {
    o->batch = -1;
    o->steps = -1;
    o->log_every = 100;
    o->save_every = 1000;
    o->max_to_keep = 5;
    o->shuffle = 1;
    for (int i = 0; i < m->n_hyperparameters; ++i)
        o->hparams[i] = m->hyperparameters[i].default_value;
    for (int i = 1; i < argc; ++i) {
        const char *v = NULL;
        int r;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(m, stdout);
            return 2;
        }
        if (strcmp(argv[i], "--no-shuffle") == 0) {
            o->shuffle = 0;
            continue;
        }
        if (strcmp(argv[i], "--allow-nonfinite") == 0) {
            o->allow_nonfinite = 1;
            continue;
        }
#define OPTION(name) ((r = tfc_driver_option(PROG, argc, argv, &i, name, &v)) != 0)
        if (OPTION("--data")) {
            o->data = v;
        } else if (OPTION("--checkpoint-dir")) {
            o->dir = v;
        } else if (OPTION("--logdir")) {
            o->logdir = v;
        } else if (OPTION("--steps")) {
            if (r < 0 || tfc_driver_int(PROG, "--steps", v, 0, &o->steps)) return 1;
        } else if (OPTION("--batch")) {
            if (r < 0 || tfc_driver_int(PROG, "--batch", v, 1, &o->batch)) return 1;
        } else if (OPTION("--seed")) {
            if (r < 0 || tfc_driver_int(PROG, "--seed", v, 0, &o->seed)) return 1;
        } else if (OPTION("--log-every")) {
            if (r < 0 || tfc_driver_int(PROG, "--log-every", v, 0, &o->log_every)) return 1;
        } else if (OPTION("--save-every")) {
            if (r < 0 || tfc_driver_int(PROG, "--save-every", v, 0, &o->save_every)) return 1;
        } else if (OPTION("--max-to-keep")) {
            if (r < 0 || tfc_driver_int(PROG, "--max-to-keep", v, 0, &o->max_to_keep)) return 1;
        } else if (OPTION("--threads")) {
            if (r < 0 || tfc_driver_threads(PROG, v)) return 1;
        } else if (OPTION("--lr")) {
            if (r < 0) return 1;
            static const char lr[] = "learning_rate";
            int h = tfc_model_find_hparam(m, lr, sizeof(lr) - 1);
            if (h < 0) return unknown_hparam(m, "--lr", lr, (int)sizeof(lr) - 1);
            if (tfc_driver_double(PROG, "--lr", v, &o->hparams[h])) return 1;
        } else if (OPTION("--hparam")) {
            if (r < 0) return 1;
            const char *eq = strchr(v, '=');
            if (eq == NULL) return tfc_driver_error(PROG, "--hparam %s: expected NAME=VALUE", v);
            int h = tfc_model_find_hparam(m, v, (size_t)(eq - v));
            if (h < 0) return unknown_hparam(m, "--hparam", v, (int)(eq - v));
            if (tfc_driver_double(PROG, "--hparam", eq + 1, &o->hparams[h])) return 1;
        } else {
            if (r < 0) return 1;
            tfc_driver_error(PROG, "unknown argument '%s' (see train --help)", argv[i]);
            return 1;
        }
#undef OPTION
        if (r < 0) return 1;
    }
    if (o->data == NULL || o->dir == NULL || o->steps < 0)
        return tfc_driver_error(PROG, "--data, --steps and --checkpoint-dir are required "
                                "(see train --help)");
    if (o->batch >= 0 && o->batch != m->batch)
        return tfc_driver_error(PROG, "--batch %" PRId64 ": this executable was compiled for "
                                "batch %" PRId64 "; recompile with `tfc compile --batch %"
                                PRId64 "` to train with batch %" PRId64, o->batch, m->batch,
                                o->batch, o->batch);
    return 0;
}

/* Write `value` to a scalar buffer of element type `dtype`; -1 if the type cannot hold it. */
static int set_scalar(void *buf, int dtype, double value) {
    int integral = value == floor(value);
    switch (dtype) {
    case TFC_DT_F32: *(float *)buf = (float)value; return 0;
    case TFC_DT_F64: *(double *)buf = value; return 0;
    case TFC_DT_I32:
        if (!integral || value < INT32_MIN || value > INT32_MAX) return -1;
        *(int32_t *)buf = (int32_t)value;
        return 0;
    case TFC_DT_I64:
        if (!integral || value < -9223372036854775808.0 || value >= 9223372036854775808.0)
            return -1;
        *(int64_t *)buf = (int64_t)value;
        return 0;
    default: *(unsigned char *)buf = value != 0.0; return 0;
    }
}

static int64_t read_step(const tfc_model *m, const tfc_model_state *s) {
    const tfc_state_spec *st = &m->state[m->global_step];
    return (int64_t)tfc_driver_element(s->buffers[m->global_step], st->dtype, 0);
}

typedef struct {
    tfc_dataset data;
    tfc_model_state state;
    tfc_batcher batcher;
    int64_t *rows;
    void **inputs;
    void **outputs;
    double *hparams;
    tfc_events events; /* file == NULL without --logdir */
} train_run;

static void train_run_free(const tfc_program *p, train_run *t) {
    if (t->inputs != NULL)
        for (int i = 0; i < p->n_inputs; ++i) free(t->inputs[i]);
    if (t->outputs != NULL)
        for (int i = 0; i < p->n_outputs; ++i) free(t->outputs[i]);
    free(t->inputs);
    free(t->outputs);
    free(t->rows);
    free(t->hparams);
    tfc_events_close(&t->events);
    tfc_batcher_free(&t->batcher);
    tfc_model_state_free(&t->state);
    tfc_dataset_free(&t->data);
}

static int save(train_run *t, const train_options *o, int64_t step, tfc_error *err) {
    char prefix[4096];
    int keep = o->max_to_keep > INT_MAX ? INT_MAX : (int)o->max_to_keep;
    int status = tfc_model_save(&t->state, o->dir, step, keep, prefix,
                                sizeof(prefix), err);
    if (status != TFC_OK) return tfc_driver_error(PROG, "%s", err->msg);
    printf("saved %s\n", prefix);
    fflush(stdout);
    return 0;
}

/* The scalars of one progress line to the event file: the loss, the rates, the learning rate,
 * and each tf.summary.scalar the train step computed. */
static int write_summaries(const tfc_model *m, const train_options *o, train_run *t,
                           int64_t step, double loss, double examples_per_sec, tfc_error *err) {
    enum { FIXED = 4 };
    const char *tags[FIXED + 64];
    float values[FIXED + 64];
    int n = 0;
    tags[n] = "loss", values[n++] = (float)loss;
    tags[n] = "examples/sec", values[n++] = (float)examples_per_sec;
    tags[n] = "global_step/sec", values[n++] = (float)(examples_per_sec / (double)m->batch);
    int lr = tfc_model_find_hparam(m, "learning_rate", 13);
    if (lr >= 0) tags[n] = "learning_rate", values[n++] = (float)o->hparams[lr];
    const tfc_program *p = m->train;
    for (int i = 0; i < m->n_summaries && n < FIXED + 64; ++i) {
        const tfc_summary_scalar *s = &m->summaries[i];
        tags[n] = s->tag;
        values[n++] = (float)tfc_driver_element(t->outputs[s->output], p->outputs[s->output].dtype,
                                                0);
    }
    if (tfc_events_scalars(&t->events, step, n, tags, values, err) != TFC_OK ||
        tfc_events_flush(&t->events, err) != TFC_OK)
        return tfc_driver_error(PROG, "%s", err->msg);
    return 0;
}

static int train(const tfc_model *m, const train_options *o, train_run *t) {
    const tfc_program *p = m->train;
    char msg[4096];
    tfc_error err = {msg, sizeof(msg), NULL};
    msg[0] = '\0';

    if (tfc_dataset_load(&t->data, o->data, &err) != TFC_OK)
        return tfc_driver_error(PROG, "%s", msg);
    const tfc_tensor_spec *fin = &p->inputs[m->train_features];
    const tfc_tensor_spec *lin = m->train_labels >= 0 ? &p->inputs[m->train_labels] : NULL;
    int64_t n_features = tfc_tensor_example_size(fin);
    int64_t n_labels = lin != NULL ? tfc_tensor_example_size(lin) : 0;
    if (t->data.cols != n_features + n_labels)
        return tfc_driver_error(PROG, "%s has %" PRId64 " columns; model '%s' takes %" PRId64
                                " feature columns%s: expected %" PRId64, o->data, t->data.cols,
                                m->name, n_features,
                                n_labels == 1 ? " and the label (the last)"
                                : n_labels > 1 ? " and the label columns (the last)" : "",
                                n_features + n_labels);
    if ((!o->allow_nonfinite && tfc_dataset_check_finite(&t->data, 0, t->data.cols, &err)) ||
        (lin != NULL && m->label_classes > 0 &&
         tfc_dataset_check_labels(&t->data, n_features, n_labels, m->label_classes, &err)))
        return tfc_driver_error(PROG, "%s", msg);

    if (tfc_model_state_init(&t->state, m, (uint64_t)o->seed, &err) != TFC_OK)
        return tfc_driver_error(PROG, "%s", msg);
    if (tfc_driver_mkdirs(o->dir, msg, sizeof(msg)) != 0)
        return tfc_driver_error(PROG, "--checkpoint-dir: %s", msg);
    int keep = o->max_to_keep > INT_MAX ? INT_MAX : (int)o->max_to_keep, removed = 0;
    if (tfc_model_clean_checkpoints(o->dir, keep, &removed, &err) != TFC_OK)
        return tfc_driver_error(PROG, "--checkpoint-dir: %s", msg);
    if (removed > 0) printf("removed %d leftover file(s) of interrupted saves from %s\n", removed,
                            o->dir);
    if (o->logdir != NULL && tfc_events_open(&t->events, o->logdir, &err) != TFC_OK)
        return tfc_driver_error(PROG, "%s", msg);
    /* initializers run even before a restore: variables no checkpoint holds need them */
    if (tfc_model_run(&t->state, m->init, NULL, NULL, &err) != TFC_OK)
        return tfc_driver_error(PROG, "initializing the variables: %s%s%s%s", msg,
                                err.node ? " (node " : "", err.node ? err.node : "",
                                err.node ? ")" : "");
    int64_t step = 0;
    int restored = 0;
    char state_file[4096];
    snprintf(state_file, sizeof(state_file), "%s/checkpoint", o->dir);
    if (tfc_driver_exists(state_file)) {
        char path[4096];
        if (tfc_model_restore(&t->state, o->dir, NULL, path, sizeof(path), &err) != TFC_OK)
            return tfc_driver_error(PROG, "resuming from %s: %s", o->dir, msg);
        step = m->global_step >= 0 ? read_step(m, &t->state) : tfc_model_checkpoint_step(path);
        if (step < 0) step = 0;
        restored = 1;
        printf("restored %s (global_step %" PRId64 ")\n", path, step);
    }
    if (step >= o->steps) {
        if (restored) {
            printf("global_step %" PRId64 " has reached --steps %" PRId64 ": nothing to do\n",
                   step, o->steps);
            return 0;
        }
        return save(t, o, step, &err); /* --steps 0: the initial values */
    }

    t->rows = malloc((size_t)m->batch * sizeof(int64_t));
    t->inputs = calloc((size_t)p->n_inputs, sizeof(void *));
    t->outputs = calloc((size_t)(p->n_outputs > 0 ? p->n_outputs : 1), sizeof(void *));
    if (t->rows == NULL || t->inputs == NULL || t->outputs == NULL)
        return tfc_driver_error(PROG, "out of memory");
    for (int i = 0; i < p->n_inputs; ++i)
        if ((t->inputs[i] = tfc_aligned_alloc(p->inputs[i].nbytes)) == NULL)
            return tfc_driver_error(PROG, "out of memory");
    for (int i = 0; i < p->n_outputs; ++i)
        if ((t->outputs[i] = tfc_aligned_alloc(p->outputs[i].nbytes)) == NULL)
            return tfc_driver_error(PROG, "out of memory");
    for (int i = 0; i < m->n_hyperparameters; ++i) {
        const tfc_hyperparameter *h = &m->hyperparameters[i];
        if (set_scalar(t->inputs[h->input], p->inputs[h->input].dtype, o->hparams[i]) != 0)
            return tfc_driver_error(PROG, "hyperparameter %s: %g is not an %s", h->name,
                                    o->hparams[i], tfc_dtype_name(p->inputs[h->input].dtype));
    }
    /* every row converts to the inputs' types: a bad value stops the run before it starts */
    for (int64_t first = 0; first < t->data.rows; first += m->batch) {
        int64_t n = t->data.rows - first < m->batch ? t->data.rows - first : m->batch;
        for (int64_t i = 0; i < n; ++i) t->rows[i] = first + i;
        if (tfc_dataset_gather(&t->data, t->rows, n, 0, n_features, fin->dtype,
                               t->inputs[m->train_features], &err) != TFC_OK ||
            (lin != NULL &&
             tfc_dataset_gather(&t->data, t->rows, n, n_features, n_labels, lin->dtype,
                                t->inputs[m->train_labels], &err) != TFC_OK))
            return tfc_driver_error(PROG, "%s", msg);
    }
    /* a resumed run continues the example stream where the checkpointed one stood */
    if (tfc_batcher_init(&t->batcher, t->data.rows, m->batch, (uint64_t)o->seed, o->shuffle,
                         step * m->batch, &err) != TFC_OK)
        return tfc_driver_error(PROG, "%s", msg);

    printf("training model '%s' on %s: %" PRId64 " examples, batch %" PRId64
           ", from step %" PRId64 " to %" PRId64 "\n", m->name, o->data, t->data.rows, m->batch,
           step, o->steps);
    fflush(stdout);
    const tfc_tensor_spec *loss_spec = &p->outputs[m->train_loss];
    double t_log = tfc_driver_seconds();
    int64_t logged_step = step, saved_step = restored ? step : -1;
    while (step < o->steps) {
        tfc_batcher_next(&t->batcher, t->rows);
        if (tfc_dataset_gather(&t->data, t->rows, m->batch, 0, n_features, fin->dtype,
                               t->inputs[m->train_features], &err) != TFC_OK ||
            (lin != NULL &&
             tfc_dataset_gather(&t->data, t->rows, m->batch, n_features, n_labels, lin->dtype,
                                t->inputs[m->train_labels], &err) != TFC_OK))
            return tfc_driver_error(PROG, "%s", msg);
        int rc = tfc_model_run(&t->state, p, (const void *const *)t->inputs, t->outputs, &err);
        if (rc != TFC_OK)
            return tfc_driver_error(PROG, "step %" PRId64 ": %s%s%s%s", step + 1, msg,
                                    err.node ? " (node " : "", err.node ? err.node : "",
                                    err.node ? ")" : "");
        int64_t next = m->global_step >= 0 ? read_step(m, &t->state) : step + 1;
        if (next <= step)
            return tfc_driver_error(PROG, "the training step did not advance the global step "
                                    "(%" PRId64 ")", step);
        step = next;
        if (o->log_every > 0 && (step % o->log_every == 0 || step >= o->steps)) {
            double now = tfc_driver_seconds();
            double rate = (double)(step - logged_step) * (double)m->batch /
                          (now - t_log > 1e-9 ? now - t_log : 1e-9);
            double loss = tfc_driver_element(t->outputs[m->train_loss], loss_spec->dtype, 0);
            printf("step %" PRId64 "  loss %.6g  %.0f examples/s\n", step, loss, rate);
            fflush(stdout);
            if (t->events.file != NULL && write_summaries(m, o, t, step, loss, rate, &err))
                return 1;
            t_log = now;
            logged_step = step;
        }
        if (o->save_every > 0 && step % o->save_every == 0) {
            if (save(t, o, step, &err)) return 1;
            saved_step = step;
        }
    }
    if (saved_step != step && save(t, o, step, &err)) return 1;
    return 0;
}

int tfc_train_main(const tfc_model *m, int argc, char **argv) {
    if (m->train == NULL || m->init == NULL)
        return tfc_driver_error(PROG, "model '%s' has no train signature", m->name);
    train_options o;
    memset(&o, 0, sizeof(o));
    train_run t;
    memset(&t, 0, sizeof(t));
    t.hparams = calloc((size_t)(m->n_hyperparameters + 1), sizeof(double));
    if (t.hparams == NULL) return tfc_driver_error(PROG, "out of memory");
    o.hparams = t.hparams;
    int status = parse_options(m, argc, argv, &o);
    if (status == 0) status = train(m, &o, &t);
    else if (status == 2) status = 0;
    train_run_free(m->train, &t);
    return status;
}
