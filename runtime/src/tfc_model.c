/* A compiled model's state: allocation, running its programs, checkpoints (see tfc_model.h). */
#define _POSIX_C_SOURCE 200809L

#include "tfc_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MODEL_ALIGN 64 /* what generated kernels assume of every buffer */
#define CHECKPOINT_BASENAME "model.ckpt" /* tf.train.Saver's usual name */

void *tfc_aligned_alloc(int64_t nbytes) {
    if (nbytes < 0 || (uint64_t)nbytes > SIZE_MAX - MODEL_ALIGN) return NULL;
    size_t size = ((size_t)nbytes + MODEL_ALIGN - 1) / MODEL_ALIGN * MODEL_ALIGN;
    if (size == 0) size = MODEL_ALIGN;
    void *p = aligned_alloc(MODEL_ALIGN, size);
    if (p != NULL) memset(p, 0, size);
    return p;
}

int64_t tfc_tensor_example_size(const tfc_tensor_spec *t) {
    int64_t n = 1;
    for (int i = 1; i < t->rank; ++i) n *= t->dims[i];
    return n;
}

int tfc_model_find_hparam(const tfc_model *m, const char *name, size_t len) {
    for (int i = 0; i < m->n_hyperparameters; ++i)
        if (strlen(m->hyperparameters[i].name) == len &&
            strncmp(m->hyperparameters[i].name, name, len) == 0)
            return i;
    return -1;
}

static uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15u;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static const tfc_program *model_program(const tfc_model *m, int k) {
    const tfc_program *all[4] = {m->init, m->train, m->predict, m->predict_one};
    return all[k];
}

int tfc_model_state_init(tfc_model_state *s, const tfc_model *m, uint64_t fallback_seed,
                         tfc_error *err) {
    memset(s, 0, sizeof(*s));
    s->model = m;
    int max_slots = 1;
    for (int k = 0; k < 4; ++k) {
        const tfc_program *p = model_program(m, k);
        if (p == NULL) continue;
        if (p->arena_bytes > s->arena_bytes) s->arena_bytes = p->arena_bytes;
        if (p->n_slots > max_slots) max_slots = p->n_slots;
    }
    s->buffers = calloc((size_t)(m->n_state > 0 ? m->n_state : 1), sizeof(void *));
    s->bound = calloc((size_t)max_slots, sizeof(void *));
    s->arena = tfc_aligned_alloc(s->arena_bytes);
    if (s->buffers == NULL || s->bound == NULL || s->arena == NULL) goto oom;
    for (int i = 0; i < m->n_state; ++i) {
        const tfc_state_spec *st = &m->state[i];
        s->buffers[i] = tfc_aligned_alloc(st->nbytes);
        if (s->buffers[i] == NULL) goto oom;
        if (st->kind == TFC_STATE_RANDOM) {
            uint64_t *rng = s->buffers[i];
            rng[0] = st->seed;
            rng[1] = st->seed2;
            if (st->seed == 0 && st->seed2 == 0) {
                /* a session draws fresh seeds here; a driver derives them from its --seed */
                rng[0] = mix64(fallback_seed ^ mix64((uint64_t)i));
                rng[1] = mix64(rng[0]);
            }
            rng[2] = 0;
        }
    }
    return TFC_OK;
oom:
    tfc_model_state_free(s);
    return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory for the state of model %s",
                      m->name);
}

void tfc_model_state_free(tfc_model_state *s) {
    if (s == NULL) return;
    if (s->buffers != NULL && s->model != NULL)
        for (int i = 0; i < s->model->n_state; ++i) free(s->buffers[i]);
    free(s->buffers);
    free(s->bound);
    free(s->arena);
    memset(s, 0, sizeof(*s));
}

int tfc_model_run(tfc_model_state *s, const tfc_program *program, const void *const *inputs,
                  void *const *outputs, tfc_error *err) {
    for (int i = 0; i < program->n_slots; ++i) s->bound[i] = s->buffers[program->slots[i]];
    if (err != NULL) err->node = NULL;
    return program->run(s->bound, inputs, outputs, program->consts, s->arena, err);
}

static void checkpoint_tensor(const tfc_state_spec *st, void *data, tfc_checkpoint_tensor *t) {
    memset(t, 0, sizeof(*t));
    t->name = st->name;
    t->dtype = st->dtype;
    t->rank = st->rank;
    for (int d = 0; d < st->rank && d < TFC_CHECKPOINT_MAX_RANK; ++d) t->dims[d] = st->dims[d];
    t->data = data;
    t->nbytes = st->nbytes;
}

int tfc_model_save(tfc_model_state *s, const char *dir, int64_t step, int max_to_keep,
                   char *prefix, size_t cap, tfc_error *err) {
    const tfc_model *m = s->model;
    tfc_checkpoint_tensor *ts = calloc((size_t)(m->n_state > 0 ? m->n_state : 1), sizeof(*ts));
    if (ts == NULL) return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory");
    int n = 0;
    for (int i = 0; i < m->n_state; ++i)
        if (m->state[i].saved) checkpoint_tensor(&m->state[i], s->buffers[i], &ts[n++]);
    int status = tfc_checkpoint_save(dir, CHECKPOINT_BASENAME, step, ts, n, max_to_keep, prefix,
                                     cap, err);
    free(ts);
    return status;
}

int tfc_model_clean_checkpoints(const char *dir, int max_to_keep, int *removed, tfc_error *err) {
    return tfc_checkpoint_clean(dir, CHECKPOINT_BASENAME, max_to_keep, removed, err);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The .safetensors file of `checkpoint` (a directory, a prefix or the file) into `path`. */
static int checkpoint_file(const char *checkpoint, char *path, size_t cap, tfc_error *err) {
    struct stat sb;
    char prefix[4096];
    const char *base = checkpoint;
    if (stat(checkpoint, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        int status = tfc_checkpoint_latest(checkpoint, prefix, sizeof(prefix), err);
        if (status != TFC_OK) return status;
        base = prefix;
    }
    int n = snprintf(path, cap, "%s%s", base, ends_with(base, ".safetensors") ? ""
                                                                                : ".safetensors");
    if (n < 0 || (size_t)n >= cap)
        return tfc_error_setf(err, TFC_ERR_OUT_OF_RANGE, "checkpoint path %s is too long", base);
    if (stat(path, &sb) != 0)
        return tfc_error_setf(err, TFC_ERR_NOT_FOUND, "no checkpoint at %s (%s does not exist)",
                          checkpoint, path);
    return TFC_OK;
}

int tfc_model_restore(tfc_model_state *s, const char *checkpoint, const tfc_program *program,
                      char *path, size_t cap, tfc_error *err) {
    const tfc_model *m = s->model;
    char file[4096];
    int status = checkpoint_file(checkpoint, file, sizeof(file), err);
    if (status != TFC_OK) return status;
    tfc_checkpoint_tensor *ts = calloc((size_t)(m->n_state > 0 ? m->n_state : 1), sizeof(*ts));
    if (ts == NULL) return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory");
    int n = 0;
    if (program != NULL) {
        for (int k = 0; k < program->n_slots; ++k) {
            int i = program->slots[k];
            if (m->state[i].saved) checkpoint_tensor(&m->state[i], s->buffers[i], &ts[n++]);
        }
    } else {
        for (int i = 0; i < m->n_state; ++i)
            if (m->state[i].saved) checkpoint_tensor(&m->state[i], s->buffers[i], &ts[n++]);
    }
    status = tfc_checkpoint_read(file, ts, n, err);
    free(ts);
    if (status == TFC_OK && path != NULL) snprintf(path, cap, "%s", file);
    return status;
}

int64_t tfc_model_checkpoint_step(const char *path) {
    char value[64], msg[256];
    tfc_error err = {msg, sizeof(msg), NULL};
    if (tfc_checkpoint_read_metadata(path, "global_step", value, sizeof(value), &err) != TFC_OK)
        return -1;
    char *end = NULL;
    long long step = strtoll(value, &end, 10);
    return (end != value && *end == '\0' && step >= 0) ? step : -1;
}
