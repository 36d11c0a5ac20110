/* A worker task of the distributed `train` (see tfc_dist_main.c for the protocol). */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include "../tfc_driver.h"
#include "tfc_dist_internal.h"

static const char *const PROG = TFC_DIST_PROG;

static int set_scalar(void *buf, int dtype, double value) {
    switch (dtype) {
    case TFC_DT_F32: *(float *)buf = (float)value; return 0;
    case TFC_DT_F64: *(double *)buf = value; return 0;
    case TFC_DT_I32: *(int32_t *)buf = (int32_t)value; return 0;
    case TFC_DT_I64: *(int64_t *)buf = (int64_t)value; return 0;
    default: *(unsigned char *)buf = value != 0.0; return 0;
    }
}

static int send_hello(task_ctx *c, int k, int64_t last, int64_t within_ms, tfc_error *err) {
    tfc_tensor_spec hs = {"hello", TFC_DT_I64, 0, NULL, 8};
    char key[64];
    snprintf(key, sizeof(key), "tfc:hello@w%d", c->task);
    tfc_transport_tensor t;
    tfc_dist_tensor(&hs, &last, &t);
    c->hello_step += 1;
    return tfc_dist_send(c, c->o->ps_hosts[k], key, c->hello_step, &t, within_ms, err);
}

/* Tell ps k the newest step this worker has all values of (-1: none): a ps that is further
 * sends it the current values. Only after a wait timed out: values may be on their way. */
static void hello(task_ctx *c, int k, int64_t last, tfc_error *err) {
    if (send_hello(c, k, last, 0, err) != TFC_OK) {
        fprintf(stderr, "%s: ps %d (%s): %s\n", c->name, k, c->o->ps_hosts[k], err->msg);
        fflush(stderr);
    }
}

/* After a stop: tell every ps that this worker is done, so that it stops waiting for it. A ps
 * that is gone already stopped waiting: nothing to report. */
static void say_done(task_ctx *c) {
    char msg[256];
    tfc_error err = {msg, sizeof(msg), NULL};
    for (int k = 0; k < c->m->n_ps; ++k)
        send_hello(c, k, TFC_DIST_HELLO_DONE, c->o->timeout_ms, &err);
}

/* Drop values of ps k that arrived without their control tensor: the ps sends them again. */
static void drain_values(task_ctx *c, int k, void **inputs) {
    const tfc_dist_model *m = c->m;
    const tfc_program *step = m->worker->train;
    char msg[256];
    tfc_error err = {msg, sizeof(msg), NULL};
    for (int i = 0; i < m->n_links; ++i) {
        const tfc_dist_link *l = &m->links[i];
        if (l->src != k || l->dst != -1) continue;
        tfc_transport_tensor v;
        tfc_dist_tensor(&step->inputs[l->dst_index], inputs[l->dst_index], &v);
        while (tfc_transport_recv(c->t, l->key, TFC_TRANSPORT_ANY_STEP, &v, 0, NULL, &err) ==
               TFC_OK) {
        }
    }
}

/* The newest control tensor of ps k: {step, stop}, with the values of its step in `inputs`.
 * Values of steps skipped meanwhile are not taken: the transport evicts them (it keeps the
 * last few steps of a key), so a worker that fell behind catches up at once. Values lost on
 * the way (a connection to a process that died) are asked for again. Returns 0, or 1 when
 * ps k answered nothing for --give-up-ms. */
static int worker_wait_ps(task_ctx *c, int k, void **inputs, int64_t ctl[2], int64_t last_seen,
                          tfc_error *err) {
    const tfc_dist_model *m = c->m;
    const tfc_program *step = m->worker->train;
    char key[64];
    snprintf(key, sizeof(key), "tfc:ctl@ps%d", k);
    int64_t two = 2;
    tfc_tensor_spec ctl_spec = {"ctl", TFC_DT_I64, 1, &two, 16};
    tfc_transport_tensor t;
    tfc_dist_tensor(&ctl_spec, ctl, &t);
    double since = tfc_driver_seconds(), waited = 0; /* wall time: hellos' connects count */
    for (;;) {
        int rc = tfc_transport_recv(c->t, key, TFC_TRANSPORT_ANY_STEP, &t, c->o->timeout_ms,
                                    NULL, err);
        if (rc != TFC_OK) {
            if (rc != TFC_ERR_DEADLINE_EXCEEDED)
                return tfc_driver_error(PROG, "%s: %s", c->name, err->msg);
            waited = (tfc_driver_seconds() - since) * 1000;
            fprintf(stderr, "%s: no values from ps %d for %.0f s; saying hello again\n",
                    c->name, k, waited / 1000);
            fflush(stderr);
            if (waited >= (double)c->o->give_up_ms)
                return tfc_driver_error(PROG, "%s: ps %d lost for %.0f s: giving up", c->name,
                                        k, waited / 1000);
            drain_values(c, k, inputs);
            hello(c, k, last_seen, err);
            continue;
        }
        /* the newest control tensor that is here (a stop ends the wait whatever follows) */
        for (int64_t newer[2]; ctl[1] == 0;) {
            tfc_transport_tensor nt;
            tfc_dist_tensor(&ctl_spec, newer, &nt);
            if (tfc_transport_recv(c->t, key, TFC_TRANSPORT_ANY_STEP, &nt, 0, NULL, err) != 0)
                break;
            ctl[0] = newer[0];
            ctl[1] = newer[1];
        }
        if (ctl[1] != 0) return 0;
        /* its values arrived before it, over the same connection */
        int complete = 1;
        for (int i = 0; i < m->n_links && complete; ++i) {
            const tfc_dist_link *l = &m->links[i];
            if (l->src != k || l->dst != -1) continue;
            tfc_transport_tensor v;
            tfc_dist_tensor(&step->inputs[l->dst_index], inputs[l->dst_index], &v);
            if (tfc_transport_recv(c->t, l->key, ctl[0], &v, c->o->timeout_ms, NULL, err) !=
                TFC_OK) {
                fprintf(stderr, "%s: values of step %" PRId64 " from ps %d incomplete (%s); "
                        "asking again\n", c->name, ctl[0], k, err->msg);
                fflush(stderr);
                complete = 0;
            }
        }
        if (complete) return 0;
        drain_values(c, k, inputs);   /* what is left would arrive twice with the resend */
        hello(c, k, ctl[0] - 1, err); /* the ps resends this step's values */
        tfc_dist_tensor(&ctl_spec, ctl, &t);
    }
}

/* Exactly n bytes from fd: 0, 1 at its end before the first byte, -1 on an error. */
static int read_full(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return r == 0 && got == 0 ? 1 : -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n) {
    size_t put = 0;
    while (put < n) {
        ssize_t r = write(fd, (const char *)buf + put, n - put);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        put += (size_t)r;
    }
    return 0;
}

/* The inputs a fed worker reads each step: those before the first received value. */
static int fed_inputs(const tfc_dist_model *m) {
    int n = m->worker->train->n_inputs;
    for (int i = 0; i < m->n_links; ++i)
        if (m->links[i].dst == -1 && m->links[i].dst_index < n) n = m->links[i].dst_index;
    return n;
}

static int write_result(task_ctx *c, int64_t step, double loss) {
    unsigned char rec[16];
    memcpy(rec, &step, 8);
    memcpy(rec + 8, &loss, 8);
    if (write_full(c->o->result_fd, rec, sizeof(rec)) == 0) return 0;
    return tfc_driver_error(PROG, "%s: --result-fd: %s", c->name, strerror(errno));
}

/* A fed worker's next step: commands from --feed-fd until a step's inputs. 'V': write a
 * {0, 0} record, then the values received from the ps tasks (raw bytes, in input order); 'S':
 * the step's inputs follow. 0: read, 1: the feeder is done, -1: a bad command or error. */
static int read_feeds(task_ctx *c, void **inputs) {
    const tfc_program *p = c->m->worker->train;
    int n = fed_inputs(c->m);
    for (;;) {
        unsigned char cmd;
        int rc = read_full(c->o->feed_fd, &cmd, 1);
        if (rc != 0) return rc;
        if (cmd == 'S') break;
        if (cmd != 'V' || write_result(c, 0, 0.0)) return -1;
        for (int i = n; i < p->n_inputs; ++i)
            if (write_full(c->o->result_fd, inputs[i], (size_t)p->inputs[i].nbytes)) return -1;
    }
    for (int i = 0; i < n; ++i)
        if (read_full(c->o->feed_fd, inputs[i], (size_t)p->inputs[i].nbytes) != 0) return -1;
    return 0;
}

int tfc_dist_worker_main(task_ctx *c) {
    const tfc_dist_model *m = c->m;
    const tfc_model *wm = m->worker;
    const tfc_program *p = wm->train;
    dist_options *o = c->o;
    char msg[4096];
    tfc_error err = {msg, sizeof(msg), NULL};
    msg[0] = '\0';
    int status = 1;
    tfc_dataset data;
    memset(&data, 0, sizeof(data));
    tfc_model_state st;
    memset(&st, 0, sizeof(st));
    tfc_batcher batcher;
    memset(&batcher, 0, sizeof(batcher));
    int batcher_ok = 0;
    int64_t global = m->batch * o->n_workers;
    int64_t *rows = malloc((size_t)global * sizeof(int64_t));
    int64_t *ps_step = calloc((size_t)m->n_ps, sizeof(int64_t));
    for (int k = 0; ps_step != NULL && k < m->n_ps; ++k) ps_step[k] = -1;
    void **inputs = tfc_dist_alloc_buffers(p->inputs, p->n_inputs);
    void **outputs = tfc_dist_alloc_buffers(p->outputs, p->n_outputs);
    if (rows == NULL || ps_step == NULL || inputs == NULL || outputs == NULL) {
        tfc_driver_error(PROG, "out of memory");
        goto out;
    }
    int fed = o->feed_fd >= 0;
    if (!fed && tfc_dataset_load(&data, o->data, &err) != TFC_OK) {
        tfc_driver_error(PROG, "%s", msg);
        goto out;
    }
    const tfc_tensor_spec *fin = &p->inputs[wm->train_features];
    const tfc_tensor_spec *lin = wm->train_labels >= 0 ? &p->inputs[wm->train_labels] : NULL;
    int64_t n_features = tfc_tensor_example_size(fin);
    int64_t n_labels = lin != NULL ? tfc_tensor_example_size(lin) : 0;
    if (!fed && data.cols != n_features + n_labels) {
        tfc_driver_error(PROG, "%s has %" PRId64 " columns; model '%s' takes %" PRId64,
                         o->data, data.cols, m->name, n_features + n_labels);
        goto out;
    }
    if (!fed &&
        ((!o->allow_nonfinite && tfc_dataset_check_finite(&data, 0, data.cols, &err)) ||
         (lin != NULL && wm->label_classes > 0 &&
          tfc_dataset_check_labels(&data, n_features, n_labels, wm->label_classes, &err)))) {
        tfc_driver_error(PROG, "%s", msg);
        goto out;
    }
    if (tfc_model_state_init(&st, wm, (uint64_t)o->seed + (uint64_t)c->task, &err) != TFC_OK) {
        tfc_driver_error(PROG, "%s", msg);
        goto out;
    }
    for (int i = 0; i < wm->n_hyperparameters; ++i) {
        const tfc_hyperparameter *h = &wm->hyperparameters[i];
        set_scalar(inputs[h->input], p->inputs[h->input].dtype, o->hparams[i]);
    }
    printf("%s: batch %" PRId64 " of a global batch %" PRId64 ", %s\n", c->name, m->batch,
           global, o->sync ? "synchronous" : "asynchronous");
    fflush(stdout);
    int64_t next_step = -1, steps_done = 0, logged = 0;
    double t_log = tfc_driver_seconds();
    for (;;) {
        int stop = 0;
        int64_t s = -1;
        for (int k = 0; k < m->n_ps; ++k) {
            int64_t ctl[2];
            if (worker_wait_ps(c, k, inputs, ctl, ps_step[k], &err)) goto out;
            ps_step[k] = ctl[0];
            stop |= ctl[1] != 0;
            if (k == (m->global_step_ps >= 0 ? m->global_step_ps : 0)) s = ctl[0];
        }
        if (stop) {
            say_done(c);
            if (fed && write_result(c, -1, 0.0)) goto out;
            break;
        }
        if (fed) {
            int rc = read_feeds(c, inputs);
            if (rc < 0) {
                tfc_driver_error(PROG, "%s: --feed-fd: a bad command, or inputs cut short",
                                 c->name);
                goto out;
            }
            if (rc > 0) { /* the feeder is done: so is this worker */
                for (int k = 0; k < m->n_ps; ++k) hello(c, k, TFC_DIST_HELLO_DONE, &err);
                break;
            }
        } else if (s != next_step || !batcher_ok) {
            tfc_batcher_free(&batcher);
            if (tfc_batcher_init(&batcher, data.rows, global, (uint64_t)o->seed, o->shuffle,
                                 s * global, &err) != TFC_OK) {
                tfc_driver_error(PROG, "%s", msg);
                goto out;
            }
            batcher_ok = 1;
        }
        const int64_t *mine = rows + c->task * m->batch;
        if (!fed) {
            tfc_batcher_next(&batcher, rows);
            next_step = s + 1;
        }
        if (!fed && (tfc_dataset_gather(&data, mine, m->batch, 0, n_features, fin->dtype,
                               inputs[wm->train_features], &err) != TFC_OK ||
            (lin != NULL && tfc_dataset_gather(&data, mine, m->batch, n_features, n_labels,
                                               lin->dtype, inputs[wm->train_labels],
                                               &err) != TFC_OK))) {
            tfc_driver_error(PROG, "%s", msg);
            goto out;
        }
        if (tfc_model_run(&st, p, (const void *const *)inputs, outputs, &err) != TFC_OK) {
            tfc_driver_error(PROG, "%s: step %" PRId64 ": %s%s%s", c->name, s, msg,
                             err.node ? " at node " : "", err.node ? err.node : "");
            goto out;
        }
        char key[TFC_TRANSPORT_MAX_KEY];
        for (int i = 0; i < m->n_links; ++i) {
            const tfc_dist_link *l = &m->links[i];
            if (l->src != -1) continue;
            tfc_transport_tensor t;
            tfc_dist_tensor(&p->outputs[l->src_index], outputs[l->src_index], &t);
            tfc_dist_worker_key(key, sizeof(key), l->key, c->task);
            if (tfc_dist_send(c, o->ps_hosts[l->dst], key, ps_step[l->dst], &t, o->timeout_ms,
                              &err) != TFC_OK) {
                /* a lost ps: its replacement serves us again after our hello; one that
                 * finished has sent its stop, which the wait for its values finds */
                fprintf(stderr, "%s: sending to ps %d: %s\n", c->name, l->dst, msg);
                fflush(stderr);
                break;
            }
        }
        ++steps_done;
        if (fed && write_result(c, s, tfc_driver_element(outputs[wm->train_loss],
                                                         p->outputs[wm->train_loss].dtype, 0)))
            goto out;
        if (o->log_every > 0 && (s + 1) % o->log_every == 0) {
            double now = tfc_driver_seconds();
            double loss = tfc_driver_element(outputs[wm->train_loss],
                                             p->outputs[wm->train_loss].dtype, 0);
            printf("%s: step %" PRId64 "  loss %.6g  %.0f examples/s\n", c->name, s + 1, loss,
                   (double)(steps_done - logged) * (double)m->batch /
                       (now - t_log > 1e-9 ? now - t_log : 1e-9));
            fflush(stdout);
            t_log = now;
            logged = steps_done;
        }
    }
    printf("%s: done after %" PRId64 " steps of its own\n", c->name, steps_done);
    fflush(stdout);
    status = 0;
out:
    if (batcher_ok) tfc_batcher_free(&batcher);
    free(rows);
    free(ps_step);
    tfc_dist_free_buffers(inputs, p->n_inputs);
    tfc_dist_free_buffers(outputs, p->n_outputs);
    tfc_model_state_free(&st);
    tfc_dataset_free(&data);
    return status;
}
