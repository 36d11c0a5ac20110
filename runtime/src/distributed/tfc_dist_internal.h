/* Internal to the distributed `train` driver (runtime/src/distributed/): options, the task context,
 * helpers both roles use. See tfc_dist_main.c for the protocol. */
#ifndef TFC_DIST_INTERNAL_H
#define TFC_DIST_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "tfc_dist.h"
#include "tfc_transport.h"

#define TFC_DIST_PROG "train"

typedef struct {
    char **ps_hosts, **worker_hosts;
    int n_ps, n_workers;
    const char *job;
    int64_t task;
    const char *data, *dir, *bind, *wire;
    int64_t steps, seed, log_every, save_every, max_to_keep, replicas, timeout_ms, give_up_ms;
    int64_t idle_exit_ms; /* a ps that hears from no worker this long exits; 0: never */
    int sync, shuffle, insecure, allow_nonfinite;
    int feed_fd, result_fd; /* a worker fed through pipes (--feed-fd/--result-fd), else -1 */
    double *hparams;
    char *tf_config_job;
    int64_t tf_config_task;
} dist_options;
/* Parse argv, the cluster (--cluster, --ps-hosts/--worker-hosts, TF_CONFIG, compiled-in) and
 * the task (--job/--task, TF_CONFIG, mpirun/SLURM rank). 0: run, 1: failed (message printed),
 * 2: --help printed. */
int tfc_dist_parse_options(const tfc_dist_model *m, int argc, char **argv, dist_options *o);
void tfc_dist_free_hosts(char **list, int n);

typedef struct {
    const tfc_dist_model *m;
    dist_options *o;
    int task;
    tfc_transport *t;
    char name[64];
    int64_t hello_step; /* hellos are numbered: the same (key, step) is sent only once */
} task_ctx;

/* This task's transport, listening on the port of `address`. 0, or 1 with a message printed. */
int tfc_dist_make_transport(task_ctx *c, const char *address, tfc_error *err);
/* A transport tensor over `data` with the shape and dtype of `spec`. */
void tfc_dist_tensor(const tfc_tensor_spec *spec, void *data, tfc_transport_tensor *t);
/* Connect (or reuse the connection) to `address` and send one tensor, trying to connect for
 * at most within_ms (0: --give-up-ms). */
int tfc_dist_send(task_ctx *c, const char *address, const char *key, int64_t step,
                  const tfc_transport_tensor *tensor, int64_t within_ms, tfc_error *err);
/* One aligned buffer per spec (NULL when out of memory); freed with tfc_dist_free_buffers. */
void **tfc_dist_alloc_buffers(const tfc_tensor_spec *specs, int n);
void tfc_dist_free_buffers(void **bufs, int n);
/* The value of a worker's hello that says it is done: the ps stops waiting for it. */
#define TFC_DIST_HELLO_DONE (-2)

/* The key a worker's tensor travels under: "KEY@wI". */
void tfc_dist_worker_key(char *buf, size_t cap, const char *key, int w);

int tfc_dist_ps_main(task_ctx *c);
int tfc_dist_worker_main(task_ctx *c);

#endif /* TFC_DIST_INTERNAL_H */
