/* A model compiled for distributed data-parallel training (tfc compile --cluster): the
 * programs of each task role and the tensors that cross tasks in one step.
 *
 * The worker's tfc_model has one program, `train`: the worker step (inputs: features, labels,
 * hyperparameters, then the values it receives; outputs: the loss, then what it sends). Each
 * ps task's tfc_model holds that task's variables, with `init` (their initializers), `train`
 * the apply program (inputs: what it receives: gradients, values of other ps tasks) and
 * `predict` the serve program (outputs: the values it sends). A link is one rendezvous key:
 * an output of one task's program that is an input of another's. Every task runs the one
 * executable `train`; tfc_dist_main picks the role from --job/--task, TF_CONFIG or the rank
 * that mpirun / SLURM set (see `train --help`). */
#ifndef TFC_DIST_H
#define TFC_DIST_H

#include <stdint.h>

#include "tfc_model.h"

typedef struct {
    const char *key; /* the rendezvous key of the partition pass */
    int src;         /* -1: output of the worker step; k >= 0: output of ps k's serve */
    int src_index;
    int dst;         /* -1: input of the worker step; k >= 0: input of ps k's apply */
    int dst_index;
} tfc_dist_link;

typedef struct {
    const char *name;
    int64_t batch; /* per worker: a synchronous step trains on batch * replicas examples */
    const tfc_model *worker;
    int n_ps;
    const tfc_model *const *ps;
    int n_links;
    const tfc_dist_link *links;
    int global_step_ps; /* the ps task whose apply advances the global step, -1: none */
    /* the cluster given to tfc compile: the default when none is given at run time */
    int n_ps_hosts;
    const char *const *ps_hosts;
    int n_worker_hosts;
    const char *const *worker_hosts;
} tfc_dist_model;

/* The `train` executable of a distributed model; returns the process exit status. */
int tfc_dist_main(const tfc_dist_model *m, int argc, char **argv);

#endif /* TFC_DIST_H */
