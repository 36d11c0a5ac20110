/* The distributed `train`: its options, the cluster and the task (TF_CONFIG, mpirun, SLURM). */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tfc_driver.h"
#include "../tfc_json.h"
#include "tfc_dist_internal.h"

static const char *const PROG = TFC_DIST_PROG;

static void usage(const tfc_dist_model *m, FILE *f) {
    fprintf(f,
            "usage: train --job ps|worker --task I --data FILE --steps N [--sync|--async]\n"
            "             [--cluster FILE | --ps-hosts H:P,... --worker-hosts H:P,...]\n"
            "             [--checkpoint-dir DIR] [--save-every M] [--replicas-to-aggregate R]\n"
            "             [--lr X] [--hparam NAME=X] [--seed S] [--no-shuffle] [--log-every K]\n"
            "             [--timeout-ms T] [--give-up-ms T] [--idle-exit-ms T] [--bind HOST]\n"
            "             [--insecure] [--wire-dtype float16|bfloat16] [--allow-nonfinite]\n"
            "             [--feed-fd R --result-fd W]\n"
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
            "  --give-up-ms T      a worker exits when no ps answers for T ms (default 120000)\n"
            "  --idle-exit-ms T    a ps exits when no worker sends it anything for T ms\n"
            "                      (default 0: it waits for restarted workers forever)\n"
            "  --bind HOST         listen on HOST (default 127.0.0.1); beyond loopback the tasks\n"
            "                      need a shared secret in TFC_CLUSTER_TOKEN, or --insecure\n"
            "  --insecure          listen beyond loopback without a token: anyone who reaches\n"
            "                      the port can send this task tensors and stop it\n"
            "  --feed-fd R --result-fd W  a worker without --data: each step reads 'S' and its\n"
            "                      inputs (features, labels, hyperparameters; raw bytes) from\n"
            "                      fd R and writes {int64 step, double loss} to fd W ({-1, 0}:\n"
            "                      the ps stopped); 'V' writes {0, 0} and the values received\n"
            "                      from the ps; at the end of R it tells the ps it is done\n"
            "\n"
            "TFC_CLUSTER_TOKEN: a secret every task of the cluster shares (tfc launch makes one);\n"
            "each connection proves it, and the task it says it is, without sending it.\n",
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

void tfc_dist_free_hosts(char **list, int n) {
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
        if (tfc_json_peek(&j) != '"') return tfc_dist_free_hosts(list, k), -1;
        size_t len;
        if (k == cap) {
            char **bigger = realloc(list, (size_t)(cap *= 2) * sizeof(char *));
            if (bigger == NULL) return tfc_dist_free_hosts(list, k), -1;
            list = bigger;
        }
        if (tfc_json_decode_string(&j, &list[k], &len) != TFC_JSON_STR_OK)
            return tfc_dist_free_hosts(list, k), -1;
        ++k;
        tfc_json_skip_ws(&j);
        int c = tfc_json_peek(&j);
        ++j.pos;
        if (c == ']') break;
        if (c != ',') return tfc_dist_free_hosts(list, k), -1;
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
    tfc_dist_free_hosts(o->ps_hosts, o->n_ps);
    tfc_dist_free_hosts(o->worker_hosts, o->n_workers);
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

/* 0: run, 1: failed (message printed), 2: --help printed. */
int tfc_dist_parse_options(const tfc_dist_model *m, int argc, char **argv, dist_options *o) {
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
    o->feed_fd = -1;
    o->result_fd = -1;
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
        if (strcmp(argv[i], "--insecure") == 0) { o->insecure = 1; continue; }
        if (strcmp(argv[i], "--allow-nonfinite") == 0) { o->allow_nonfinite = 1; continue; }
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
        } else if (OPTION("--feed-fd")) {
            int64_t fd;
            if (r < 0 || tfc_driver_int(PROG, "--feed-fd", v, 0, &fd)) return 1;
            o->feed_fd = fd > INT_MAX ? -1 : (int)fd;
        } else if (OPTION("--result-fd")) {
            int64_t fd;
            if (r < 0 || tfc_driver_int(PROG, "--result-fd", v, 0, &fd)) return 1;
            o->result_fd = fd > INT_MAX ? -1 : (int)fd;
        } else if (OPTION("--timeout-ms")) {
            INT("--timeout-ms", 1, timeout_ms);
        } else if (OPTION("--idle-exit-ms")) {
            INT("--idle-exit-ms", 0, idle_exit_ms);
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
            int h = tfc_model_find_hparam(w, name, len);
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
    if ((o->feed_fd >= 0) != (o->result_fd >= 0))
        return tfc_driver_error(PROG, "--feed-fd and --result-fd go together");
    if (strcmp(o->job, "worker") == 0 && o->data == NULL && o->feed_fd < 0)
        return tfc_driver_error(PROG, "a worker needs --data FILE (or --feed-fd/--result-fd)");
    return 0;
}
