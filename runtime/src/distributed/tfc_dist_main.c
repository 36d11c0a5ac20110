/* The `train` executable of a distributed model (tfc_dist.h): one binary for every task.
 *
 * A ps task holds its variables. Each step it runs `serve` and sends the values to every
 * worker (with a control tensor {step, stop} under "tfc:ctl@psK") and to the ps tasks that
 * read them, then receives what its `apply` needs. Synchronous: it waits for the gradients of
 * --replicas-to-aggregate workers at this step (others' late gradients are dropped), averages
 * them and applies one update. Asynchronous: it applies each worker's gradients as they come
 * and sends that worker the new values. A worker receives the values, runs the worker step on
 * its slice of the step's global batch and sends its gradients under "KEY@wI".
 *
 * Faults: every wait has a timeout after which the task logs what it waits for and sends a
 * hello ("tfc:hello@wI") so that a restarted ps serves it again; a restarted worker's hello
 * makes the ps resend the current values. A ps writes its variables to
 * --checkpoint-dir/ps-K (atomic safetensors) every --save-every steps and resumes from there.
 * Gradients of another step than the ps's (from before a restart) are dropped. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tfc_driver.h"
#include "tfc_dist_internal.h"

static const char *const PROG = TFC_DIST_PROG;

int tfc_dist_make_transport(task_ctx *c, const char *address, tfc_error *err) {
    const char *colon = strrchr(address, ':');
    if (colon == NULL)
        return tfc_driver_error(PROG, "bad address '%s': expected host:port", address);
    tfc_transport_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.bind_host = c->o->bind;
    cfg.port = atoi(colon + 1);
    cfg.name = c->name;
    cfg.io_timeout_ms = c->o->timeout_ms * 2;
    cfg.connect_timeout_ms = c->o->give_up_ms;
    if (c->o->wire != NULL) {
        if (strcmp(c->o->wire, "float16") == 0) cfg.wire_dtype = TFC_DTYPE_F16;
        else if (strcmp(c->o->wire, "bfloat16") == 0) cfg.wire_dtype = TFC_DTYPE_BF16;
        else return tfc_driver_error(PROG, "--wire-dtype %s: float16 or bfloat16", c->o->wire);
    }
    if (tfc_transport_create(&cfg, &c->t, err) != TFC_OK)
        return tfc_driver_error(PROG, "%s: listening on %s: %s", c->name, address, err->msg);
    return 0;
}

void tfc_dist_tensor(const tfc_tensor_spec *spec, void *data, tfc_transport_tensor *t) {
    memset(t, 0, sizeof(*t));
    t->dtype = spec->dtype;
    t->rank = spec->rank;
    for (int i = 0; i < spec->rank; ++i) t->dims[i] = spec->dims[i];
    t->data = data;
    t->nbytes = spec->nbytes;
}

int tfc_dist_send(task_ctx *c, const char *address, const char *key, int64_t step,
                   const tfc_transport_tensor *tensor, tfc_error *err) {
    int peer;
    int rc = tfc_transport_connect(c->t, address, &peer, err);
    if (rc == TFC_OK) rc = tfc_transport_send(c->t, peer, key, step, tensor, err);
    return rc;
}

void **tfc_dist_alloc_buffers(const tfc_tensor_spec *specs, int n) {
    void **bufs = calloc((size_t)(n > 0 ? n : 1), sizeof(void *));
    if (bufs == NULL) return NULL;
    for (int i = 0; i < n; ++i)
        if ((bufs[i] = tfc_aligned_alloc(specs[i].nbytes)) == NULL) return NULL;
    return bufs;
}

void tfc_dist_free_buffers(void **bufs, int n) {
    for (int i = 0; bufs != NULL && i < n; ++i) free(bufs[i]);
    free(bufs);
}

int tfc_dist_main(const tfc_dist_model *m, int argc, char **argv) {
    dist_options o;
    memset(&o, 0, sizeof(o));
    o.hparams = calloc((size_t)(m->worker->n_hyperparameters + 1), sizeof(double));
    if (o.hparams == NULL) return tfc_driver_error(PROG, "out of memory");
    int status = tfc_dist_parse_options(m, argc, argv, &o);
    if (status == 0) {
        task_ctx c;
        memset(&c, 0, sizeof(c));
        c.m = m;
        c.o = &o;
        c.task = (int)o.task;
        int ps = strcmp(o.job, "ps") == 0;
        snprintf(c.name, sizeof(c.name), "%s:%d", ps ? "ps" : "worker", c.task);
        char msg[1024];
        tfc_error err = {msg, sizeof(msg), NULL};
        msg[0] = '\0';
        const char *address = ps ? o.ps_hosts[c.task] : o.worker_hosts[c.task];
        status = tfc_dist_make_transport(&c, address, &err);
        if (status == 0) status = ps ? tfc_dist_ps_main(&c) : tfc_dist_worker_main(&c);
        tfc_transport_destroy(c.t);
    } else if (status == 2) {
        status = 0;
    }
    tfc_dist_free_hosts(o.ps_hosts, o.n_ps);
    tfc_dist_free_hosts(o.worker_hosts, o.n_workers);
    free(o.tf_config_job);
    free(o.hparams);
    return status;
}
