/* The ps task of the distributed `train` (see tfc_dist_main.c for the protocol). */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tfc_driver.h"
#include "tfc_dist_internal.h"

static const char *const PROG = TFC_DIST_PROG;

typedef struct {
    task_ctx c;
    const unsigned char *finished; /* workers that said they are done: nothing more to them */
    const tfc_model *pm;
    tfc_model_state st;
    void **serve_out, **apply_in, **scratch; /* scratch: one per apply input */
    int64_t step;
    char dir[4096];
} ps_run;

static int ps_save(ps_run *p, tfc_error *err) {
    if (p->c.o->dir == NULL) return 0;
    char prefix[4096];
    int keep = p->c.o->max_to_keep > INT_MAX ? INT_MAX : (int)p->c.o->max_to_keep;
    if (tfc_model_save(&p->st, p->dir, p->step, keep, prefix, sizeof(prefix), err) != TFC_OK)
        return tfc_driver_error(PROG, "%s: saving: %s", p->c.name, err->msg);
    printf("%s: saved %s\n", p->c.name, prefix);
    fflush(stdout);
    return 0;
}

/* Run serve and send the values (and the control tensor) to worker `only` (-1: all) and to the
 * ps tasks that read them. Lost workers are logged, not fatal: their hello brings them back. */
static int ps_serve(ps_run *p, int only, int stop, tfc_error *err) {
    const tfc_dist_model *m = p->c.m;
    const tfc_program *serve = p->pm->predict;
    if (!stop && serve != NULL &&
        tfc_model_run(&p->st, serve, NULL, p->serve_out, err) != TFC_OK)
        return tfc_driver_error(PROG, "%s: serve: %s", p->c.name, err->msg);
    int64_t ctl[2] = {p->step, stop};
    int64_t two = 2;
    tfc_tensor_spec ctl_spec = {"ctl", TFC_DT_I64, 1, &two, (int64_t)sizeof(ctl)};
    char key[TFC_TRANSPORT_MAX_KEY];
    snprintf(key, sizeof(key), "tfc:ctl@ps%d", p->c.task);
    for (int w = 0; w < p->c.o->n_workers; ++w) {
        if ((only >= 0 && w != only) || p->finished[w]) continue;
        const char *addr = p->c.o->worker_hosts[w];
        int rc = TFC_OK;
        for (int i = 0; i < m->n_links && rc == TFC_OK && !stop; ++i) {
            const tfc_dist_link *l = &m->links[i];
            if (l->src != p->c.task || l->dst != -1) continue;
            tfc_transport_tensor t;
            tfc_dist_tensor(&serve->outputs[l->src_index], p->serve_out[l->src_index], &t);
            rc = tfc_dist_send(&p->c, addr, l->key, p->step, &t, 0, err);
        }
        tfc_transport_tensor t;
        tfc_dist_tensor(&ctl_spec, ctl, &t);
        if (rc == TFC_OK) rc = tfc_dist_send(&p->c, addr, key, p->step, &t, 0, err);
        if (rc != TFC_OK) {
            fprintf(stderr, "%s: worker %d (%s) unreachable at step %" PRId64 ": %s\n",
                    p->c.name, w, addr, p->step, err->msg);
            fflush(stderr);
        }
    }
    for (int i = 0; i < m->n_links && !stop; ++i) {
        const tfc_dist_link *l = &m->links[i];
        if (l->src != p->c.task || l->dst < 0) continue;
        tfc_transport_tensor t;
        tfc_dist_tensor(&serve->outputs[l->src_index], p->serve_out[l->src_index], &t);
        if (tfc_dist_send(&p->c, p->c.o->ps_hosts[l->dst], l->key, p->step, &t, 0, err) !=
            TFC_OK) {
            fprintf(stderr, "%s: ps %d unreachable: %s\n", p->c.name, l->dst, err->msg);
            fflush(stderr);
        }
    }
    return 0;
}

void tfc_dist_worker_key(char *buf, size_t cap, const char *key, int w) {
    snprintf(buf, cap, "%s@w%d", key, w);
}

/* Receive every gradient link of worker w at the step of its first one; returns that step in
 * *step_out. `into`: the apply inputs' buffers to receive into. */
static int ps_recv_worker(ps_run *p, int w, void **into, int64_t *step_out, tfc_error *err) {
    const tfc_dist_model *m = p->c.m;
    const tfc_program *apply = p->pm->train;
    int64_t step = TFC_TRANSPORT_ANY_STEP;
    char key[TFC_TRANSPORT_MAX_KEY];
    for (int i = 0; i < m->n_links; ++i) {
        const tfc_dist_link *l = &m->links[i];
        if (l->dst != p->c.task || l->src != -1) continue;
        tfc_dist_worker_key(key, sizeof(key), l->key, w);
        tfc_transport_tensor t;
        tfc_dist_tensor(&apply->inputs[l->dst_index], into[l->dst_index], &t);
        int64_t got;
        int rc = tfc_transport_recv(p->c.t, key, step, &t, p->c.o->timeout_ms * 4, &got, err);
        if (rc != TFC_OK) return rc;
        step = got;
        /* synchronous: a set of another step is dropped; the rest of it is not waited for
         * (part of a set sent before a lost connection may never come; keep_steps evicts it) */
        if (p->c.o->sync && step != p->step) break;
    }
    *step_out = step;
    return TFC_OK;
}

/* The gradient sets that make a step: --replicas-to-aggregate (sync) or 1 (async), at most
 * as many as the workers that are not done; 0 when every worker is. */
static int64_t ps_needed(const dist_options *o, const unsigned char *finished, int n) {
    int64_t live = 0;
    for (int w = 0; w < n; ++w) live += !finished[w];
    int64_t want = o->sync ? o->replicas : 1;
    return want < live ? want : live;
}

static void ps_accumulate(ps_run *p, int first) {
    const tfc_dist_model *m = p->c.m;
    const tfc_program *apply = p->pm->train;
    for (int i = 0; i < m->n_links; ++i) {
        const tfc_dist_link *l = &m->links[i];
        if (l->dst != p->c.task || l->src != -1) continue;
        const tfc_tensor_spec *s = &apply->inputs[l->dst_index];
        void *acc = p->apply_in[l->dst_index], *x = p->scratch[l->dst_index];
        int64_t n = s->dtype == TFC_DT_F32   ? s->nbytes / 4
                    : s->dtype == TFC_DT_F64 ? s->nbytes / 8
                                             : 0;
        if (first || n == 0) {
            if (first) memcpy(acc, x, (size_t)s->nbytes);
            continue;
        }
        if (s->dtype == TFC_DT_F32)
            for (int64_t k = 0; k < n; ++k) ((float *)acc)[k] += ((const float *)x)[k];
        else
            for (int64_t k = 0; k < n; ++k) ((double *)acc)[k] += ((const double *)x)[k];
    }
}

static void ps_average(ps_run *p, int64_t count) {
    const tfc_dist_model *m = p->c.m;
    const tfc_program *apply = p->pm->train;
    if (count <= 1) return;
    for (int i = 0; i < m->n_links; ++i) {
        const tfc_dist_link *l = &m->links[i];
        if (l->dst != p->c.task || l->src != -1) continue;
        const tfc_tensor_spec *s = &apply->inputs[l->dst_index];
        void *acc = p->apply_in[l->dst_index];
        if (s->dtype == TFC_DT_F32)
            for (int64_t k = 0; k < s->nbytes / 4; ++k) ((float *)acc)[k] /= (float)count;
        else if (s->dtype == TFC_DT_F64)
            for (int64_t k = 0; k < s->nbytes / 8; ++k) ((double *)acc)[k] /= (double)count;
    }
}

/* Take the hello that is waiting under `key` into *said (the step a worker last saw, or
 * TFC_DIST_HELLO_DONE). */
static int ps_take_hello(ps_run *p, const char *key, int64_t *said, tfc_error *err) {
    tfc_tensor_spec hs = {"hello", TFC_DT_I64, 0, NULL, 8};
    tfc_transport_tensor t;
    tfc_dist_tensor(&hs, said, &t);
    return tfc_transport_recv(p->c.t, key, TFC_TRANSPORT_ANY_STEP, &t, 0, NULL, err);
}

/* After the stop: wait, at most --timeout-ms, until every worker that was not done has said
 * it is. Meanwhile a worker's last gradients still find this task; they are not read. */
static void ps_linger(ps_run *p, const char *const *hello_keys, unsigned char *finished) {
    char msg[256];
    tfc_error err = {msg, sizeof(msg), NULL};
    int n = p->c.o->n_workers;
    double end = tfc_driver_seconds() + (double)p->c.o->timeout_ms / 1000;
    for (;;) {
        int left = 0;
        for (int w = 0; w < n; ++w) left += !finished[w];
        double wait_s = end - tfc_driver_seconds();
        if (left == 0 || wait_s <= 0) return;
        int idx;
        if (tfc_transport_poll(p->c.t, hello_keys, n, TFC_TRANSPORT_ANY_STEP,
                               (int64_t)(wait_s * 1000) + 1, &idx, &err) != TFC_OK)
            return;
        int64_t said = 0;
        if (ps_take_hello(p, hello_keys[idx], &said, &err) == TFC_OK &&
            said == TFC_DIST_HELLO_DONE)
            finished[idx] = 1;
    }
}

/* The values other ps tasks send for this step (sync) or their latest ones (async). */
static int ps_recv_peers(ps_run *p, int latest, int *have, tfc_error *err) {
    const tfc_dist_model *m = p->c.m;
    const tfc_program *apply = p->pm->train;
    for (int i = 0; i < m->n_links; ++i) {
        const tfc_dist_link *l = &m->links[i];
        if (l->dst != p->c.task || l->src < 0) continue;
        tfc_transport_tensor t;
        tfc_dist_tensor(&apply->inputs[l->dst_index], p->apply_in[l->dst_index], &t);
        int64_t step = latest ? TFC_TRANSPORT_ANY_STEP : p->step;
        double waited = 0;
        for (;;) {
            int64_t timeout = latest && have[i] ? 0 : p->c.o->timeout_ms;
            int rc = tfc_transport_recv(p->c.t, l->key, step, &t, timeout, NULL, err);
            if (rc == TFC_OK) {
                have[i] = 1;
                if (!latest) break;
                continue; /* drain: the newest value wins */
            }
            if (rc == TFC_ERR_DEADLINE_EXCEEDED && latest && have[i]) break;
            if (rc != TFC_ERR_DEADLINE_EXCEEDED)
                return tfc_driver_error(PROG, "%s: %s", p->c.name, err->msg);
            waited += (double)p->c.o->timeout_ms;
            fprintf(stderr, "%s: step %" PRId64 ": waiting for %s from ps %d (%.0f s)\n",
                    p->c.name, p->step, l->key, l->src, waited / 1000);
            if (waited >= (double)p->c.o->give_up_ms)
                return tfc_driver_error(PROG, "%s: ps %d did not answer", p->c.name, l->src);
        }
    }
    return 0;
}

int tfc_dist_ps_main(task_ctx *c) {
    const tfc_dist_model *m = c->m;
    dist_options *o = c->o;
    char msg[4096];
    tfc_error err = {msg, sizeof(msg), NULL};
    msg[0] = '\0';
    ps_run p;
    memset(&p, 0, sizeof(p));
    p.c = *c;
    p.pm = m->ps[c->task];
    const tfc_program *apply = p.pm->train;
    int status = 1;
    int n = o->n_workers;
    const char **keys = calloc((size_t)(2 * n), sizeof(char *));
    const char **rotated = calloc((size_t)(2 * n), sizeof(char *));
    int rotation = 0;
    int64_t dropped = 0;
    char *keybuf = calloc((size_t)(2 * n), TFC_TRANSPORT_MAX_KEY);
    int *have = calloc((size_t)(m->n_links + 1), sizeof(int));
    unsigned char *done = calloc((size_t)n, 1);
    unsigned char *finished = calloc((size_t)n, 1);
    p.finished = finished;
    if (keys == NULL || rotated == NULL || keybuf == NULL || have == NULL || done == NULL ||
        finished == NULL)
        goto oom;
    int first = -1;
    for (int i = 0; i < m->n_links && first < 0; ++i)
        if (m->links[i].dst == c->task && m->links[i].src == -1) first = i;
    if (first < 0) {
        tfc_driver_error(PROG, "ps %d receives no gradients", c->task);
        goto out;
    }
    for (int w = 0; w < n; ++w) {
        keys[w] = keybuf + (size_t)w * TFC_TRANSPORT_MAX_KEY;
        tfc_dist_worker_key(keybuf + (size_t)w * TFC_TRANSPORT_MAX_KEY, TFC_TRANSPORT_MAX_KEY,
                   m->links[first].key, w);
        keys[n + w] = keybuf + (size_t)(n + w) * TFC_TRANSPORT_MAX_KEY;
        snprintf(keybuf + (size_t)(n + w) * TFC_TRANSPORT_MAX_KEY, TFC_TRANSPORT_MAX_KEY,
                 "tfc:hello@w%d", w);
    }
    if (tfc_model_state_init(&p.st, p.pm, (uint64_t)o->seed, &err) != TFC_OK) {
        tfc_driver_error(PROG, "%s", msg);
        goto out;
    }
    if (tfc_model_run(&p.st, p.pm->init, NULL, NULL, &err) != TFC_OK) {
        tfc_driver_error(PROG, "%s: initializing the variables: %s", c->name, msg);
        goto out;
    }
    if (o->dir != NULL) {
        snprintf(p.dir, sizeof(p.dir), "%s/ps-%d", o->dir, c->task);
        if (tfc_driver_mkdirs(p.dir, msg, sizeof(msg)) != 0) {
            tfc_driver_error(PROG, "--checkpoint-dir: %s", msg);
            goto out;
        }
        int keep = o->max_to_keep > INT_MAX ? INT_MAX : (int)o->max_to_keep, removed = 0;
        if (tfc_model_clean_checkpoints(p.dir, keep, &removed, &err) != TFC_OK) {
            tfc_driver_error(PROG, "--checkpoint-dir: %s", msg);
            goto out;
        }
        if (removed > 0)
            printf("%s: removed %d leftover file(s) of interrupted saves from %s\n", c->name,
                   removed, p.dir);
        char state_file[4200], path[4096];
        snprintf(state_file, sizeof(state_file), "%s/checkpoint", p.dir);
        if (tfc_driver_exists(state_file)) {
            if (tfc_model_restore(&p.st, p.dir, NULL, path, sizeof(path), &err) != TFC_OK) {
                tfc_driver_error(PROG, "%s: resuming from %s: %s", c->name, p.dir, msg);
                goto out;
            }
            p.step = tfc_model_checkpoint_step(path);
            if (p.pm->global_step >= 0)
                p.step = (int64_t)tfc_driver_element(p.st.buffers[p.pm->global_step],
                                                     p.pm->state[p.pm->global_step].dtype, 0);
            if (p.step < 0) p.step = 0;
            printf("%s: restored %s (step %" PRId64 ")\n", c->name, path, p.step);
        }
    }
    if ((p.serve_out = tfc_dist_alloc_buffers(p.pm->predict ? p.pm->predict->outputs : NULL,
                                     p.pm->predict ? p.pm->predict->n_outputs : 0)) == NULL ||
        (p.apply_in = tfc_dist_alloc_buffers(apply->inputs, apply->n_inputs)) == NULL ||
        (p.scratch = tfc_dist_alloc_buffers(apply->inputs, apply->n_inputs)) == NULL)
        goto oom;
    printf("%s: serving %d worker(s), %s, from step %" PRId64 " to %" PRId64 "\n", c->name, n,
           o->sync ? "synchronous" : "asynchronous", p.step, o->steps);
    fflush(stdout);
    double t0 = tfc_driver_seconds();
    int64_t step0 = p.step;
    if (p.step < o->steps && ps_serve(&p, -1, 0, &err)) goto out;
    while (p.step < o->steps) {
        int64_t count = 0;
        double waited = 0;
        memset(done, 0, (size_t)n);
        while (count < ps_needed(o, finished, n)) {
            /* poll from the worker after the last one served: none waits behind the others */
            for (int i = 0; i < 2 * n; ++i) rotated[i] = keys[(i + rotation) % (2 * n)];
            int idx;
            int rc = tfc_transport_poll(p.c.t, rotated, 2 * n, TFC_TRANSPORT_ANY_STEP,
                                        o->timeout_ms, &idx, &err);
            if (rc == TFC_OK) {
                idx = (idx + rotation) % (2 * n);
                waited = 0; /* a worker is there */
            }
            if (rc == TFC_ERR_DEADLINE_EXCEEDED) {
                waited += (double)o->timeout_ms;
                fprintf(stderr, "%s: step %" PRId64 ": %" PRId64 " of %" PRId64 " gradients "
                        "after %.0f s; waiting\n", c->name, p.step, count,
                        o->sync ? o->replicas : 1, waited / 1000);
                fflush(stderr);
                if (o->idle_exit_ms > 0 && waited >= (double)o->idle_exit_ms) {
                    tfc_driver_error(PROG, "%s: step %" PRId64 ": no worker sent anything for "
                                     "%.0f s (--idle-exit-ms): giving up", c->name, p.step,
                                     waited / 1000);
                    goto out;
                }
                continue;
            }
            if (rc != TFC_OK) {
                tfc_driver_error(PROG, "%s: %s", c->name, msg);
                goto out;
            }
            if (idx >= n) { /* a worker waited too long: a lost task or lost frames */
                int64_t last_seen = 0;
                rc = ps_take_hello(&p, keys[idx], &last_seen, &err);
                if (rc == TFC_OK && last_seen == TFC_DIST_HELLO_DONE) {
                    finished[idx - n] = 1;
                    printf("%s: worker %d is done\n", c->name, idx - n);
                    fflush(stdout);
                    continue;
                }
                if (rc == TFC_OK) finished[idx - n] = 0; /* a worker that came back */
                /* whatever step it last saw (this ps may have restarted from an older
                 * checkpoint), a worker whose gradients for this step are missing has lost
                 * values or gradients on the way: it gets this step's values again */
                if (rc == TFC_OK && !done[idx - n] && ps_serve(&p, idx - n, 0, &err)) goto out;
                continue;
            }
            int64_t got;
            rc = ps_recv_worker(&p, idx, o->sync ? p.scratch : p.apply_in, &got, &err);
            if (rc != TFC_OK) {
                fprintf(stderr, "%s: gradients of worker %d: %s\n", c->name, idx, msg);
                continue;
            }
            if (o->sync && (got != p.step || done[idx])) { /* late or stale: dropped */
                ++dropped;
                continue;
            }
            done[idx] = 1;
            rotation = (idx + 1) % n;
            if (o->sync) ps_accumulate(&p, count == 0);
            ++count;
        }
        if (count == 0) break; /* every worker is done */
        if (o->sync) ps_average(&p, count);
        if (ps_recv_peers(&p, !o->sync, have, &err)) goto out;
        if (tfc_model_run(&p.st, apply, (const void *const *)p.apply_in, NULL, &err) != TFC_OK) {
            tfc_driver_error(PROG, "%s: step %" PRId64 ": %s%s%s", c->name, p.step, msg,
                             err.node ? " at node " : "", err.node ? err.node : "");
            goto out;
        }
        ++p.step;
        if (o->save_every > 0 && p.step % o->save_every == 0 && ps_save(&p, &err)) goto out;
        if (o->log_every > 0 && (p.step % o->log_every == 0 || p.step == o->steps)) {
            double now = tfc_driver_seconds();
            printf("%s: global_step %" PRId64 "  %.1f steps/s\n", c->name, p.step,
                   (double)(p.step - step0) / (now - t0 > 1e-9 ? now - t0 : 1e-9));
            fflush(stdout);
        }
        if (p.step < o->steps) {
            int only = -1;
            if (!o->sync)
                for (int w = 0; w < n; ++w)
                    if (done[w]) only = w;
            if (ps_serve(&p, only, 0, &err)) goto out;
        }
    }
    if (ps_save(&p, &err)) goto out;
    ps_serve(&p, -1, 1, &err);
    printf("%s: done at step %" PRId64 " (%" PRId64 " late gradient sets dropped)\n", c->name,
           p.step, dropped);
    fflush(stdout);
    ps_linger(&p, keys + n, finished);
    status = 0;
    goto out;
oom:
    tfc_driver_error(PROG, "out of memory");
out:
    free(keys);
    free(rotated);
    free(keybuf);
    free(have);
    free(done);
    free(finished);
    tfc_dist_free_buffers(p.serve_out, p.pm->predict ? p.pm->predict->n_outputs : 0);
    tfc_dist_free_buffers(p.apply_in, apply->n_inputs);
    tfc_dist_free_buffers(p.scratch, apply->n_inputs);
    tfc_model_state_free(&p.st);
    return status;
}
