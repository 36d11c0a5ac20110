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
 * Gradients of another step than the ps's (from before a restart) are dropped.
 *
 * The end: a ps at --steps saves, sends every worker a stop and waits (at most --timeout-ms)
 * until each has said it is done, so a worker still sending gradients of the last step finds
 * the ps there. A worker's gradients never wait longer than --timeout-ms for a ps to accept a
 * connection: a ps that is gone is the wait for its values' business (hellos, --give-up-ms),
 * and a stop already received ends that wait at once. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tfc_driver.h"
#include "tfc_dist_internal.h"

static const char *const PROG = TFC_DIST_PROG;

/* The routes of this task: every key it receives and the task that sends it, with its
 * compiled size. A ps takes each worker's gradients ("KEY@wI") and hellos from that worker and
 * the values of other ps tasks from them; a worker takes values and control tensors from the
 * ps tasks. Keys and names are malloc'd; tfc_transport_create copies them. */
typedef struct {
    tfc_transport_route *routes;
    int n, cap;
    int oom;
} route_list;

static void add_route(route_list *r, const char *key, const char *peer, int64_t max_bytes) {
    if (r->oom) return;
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        tfc_transport_route *grown = realloc(r->routes, (size_t)cap * sizeof(*grown));
        if (grown == NULL) {
            r->oom = 1;
            return;
        }
        r->routes = grown;
        r->cap = cap;
    }
    size_t nk = strlen(key) + 1, np = strlen(peer) + 1;
    char *k = malloc(nk), *q = malloc(np);
    if (k == NULL || q == NULL) {
        free(k), free(q);
        r->oom = 1;
        return;
    }
    memcpy(k, key, nk), memcpy(q, peer, np);
    r->routes[r->n].key = k, r->routes[r->n].peer = q, r->routes[r->n].max_bytes = max_bytes;
    ++r->n;
}

static void free_routes(route_list *r) {
    for (int i = 0; i < r->n; ++i) free((void *)r->routes[i].key), free((void *)r->routes[i].peer);
    free(r->routes);
}

static void task_routes(const task_ctx *c, int ps, route_list *r) {
    const tfc_dist_model *m = c->m;
    char key[TFC_TRANSPORT_MAX_KEY + 1], peer[32];
    int64_t i64 = (int64_t)sizeof(int64_t);
    for (int i = 0; i < m->n_links; ++i) {
        const tfc_dist_link *l = &m->links[i];
        if (ps && l->dst == c->task && l->src == -1) { /* gradients, one key per worker */
            int64_t bytes = m->ps[c->task]->train->inputs[l->dst_index].nbytes;
            for (int w = 0; w < c->o->n_workers; ++w) {
                tfc_dist_worker_key(key, sizeof(key), l->key, w);
                snprintf(peer, sizeof(peer), "worker:%d", w);
                add_route(r, key, peer, bytes);
            }
        } else if (ps && l->dst == c->task && l->src >= 0) { /* another ps task's values */
            snprintf(peer, sizeof(peer), "ps:%d", l->src);
            add_route(r, l->key, peer, m->ps[c->task]->train->inputs[l->dst_index].nbytes);
        } else if (!ps && l->dst == -1) { /* a ps task's values */
            snprintf(peer, sizeof(peer), "ps:%d", l->src);
            add_route(r, l->key, peer, m->worker->train->inputs[l->dst_index].nbytes);
        }
    }
    if (ps) {
        for (int w = 0; w < c->o->n_workers; ++w) {
            snprintf(key, sizeof(key), "tfc:hello@w%d", w);
            snprintf(peer, sizeof(peer), "worker:%d", w);
            add_route(r, key, peer, i64);
        }
    } else {
        for (int k = 0; k < m->n_ps; ++k) {
            snprintf(key, sizeof(key), "tfc:ctl@ps%d", k);
            snprintf(peer, sizeof(peer), "ps:%d", k);
            add_route(r, key, peer, 2 * i64);
        }
    }
}

int tfc_dist_make_transport(task_ctx *c, const char *address, tfc_error *err) {
    const char *colon = strrchr(address, ':');
    if (colon == NULL)
        return tfc_driver_error(PROG, "bad address '%s': expected host:port", address);
    int ps = strcmp(c->o->job, "ps") == 0;
    route_list routes = {NULL, 0, 0, 0};
    task_routes(c, ps, &routes);
    if (routes.oom) {
        free_routes(&routes);
        return tfc_driver_error(PROG, "out of memory");
    }
    int tasks = c->o->n_ps + c->o->n_workers;
    tfc_transport_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.bind_host = c->o->bind;
    cfg.insecure = c->o->insecure;
    cfg.port = atoi(colon + 1);
    cfg.name = c->name;
    cfg.io_timeout_ms = c->o->timeout_ms * 2;
    cfg.connect_timeout_ms = c->o->give_up_ms;
    cfg.routes = routes.routes;
    cfg.n_routes = routes.n;
    /* a few steps of every key may wait (a restarted ps resends; hellos repeat); a peer has one
     * connection to this task, a second while a restart replaces it */
    cfg.keep_steps = 8;
    cfg.max_connections_per_peer = 2;
    cfg.max_connections = 2 * tasks + 8;
    if (c->o->wire != NULL) {
        if (strcmp(c->o->wire, "float16") == 0) cfg.wire_dtype = TFC_DTYPE_F16;
        else if (strcmp(c->o->wire, "bfloat16") == 0) cfg.wire_dtype = TFC_DTYPE_BF16;
        else {
            free_routes(&routes);
            return tfc_driver_error(PROG, "--wire-dtype %s: float16 or bfloat16", c->o->wire);
        }
    }
    int rc = tfc_transport_create(&cfg, &c->t, err);
    free_routes(&routes);
    if (rc != TFC_OK)
        return tfc_driver_error(PROG, "%s: listening on %s: %s", c->name, address, err->msg);
    const char *token = getenv("TFC_CLUSTER_TOKEN");
    if (token == NULL || token[0] == '\0') {
        fprintf(stderr, "%s: note: no TFC_CLUSTER_TOKEN: any process that reaches %s can pose "
                "as a task of this cluster (tfc launch sets a token for its tasks)\n", c->name,
                address);
        fflush(stderr);
    }
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
                   const tfc_transport_tensor *tensor, int64_t within_ms, tfc_error *err) {
    int peer;
    int rc = tfc_transport_connect_within(c->t, address, within_ms, &peer, err);
    if (rc == TFC_OK) rc = tfc_transport_send_within(c->t, peer, key, step, tensor, within_ms, err);
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
