/* A compiled model as standalone executables and embedders see it: its state (variables and
 * random-number streams), its programs, and what their inputs and outputs are for.
 *
 * `tfc compile` generates one `tfc_model` per model (OUTDIR/model.c). Programs are the
 * functions render_program emits; each binds the model's state through its own slot list.
 * tfc_model_state owns that state (one buffer per state entry, 64-byte aligned, as the
 * generated kernels assume) and one arena big enough for every program: programs run one at
 * a time and allocate nothing. The drivers tfc_train_main and tfc_predict_main are the
 * `train` and `predict` executables; an embedder calls tfc_model_run itself. */
#ifndef TFC_MODEL_H
#define TFC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "tfc_data.h"
#include "tfc_runtime.h"

/* The entry point render_program generates for every program: <prefix>run. */
typedef int (*tfc_program_fn)(void *const *state, const void *const *inputs,
                              void *const *outputs, const void *const *consts, void *arena,
                              tfc_error *err);

enum { TFC_STATE_VARIABLE = 0, TFC_STATE_RANDOM = 1 };

typedef struct {
    const char *name;     /* a variable's op name (its checkpoint key), or a random op's name */
    int kind;             /* TFC_STATE_VARIABLE or TFC_STATE_RANDOM */
    int dtype;            /* TFC_DT_*; a random stream is uint64[3] {seed, seed2, samples used} */
    int rank;
    const int64_t *dims;
    int64_t nbytes;
    int saved;            /* a global variable: written to checkpoints and restored from them */
    uint64_t seed, seed2; /* a random stream's op seeds; both 0: unseeded (see state_init) */
} tfc_state_spec;

typedef struct {
    const char *name; /* inputs: the placeholder's tensor name; outputs: the signature's key */
    int dtype;
    int rank;
    const int64_t *dims;
    int64_t nbytes;
} tfc_tensor_spec;

typedef struct {
    const char *name;
    tfc_program_fn run;
    int64_t arena_bytes;
    int n_slots;
    const int *slots; /* the program's state pointers, as indices into the model's state */
    int n_inputs;
    const tfc_tensor_spec *inputs;
    int n_outputs;
    const tfc_tensor_spec *outputs;
    int n_consts;
    const void *const *consts; /* constants too large to compile into the program */
} tfc_program;

/* A scalar input of the train program that has a default: the learning rate, say. */
typedef struct {
    const char *name;
    int input; /* index into the train program's inputs */
    double default_value;
} tfc_hyperparameter;

/* A tf.summary.scalar of the model: its tag, and the train output that computes its value. */
typedef struct {
    const char *tag;
    int output; /* index into the train program's outputs */
} tfc_summary_scalar;

typedef struct {
    const char *name;
    int64_t batch; /* the batch the train and predict programs are compiled for */
    int n_state;
    const tfc_state_spec *state;
    const tfc_program *init;        /* the variables' initializers; NULL without training */
    const tfc_program *train;       /* one training step; NULL for a predict-only model */
    const tfc_program *predict;     /* predictions for `batch` examples; NULL if none */
    const tfc_program *predict_one; /* the same for one example; NULL: the tail is padded */
    int global_step;                /* state index of the global step the train step advances,
                                       -1: the driver counts steps itself */
    int train_features;             /* train inputs: the features, the labels (-1: none) */
    int train_labels;
    int train_loss; /* train output: the loss */
    int n_hyperparameters;
    const tfc_hyperparameter *hyperparameters;
    int n_summaries; /* the scalar summaries train --logdir writes beside the loss */
    const tfc_summary_scalar *summaries;
    int predict_features;   /* predict input: the features */
    int predict_classes;    /* predict output compared with a label column, -1: none */
    int predict_argmax;     /* 1: its class is the argmax of its last axis; 0: it is the class */
    int64_t label_classes;  /* labels are class ids in [0, label_classes), checked where the data
                               is read; 0: not class ids, or a count not known */
} tfc_model;

/* A zeroed buffer of `nbytes` (at least one) aligned as generated kernels assume; free() it. */
void *tfc_aligned_alloc(int64_t nbytes);

/* Elements per example of a batch-major tensor: the product of its dims after the first. */
int64_t tfc_tensor_example_size(const tfc_tensor_spec *t);

/* The index of the hyperparameter named by the `len` bytes at `name`, or -1. */
int tfc_model_find_hparam(const tfc_model *m, const char *name, size_t len);

typedef struct {
    const tfc_model *model;
    void **buffers;  /* one per state entry */
    void **bound;    /* scratch: a program's state pointers */
    void *arena;
    int64_t arena_bytes;
} tfc_model_state;

/* Allocate the state and the arena. Random streams start at {seed, seed2, 0} as in a Python
 * session; unseeded ones (both seeds 0) get seeds derived from `fallback_seed`, where a
 * session would draw fresh ones. Variables are zero until a program or a restore sets them. */
int tfc_model_state_init(tfc_model_state *s, const tfc_model *m, uint64_t fallback_seed,
                         tfc_error *err);
void tfc_model_state_free(tfc_model_state *s);

/* Run `program` of the state's model on caller-owned input and output buffers. */
int tfc_model_run(tfc_model_state *s, const tfc_program *program, const void *const *inputs,
                  void *const *outputs, tfc_error *err);

/* Save the saved variables as checkpoint DIR/model.ckpt-STEP (tf.train.Saver's layout; step
 * < 0: no suffix), keeping the newest `max_to_keep` (0: all). The prefix goes to `prefix`. */
int tfc_model_save(tfc_model_state *s, const char *dir, int64_t step, int max_to_keep,
                   char *prefix, size_t cap, tfc_error *err);

/* Restore from `checkpoint`: a directory (its latest checkpoint), a checkpoint prefix or its
 * .safetensors file. With `program`, only the saved variables that program binds; otherwise
 * every saved variable. The checkpoint's file name goes to `path` (may be NULL). */
int tfc_model_restore(tfc_model_state *s, const char *checkpoint, const tfc_program *program,
                      char *path, size_t cap, tfc_error *err);

/* Before a run saves into `dir`: remove what saves killed midway left there (see
 * tfc_checkpoint_clean; the model's checkpoints are named model.ckpt-STEP). */
int tfc_model_clean_checkpoints(const char *dir, int max_to_keep, int *removed, tfc_error *err);

/* The global step of the checkpoint file `path` (its metadata), -1 when it has none. */
int64_t tfc_model_checkpoint_step(const char *path);

/* The standalone executables: `main` of OUTDIR/train and OUTDIR/predict calls these. They
 * print usage on --help, errors on stderr, and return the process exit status. */
int tfc_train_main(const tfc_model *m, int argc, char **argv);
int tfc_predict_main(const tfc_model *m, int argc, char **argv);

#endif /* TFC_MODEL_H */
