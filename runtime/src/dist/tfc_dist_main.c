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

#include "tfc_dist.h"
#include "../tfc_driver.h"
#include "../tfc_json.h"
#include "tfc_transport.h"

static const char *const PROG = "train";

typedef struct {
    char **ps_hosts, **worker_hosts;
    int n_ps, n_workers;
    const char *job;
    int64_t task;
    const char *data, *dir, *bind, *wire;
    int64_t steps, seed, log_every, save_every, max_to_keep, replicas, timeout_ms, give_up_ms;
    int sync, shuffle;
    double *hparams;
    char *tf_config_job;
    int64_t tf_config_task;
} dist_options;

static void usage(const tfc_dist_model *m, FILE *f) {
    fprintf(f,
            "usage: train --job ps|worker --task I --data FILE --steps N [--sync|--async]\n"
            "             [--cluster FILE | --ps-hosts H:P,... --worker-hosts H:P,...]\n"
            "             [--checkpoint-dir DIR] [--save-every M] [--replicas-to-aggregate R]\n"
            "             [--lr X] [--hparam NAME=X] [--seed S] [--no-shuffle] [--log-every K]\n"
            "             [--timeout-ms T] [--give-up-ms T] [--bind HOST]\n"
            "             [--wire-dtype float16|bfloat16]\n"
            "\n"
            "Distributed training of model '%s' (%d ps task(s), batch %" PRId64 " per worker).\n"
            "The cluster comes from --cluster (a JSON ClusterSpec {\"ps\": [...], \"worker\":\n"
            "[...]}), --ps-hosts/--worker-hosts, the TF_CONFIG environment variable, or the one\n"
            "given to tfc compile. The task from --job/--task, TF_CONFIG's \"task\", or the rank\n"
            "mpirun or SLURM set (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID): ranks below the\n"
            "number of ps tasks are the ps tasks, the others the workers.\n"
            "\n"
            "  --sync / --async    synchronous (default) or asynchronous data parallel\n"
            "  --replicas-to-aggregate R  sync: gradients of R workers make one step (default:\n"
            "                      all); the others are backup workers: late ones are dropped\n"
            "  --checkpoint-dir D  each ps task writes D/ps-K/model.ckpt-STEP.safetensors and\n"
            "                      resumes from the latest one there\n"
            "  --timeout-ms T      log and send a hello when a wait lasts T ms (default 5000)\n"
            "  --give-up-ms T      a worker exits when no ps answers for T ms (default 120000)\n",
            m->name, m->n_ps, m->batch);
}

/* "a:1,b:2" -> a malloc'd list of malloc'd strings */
static int split_hosts(const char *text, char ***out, int *n) {
    int count = 1;
    for (const char *p = text; *p; ++p) count += *p == ',';
    char **list = calloc((size_t)count, sizeof(char *));
    if (list == NULL) return -1;
    int k = 0;
    const char *start = text;
    for (const char *p = text;; ++p) {
        if (*p == ',' || *p == '\0') {
            size_t len = (size_t)(p - start);
            list[k] = malloc(len + 1);
            if (list[k] == NULL) return -1;
            memcpy(list[k], start, len);
            list[k][len] = '\0';
            ++k;
            start = p + 1;
            if (*p == '\0') break;
        }
    }
    *out = list;
    *n = k;
    return 0;
}

static void free_hosts(char **list, int n) {
    for (int i = 0; i < n && list != NULL; ++i) free(list[i]);
    free(list);
}

/* -- TF_CONFIG and cluster files: {"cluster": {"ps": [...], "worker": [...]},
 *    "task": {"type": "worker", "index": 0}} or a bare ClusterSpec ---------------------------- */
static const tfc_json_member *member(const tfc_json_member *ms, size_t n, const char *key) {
    for (size_t i = 0; i < n; ++i)
        if (ms[i].key_len == strlen(key) && memcmp(ms[i].key, key, ms[i].key_len) == 0)
            return &ms[i];
    return NULL;
}

static int json_strings(const char *s, size_t begin, size_t end, char ***out, int *n) {
    tfc_json j = {s, end, begin, NULL};
    tfc_json_skip_ws(&j);
    if (tfc_json_peek(&j) != '[') return -1;
    ++j.pos;
    int cap = 8, k = 0;
    char **list = calloc((size_t)cap, sizeof(char *));
    if (list == NULL) return -1;
    tfc_json_skip_ws(&j);
    if (tfc_json_peek(&j) == ']') return free(list), -1;
    for (;;) {
        tfc_json_skip_ws(&j);
        if (tfc_json_peek(&j) != '"') return free_hosts(list, k), -1;
        size_t len;
        if (k == cap) {
            char **bigger = realloc(list, (size_t)(cap *= 2) * sizeof(char *));
            if (bigger == NULL) return free_hosts(list, k), -1;
            list = bigger;
        }
        if (tfc_json_decode_string(&j, &list[k], &len) != TFC_JSON_STR_OK)
            return free_hosts(list, k), -1;
        ++k;
        tfc_json_skip_ws(&j);
        int c = tfc_json_peek(&j);
        ++j.pos;
        if (c == ']') break;
        if (c != ',') return free_hosts(list, k), -1;
    }
    *out = list;
    *n = k;
    return 0;
}

/* Parse `text` (from `where`) into o's host lists and, when it has one, its task. */
static int parse_cluster_json(const char *text, const char *where, dist_options *o) {
    size_t n = strlen(text);
    tfc_json j = {text, n, 0, NULL};
    tfc_json_skip_ws(&j);
    size_t begin = j.pos;
    if (tfc_json_peek(&j) != '{' || tfc_json_skip_value(&j) != 0)
        return tfc_driver_error(PROG, "%s: not a JSON object (%s at byte %zu)", where,
                                j.what ? j.what : "expected {", j.pos);
    j.pos = begin;
    tfc_json_member *ms = NULL, *cms = NULL;
    size_t count = 0, ccount = 0;
    int status = 1;
    if (tfc_json_members(&j, &ms, &count) != TFC_JSON_STR_OK) goto done;
    const tfc_json_member *cluster = member(ms, count, "cluster");
    const tfc_json_member *cl = ms;
    size_t cn = count;
    if (cluster != NULL) {
        tfc_json cj = {text, n, cluster->value_begin, NULL};
        tfc_json_skip_ws(&cj);
        if (tfc_json_peek(&cj) != '{' || tfc_json_members(&cj, &cms, &ccount) != 0) {
            tfc_driver_error(PROG, "%s: \"cluster\" must be an object", where);
            goto done;
        }
        cl = cms;
        cn = ccount;
    }
    const tfc_json_member *ps = member(cl, cn, "ps"), *wk = member(cl, cn, "worker");
    if (ps == NULL || wk == NULL) {
        tfc_driver_error(PROG, "%s: the cluster needs \"ps\" and \"worker\" lists", where);
        goto done;
    }
    free_hosts(o->ps_hosts, o->n_ps);
    free_hosts(o->worker_hosts, o->n_workers);
    o->ps_hosts = o->worker_hosts = NULL;
    o->n_ps = o->n_workers = 0;
    if (json_strings(text, ps->value_begin, ps->value_end, &o->ps_hosts, &o->n_ps) != 0 ||
        json_strings(text, wk->value_begin, wk->value_end, &o->worker_hosts, &o->n_workers)) {
        tfc_driver_error(PROG, "%s: \"ps\" and \"worker\" must be non-empty lists of "
                         "\"host:port\" strings", where);
        goto done;
    }
    const tfc_json_member *task = member(ms, count, "task");
    if (task != NULL) {
        tfc_json tj = {text, n, task->value_begin, NULL};
        tfc_json_member *tms = NULL;
        size_t tn = 0;
        tfc_json_skip_ws(&tj);
        if (tfc_json_peek(&tj) != '{' || tfc_json_members(&tj, &tms, &tn) != 0) {
            tfc_driver_error(PROG, "%s: \"task\" must be an object", where);
            goto done;
        }
        const tfc_json_member *type = member(tms, tn, "type"), *index = member(tms, tn, "index");
        if (type != NULL) {
            tfc_json sj = {text, n, type->value_begin, NULL};
            size_t len;
            tfc_json_skip_ws(&sj);
            if (tfc_json_peek(&sj) == '"')
                tfc_json_decode_string(&sj, &o->tf_config_job, &len);
        }
        if (index != NULL) o->tf_config_task = strtoll(text + index->value_begin, NULL, 10);
        tfc_json_free_members(tms, tn);
        if (o->tf_config_job == NULL || index == NULL) {
            tfc_driver_error(PROG, "%s: \"task\" needs \"type\" and \"index\"", where);
            goto done;
        }
    }
    status = 0;
done:
    tfc_json_free_members(ms, count);
    tfc_json_free_members(cms, ccount);
    return status;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            char *bigger = realloc(buf, cap = 2 * cap + 8192);
            if (bigger == NULL) break;
            buf = bigger;
        }
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    if (buf != NULL) buf[n] = '\0';
    return buf;
}

static int find_hparam(const tfc_model *m, const char *name, size_t len) {
    for (int i = 0; i < m->n_hyperparameters; ++i)
        if (strlen(m->hyperparameters[i].name) == len &&
            strncmp(m->hyperparameters[i].name, name, len) == 0)
            return i;
    return -1;
}

/* 0: run, 1: failed (message printed), 2: --help printed. */
static int parse_options(const tfc_dist_model *m, int argc, char **argv, dist_options *o) {
    const tfc_model *w = m->worker;
    o->task = -1;
    o->steps = -1;
    o->log_every = 100;
    o->save_every = 1000;
    o->max_to_keep = 5;
    o->timeout_ms = 5000;
    o->give_up_ms = 120000;
    o->sync = 1;
    o->shuffle = 1;
    o->replicas = -1;
    o->tf_config_task = -1;
    for (int i = 0; i < w->n_hyperparameters; ++i)
        o->hparams[i] = w->hyperparameters[i].default_value;
    const char *cluster_file = NULL, *ps_hosts = NULL, *worker_hosts = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *v = NULL;
        int r;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(m, stdout);
            return 2;
        }
        if (strcmp(argv[i], "--no-shuffle") == 0) { o->shuffle = 0; continue; }
        if (strcmp(argv[i], "--sync") == 0) { o->sync = 1; continue; }
        if (strcmp(argv[i], "--async") == 0) { o->sync = 0; continue; }
#define OPTION(name) ((r = tfc_driver_option(PROG, argc, argv, &i, name, &v)) != 0)
#define INT(name, min, field) \
    if (r < 0 || tfc_driver_int(PROG, name, v, min, &o->field)) return 1
        if (OPTION("--job")) {
            o->job = v;
        } else if (OPTION("--task")) {
            INT("--task", 0, task);
        } else if (OPTION("--data")) {
            o->data = v;
        } else if (OPTION("--checkpoint-dir")) {
            o->dir = v;
        } else if (OPTION("--cluster")) {
            cluster_file = v;
        } else if (OPTION("--ps-hosts")) {
            ps_hosts = v;
        } else if (OPTION("--worker-hosts")) {
            worker_hosts = v;
        } else if (OPTION("--bind")) {
            o->bind = v;
        } else if (OPTION("--wire-dtype")) {
            o->wire = v;
        } else if (OPTION("--steps")) {
            INT("--steps", 0, steps);
        } else if (OPTION("--seed")) {
            INT("--seed", 0, seed);
        } else if (OPTION("--log-every")) {
            INT("--log-every", 0, log_every);
        } else if (OPTION("--save-every")) {
            INT("--save-every", 0, save_every);
        } else if (OPTION("--max-to-keep")) {
            INT("--max-to-keep", 0, max_to_keep);
        } else if (OPTION("--replicas-to-aggregate")) {
            INT("--replicas-to-aggregate", 1, replicas);
        } else if (OPTION("--timeout-ms")) {
            INT("--timeout-ms", 1, timeout_ms);
        } else if (OPTION("--give-up-ms")) {
            INT("--give-up-ms", 1, give_up_ms);
        } else if (OPTION("--lr") || OPTION("--hparam")) {
            if (r < 0) return 1;
            int is_lr = strcmp(argv[i - 1], "--lr") == 0 || strncmp(argv[i], "--lr=", 5) == 0;
            const char *name = is_lr ? "learning_rate" : v;
            const char *eq = is_lr ? NULL : strchr(v, '=');
            if (!is_lr && eq == NULL)
                return tfc_driver_error(PROG, "--hparam %s: expected NAME=VALUE", v);
            size_t len = is_lr ? strlen(name) : (size_t)(eq - v);
            int h = find_hparam(w, name, len);
            if (h < 0)
                return tfc_driver_error(PROG, "model '%s' declares no hyperparameter '%.*s'",
                                        m->name, (int)len, name);
            if (tfc_driver_double(PROG, "--hparam", is_lr ? v : eq + 1, &o->hparams[h]))
                return 1;
        } else {
            if (r < 0) return 1;
            return tfc_driver_error(PROG, "unknown argument '%s' (see train --help)", argv[i]);
        }
#undef OPTION
#undef INT
    }
    /* the cluster: --cluster, --ps-hosts/--worker-hosts, TF_CONFIG, the compiled-in one */
    const char *tf_config = getenv("TF_CONFIG");
    if (cluster_file != NULL) {
        char *text = read_file(cluster_file);
        if (text == NULL) return tfc_driver_error(PROG, "--cluster %s: cannot read", cluster_file);
        int rc = parse_cluster_json(text, cluster_file, o);
        free(text);
        if (rc) return 1;
    } else if (ps_hosts != NULL || worker_hosts != NULL) {
        if (ps_hosts == NULL || worker_hosts == NULL)
            return tfc_driver_error(PROG, "--ps-hosts and --worker-hosts go together");
        if (split_hosts(ps_hosts, &o->ps_hosts, &o->n_ps) ||
            split_hosts(worker_hosts, &o->worker_hosts, &o->n_workers))
            return tfc_driver_error(PROG, "out of memory");
    } else if (tf_config != NULL && tf_config[0] != '\0') {
        if (parse_cluster_json(tf_config, "TF_CONFIG", o)) return 1;
    } else {
        char joined[8192];
        size_t used = 0;
        for (int i = 0; i < m->n_ps_hosts; ++i)
            used += (size_t)snprintf(joined + used, sizeof(joined) - used, "%s%s", i ? "," : "",
                                     m->ps_hosts[i]);
        if (m->n_ps_hosts == 0 || split_hosts(joined, &o->ps_hosts, &o->n_ps) != 0)
            return tfc_driver_error(PROG, "no cluster: give --cluster FILE or TF_CONFIG");
        used = 0;
        for (int i = 0; i < m->n_worker_hosts; ++i)
            used += (size_t)snprintf(joined + used, sizeof(joined) - used, "%s%s", i ? "," : "",
                                     m->worker_hosts[i]);
        if (split_hosts(joined, &o->worker_hosts, &o->n_workers) != 0)
            return tfc_driver_error(PROG, "out of memory");
    }
    if (o->n_ps != m->n_ps)
        return tfc_driver_error(PROG, "the cluster has %d ps task(s), but model '%s' was "
                                "compiled for %d (tfc compile --cluster)", o->n_ps, m->name,
                                m->n_ps);
    /* the task: --job/--task, TF_CONFIG's task, the rank of mpirun or SLURM */
    if (o->job == NULL && tf_config != NULL && tf_config[0] != '\0' && o->tf_config_job == NULL)
        if (parse_cluster_json(tf_config, "TF_CONFIG", o)) return 1;
    if (o->job == NULL && o->tf_config_job != NULL) {
        o->job = o->tf_config_job;
        if (o->task < 0) o->task = o->tf_config_task;
    }
    if (o->job == NULL) {
        static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
        for (int i = 0; i < 3 && o->job == NULL; ++i) {
            const char *rank = getenv(ranks[i]);
            if (rank == NULL) continue;
            int64_t r;
            if (tfc_driver_int(PROG, ranks[i], rank, 0, &r)) return 1;
            if (r < o->n_ps) {
                o->job = "ps";
                o->task = r;
            } else {
                o->job = "worker";
                o->task = r - o->n_ps;
            }
        }
    }
    if (o->job == NULL || o->task < 0)
        return tfc_driver_error(PROG, "which task is this? give --job and --task, TF_CONFIG, "
                                "or run under mpirun/SLURM (see train --help)");
    int n = strcmp(o->job, "ps") == 0 ? o->n_ps : strcmp(o->job, "worker") == 0 ? o->n_workers
                                                                                  : -1;
    if (n < 0) return tfc_driver_error(PROG, "--job %s: the jobs are ps and worker", o->job);
    if (o->task >= n)
        return tfc_driver_error(PROG, "--task %" PRId64 ": job %s has %d task(s)", o->task,
                                o->job, n);
    if (o->replicas < 0) o->replicas = o->n_workers;
    if (o->replicas > o->n_workers)
        return tfc_driver_error(PROG, "--replicas-to-aggregate %" PRId64 " exceeds the %d "
                                "workers", o->replicas, o->n_workers);
    if (o->steps < 0) return tfc_driver_error(PROG, "--steps is required (see train --help)");
    if (strcmp(o->job, "worker") == 0 && o->data == NULL)
        return tfc_driver_error(PROG, "a worker needs --data FILE");
    return 0;
}

/* -- what both roles share ------------------------------------------------------------------ */
typedef struct {
    const tfc_dist_model *m;
    dist_options *o;
    int task;
    tfc_transport *t;
    char name[64];
    int64_t hello_step; /* hellos are numbered: the same (key, step) is sent only once */
} task_ctx;

static int make_transport(task_ctx *c, const char *address, tfc_error *err) {
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

static void as_tensor(const tfc_tensor_spec *spec, void *data, tfc_transport_tensor *t) {
    memset(t, 0, sizeof(*t));
    t->dtype = spec->dtype;
    t->rank = spec->rank;
    for (int i = 0; i < spec->rank; ++i) t->dims[i] = spec->dims[i];
    t->data = data;
    t->nbytes = spec->nbytes;
}

static int send_to(task_ctx *c, const char *address, const char *key, int64_t step,
                   const tfc_transport_tensor *tensor, tfc_error *err) {
    int peer;
    int rc = tfc_transport_connect(c->t, address, &peer, err);
    if (rc == TFC_OK) rc = tfc_transport_send(c->t, peer, key, step, tensor, err);
    return rc;
}

static void **alloc_buffers(const tfc_tensor_spec *specs, int n) {
    void **bufs = calloc((size_t)(n > 0 ? n : 1), sizeof(void *));
    if (bufs == NULL) return NULL;
    for (int i = 0; i < n; ++i)
        if ((bufs[i] = tfc_aligned_alloc(specs[i].nbytes)) == NULL) return NULL;
    return bufs;
}

static void free_buffers(void **bufs, int n) {
    for (int i = 0; bufs != NULL && i < n; ++i) free(bufs[i]);
    free(bufs);
}

/* -- the ps ---------------------------------------------------------------------------------- */
typedef struct {
    task_ctx c;
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
        if (only >= 0 && w != only) continue;
        const char *addr = p->c.o->worker_hosts[w];
        int rc = TFC_OK;
        for (int i = 0; i < m->n_links && rc == TFC_OK && !stop; ++i) {
            const tfc_dist_link *l = &m->links[i];
            if (l->src != p->c.task || l->dst != -1) continue;
            tfc_transport_tensor t;
            as_tensor(&serve->outputs[l->src_index], p->serve_out[l->src_index], &t);
            rc = send_to(&p->c, addr, l->key, p->step, &t, err);
        }
        tfc_transport_tensor t;
        as_tensor(&ctl_spec, ctl, &t);
        if (rc == TFC_OK) rc = send_to(&p->c, addr, key, p->step, &t, err);
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
        as_tensor(&serve->outputs[l->src_index], p->serve_out[l->src_index], &t);
        if (send_to(&p->c, p->c.o->ps_hosts[l->dst], l->key, p->step, &t, err) != TFC_OK) {
            fprintf(stderr, "%s: ps %d unreachable: %s\n", p->c.name, l->dst, err->msg);
            fflush(stderr);
        }
    }
    return 0;
}

static void worker_key(char *buf, size_t cap, const char *key, int w) {
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
        worker_key(key, sizeof(key), l->key, w);
        tfc_transport_tensor t;
        as_tensor(&apply->inputs[l->dst_index], into[l->dst_index], &t);
        int64_t got;
        int rc = tfc_transport_recv(p->c.t, key, step, &t, p->c.o->timeout_ms * 4, &got, err);
        if (rc != TFC_OK) return rc;
        step = got;
    }
    *step_out = step;
    return TFC_OK;
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

/* The values other ps tasks send for this step (sync) or their latest ones (async). */
static int ps_recv_peers(ps_run *p, int latest, int *have, tfc_error *err) {
    const tfc_dist_model *m = p->c.m;
    const tfc_program *apply = p->pm->train;
    for (int i = 0; i < m->n_links; ++i) {
        const tfc_dist_link *l = &m->links[i];
        if (l->dst != p->c.task || l->src < 0) continue;
        tfc_transport_tensor t;
        as_tensor(&apply->inputs[l->dst_index], p->apply_in[l->dst_index], &t);
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

static int ps_main(task_ctx *c) {
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
    if (keys == NULL || rotated == NULL || keybuf == NULL || have == NULL || done == NULL)
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
        worker_key(keybuf + (size_t)w * TFC_TRANSPORT_MAX_KEY, TFC_TRANSPORT_MAX_KEY,
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
    if ((p.serve_out = alloc_buffers(p.pm->predict ? p.pm->predict->outputs : NULL,
                                     p.pm->predict ? p.pm->predict->n_outputs : 0)) == NULL ||
        (p.apply_in = alloc_buffers(apply->inputs, apply->n_inputs)) == NULL ||
        (p.scratch = alloc_buffers(apply->inputs, apply->n_inputs)) == NULL)
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
        while (o->sync ? count < o->replicas : count < 1) {
            /* poll from the worker after the last one served: none waits behind the others */
            for (int i = 0; i < 2 * n; ++i) rotated[i] = keys[(i + rotation) % (2 * n)];
            int idx;
            int rc = tfc_transport_poll(p.c.t, rotated, 2 * n, TFC_TRANSPORT_ANY_STEP,
                                        o->timeout_ms, &idx, &err);
            if (rc == TFC_OK) idx = (idx + rotation) % (2 * n);
            if (rc == TFC_ERR_DEADLINE_EXCEEDED) {
                waited += (double)o->timeout_ms;
                fprintf(stderr, "%s: step %" PRId64 ": %" PRId64 " of %" PRId64 " gradients "
                        "after %.0f s; waiting\n", c->name, p.step, count,
                        o->sync ? o->replicas : 1, waited / 1000);
                fflush(stderr);
                continue;
            }
            if (rc != TFC_OK) {
                tfc_driver_error(PROG, "%s: %s", c->name, msg);
                goto out;
            }
            if (idx >= n) { /* a worker without this step's values (restarted): resend */
                int64_t last_seen = 0;
                tfc_tensor_spec hs = {"hello", TFC_DT_I64, 0, NULL, 8};
                tfc_transport_tensor t;
                as_tensor(&hs, &last_seen, &t);
                rc = tfc_transport_recv(p.c.t, keys[idx], TFC_TRANSPORT_ANY_STEP, &t, 0, NULL,
                                        &err);
                if (rc == TFC_OK && last_seen < p.step && !done[idx - n] &&
                    ps_serve(&p, idx - n, 0, &err))
                    goto out;
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
    free_buffers(p.serve_out, p.pm->predict ? p.pm->predict->n_outputs : 0);
    free_buffers(p.apply_in, apply->n_inputs);
    free_buffers(p.scratch, apply->n_inputs);
    tfc_model_state_free(&p.st);
    return status;
}

/* -- the worker ------------------------------------------------------------------------------ */
static int set_scalar(void *buf, int dtype, double value) {
    switch (dtype) {
    case TFC_DT_F32: *(float *)buf = (float)value; return 0;
    case TFC_DT_F64: *(double *)buf = value; return 0;
    case TFC_DT_I32: *(int32_t *)buf = (int32_t)value; return 0;
    case TFC_DT_I64: *(int64_t *)buf = (int64_t)value; return 0;
    default: *(unsigned char *)buf = value != 0.0; return 0;
    }
}

/* Tell every ps the newest step this worker has values of (-1: none): a ps that is further
 * sends it the current values. Only after a wait timed out: values may be on their way. */
static int hello_all(task_ctx *c, const int64_t *last_seen, tfc_error *err) {
    tfc_tensor_spec hs = {"hello", TFC_DT_I64, 0, NULL, 8};
    char key[64];
    snprintf(key, sizeof(key), "tfc:hello@w%d", c->task);
    for (int k = 0; k < c->o->n_ps; ++k) {
        tfc_transport_tensor t;
        int64_t last = last_seen[k];
        as_tensor(&hs, &last, &t);
        c->hello_step += 1;
        if (send_to(c, c->o->ps_hosts[k], key, c->hello_step, &t, err) != TFC_OK) {
            fprintf(stderr, "%s: ps %d (%s): %s\n", c->name, k, c->o->ps_hosts[k], err->msg);
            fflush(stderr);
        }
    }
    return 0;
}

/* The newest control tensor of ps k: {step, stop}; values of skipped steps are dropped.
 * Returns 0, or 1 when no ps answered for --give-up-ms. */
static int worker_wait_ps(task_ctx *c, int k, void **inputs, int64_t ctl[2],
                          const int64_t *last_seen, tfc_error *err) {
    const tfc_dist_model *m = c->m;
    const tfc_program *step = m->worker->train;
    char key[64];
    snprintf(key, sizeof(key), "tfc:ctl@ps%d", k);
    int64_t two = 2;
    tfc_tensor_spec ctl_spec = {"ctl", TFC_DT_I64, 1, &two, 16};
    tfc_transport_tensor t;
    as_tensor(&ctl_spec, ctl, &t);
    double waited = 0;
    for (;;) {
        int rc = tfc_transport_recv(c->t, key, TFC_TRANSPORT_ANY_STEP, &t, c->o->timeout_ms,
                                    NULL, err);
        if (rc == TFC_OK) break;
        if (rc != TFC_ERR_DEADLINE_EXCEEDED)
            return tfc_driver_error(PROG, "%s: %s", c->name, err->msg);
        waited += (double)c->o->timeout_ms;
        fprintf(stderr, "%s: no values from ps %d for %.0f s; saying hello again\n", c->name,
                k, waited / 1000);
        fflush(stderr);
        if (waited >= (double)c->o->give_up_ms)
            return tfc_driver_error(PROG, "%s: ps %d lost for %.0f s: giving up", c->name, k,
                                    waited / 1000);
        hello_all(c, last_seen, err);
    }
    for (;;) { /* values of every step up to the newest control tensor arrived before it */
        int64_t newer[2];
        tfc_transport_tensor nt;
        as_tensor(&ctl_spec, newer, &nt);
        int stop = (int)ctl[1];
        for (int i = 0; i < m->n_links && !stop; ++i) {
            const tfc_dist_link *l = &m->links[i];
            if (l->src != k || l->dst != -1) continue;
            tfc_transport_tensor v;
            as_tensor(&step->inputs[l->dst_index], inputs[l->dst_index], &v);
            int rc = tfc_transport_recv(c->t, l->key, ctl[0], &v, c->o->timeout_ms * 4, NULL,
                                        err);
            if (rc != TFC_OK)
                return tfc_driver_error(PROG, "%s: values of step %" PRId64 " from ps %d: %s",
                                        c->name, ctl[0], k, err->msg);
        }
        if (stop) return 0;
        if (tfc_transport_recv(c->t, key, TFC_TRANSPORT_ANY_STEP, &nt, 0, NULL, err) != TFC_OK)
            return 0;
        ctl[0] = newer[0];
        ctl[1] = newer[1];
    }
}

static int worker_main(task_ctx *c) {
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
    void **inputs = alloc_buffers(p->inputs, p->n_inputs);
    void **outputs = alloc_buffers(p->outputs, p->n_outputs);
    if (rows == NULL || ps_step == NULL || inputs == NULL || outputs == NULL) {
        tfc_driver_error(PROG, "out of memory");
        goto out;
    }
    if (tfc_dataset_load(&data, o->data, &err) != TFC_OK) {
        tfc_driver_error(PROG, "%s", msg);
        goto out;
    }
    const tfc_tensor_spec *fin = &p->inputs[wm->train_features];
    const tfc_tensor_spec *lin = wm->train_labels >= 0 ? &p->inputs[wm->train_labels] : NULL;
    int64_t n_features = tfc_tensor_example_size(fin);
    int64_t n_labels = lin != NULL ? tfc_tensor_example_size(lin) : 0;
    if (data.cols != n_features + n_labels) {
        tfc_driver_error(PROG, "%s has %" PRId64 " columns; model '%s' takes %" PRId64,
                         o->data, data.cols, m->name, n_features + n_labels);
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
            if (worker_wait_ps(c, k, inputs, ctl, ps_step, &err)) goto out;
            ps_step[k] = ctl[0];
            stop |= ctl[1] != 0;
            if (k == (m->global_step_ps >= 0 ? m->global_step_ps : 0)) s = ctl[0];
        }
        if (stop) break;
        if (s != next_step || !batcher_ok) {
            tfc_batcher_free(&batcher);
            if (tfc_batcher_init(&batcher, data.rows, global, (uint64_t)o->seed, o->shuffle,
                                 s * global, &err) != TFC_OK) {
                tfc_driver_error(PROG, "%s", msg);
                goto out;
            }
            batcher_ok = 1;
        }
        tfc_batcher_next(&batcher, rows);
        next_step = s + 1;
        const int64_t *mine = rows + c->task * m->batch;
        if (tfc_dataset_gather(&data, mine, m->batch, 0, n_features, fin->dtype,
                               inputs[wm->train_features], &err) != TFC_OK ||
            (lin != NULL && tfc_dataset_gather(&data, mine, m->batch, n_features, n_labels,
                                               lin->dtype, inputs[wm->train_labels],
                                               &err) != TFC_OK)) {
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
            as_tensor(&p->outputs[l->src_index], outputs[l->src_index], &t);
            worker_key(key, sizeof(key), l->key, c->task);
            if (send_to(c, o->ps_hosts[l->dst], key, ps_step[l->dst], &t, &err) != TFC_OK) {
                /* a lost ps: its replacement serves us again after our hello */
                fprintf(stderr, "%s: sending to ps %d: %s\n", c->name, l->dst, msg);
                fflush(stderr);
                break;
            }
        }
        ++steps_done;
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
    free_buffers(inputs, p->n_inputs);
    free_buffers(outputs, p->n_outputs);
    tfc_model_state_free(&st);
    tfc_dataset_free(&data);
    return status;
}

int tfc_dist_main(const tfc_dist_model *m, int argc, char **argv) {
    dist_options o;
    memset(&o, 0, sizeof(o));
    o.hparams = calloc((size_t)(m->worker->n_hyperparameters + 1), sizeof(double));
    if (o.hparams == NULL) return tfc_driver_error(PROG, "out of memory");
    int status = parse_options(m, argc, argv, &o);
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
        status = make_transport(&c, ps ? o.ps_hosts[c.task] : o.worker_hosts[c.task], &err);
        if (status == 0) status = ps ? ps_main(&c) : worker_main(&c);
        tfc_transport_destroy(c.t);
    } else if (status == 2) {
        status = 0;
    }
    free_hosts(o.ps_hosts, o.n_ps);
    free_hosts(o.worker_hosts, o.n_workers);
    free(o.tf_config_job);
    free(o.hparams);
    return status;
}
