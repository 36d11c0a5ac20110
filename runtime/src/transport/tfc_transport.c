/* The tensor transport: its settings, the listening socket and the accept thread
 * (tfc_transport_accept.c), reader threads (tfc_transport_read.c), the rendezvous table
 * (tfc_rendezvous.c) and outbound connections (tfc_transport_send.c); here create, destroy and
 * what reads the whole state. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tfc_transport_internal.h"


#define FAIL tfc_error_setf

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = (char *)TFC_MALLOC(n);
    if (copy != NULL) memcpy(copy, s, n);
    return copy;
}

/* Does `a` name this machine only (127.0.0.0/8, ::1, or ::ffff:127.x.y.z)? */
static int is_loopback(const struct sockaddr *a) {
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa_family == AF_INET6) {
        const struct in6_addr *x = &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(x) || (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
    }
    return 0;
}

/* ---- create / destroy ---- */

int tfc_transport_create(const tfc_transport_config *config, tfc_transport **out,
                         tfc_error *err) {
    static const tfc_transport_config defaults;
    const tfc_transport_config *cfg = config != NULL ? config : &defaults;
    if (out == NULL) return FAIL(err, TFC_ERR_INVALID_ARGUMENT, "transport: out is NULL");
    *out = NULL;
    if (cfg->port < 0 || cfg->port > 65535)
        return FAIL(err, TFC_ERR_INVALID_ARGUMENT, "transport: port %d is not in [0, 65535]",
                    cfg->port);
    if (cfg->wire_dtype != 0 && cfg->wire_dtype != TFC_DTYPE_F32 &&
        cfg->wire_dtype != TFC_DTYPE_F16 && cfg->wire_dtype != TFC_DTYPE_BF16)
        return FAIL(err, TFC_ERR_INVALID_ARGUMENT,
                    "transport: wire dtype %d is not float32, float16 or bfloat16",
                    cfg->wire_dtype);
    if (cfg->connect_timeout_ms < 0 || cfg->io_timeout_ms < 0 || cfg->max_frame_bytes < 0 ||
        cfg->idle_timeout_ms < -1 || cfg->max_connections < 0 ||
        cfg->max_connections_per_peer < 0 || cfg->max_handshakes < 0 ||
        cfg->max_held_bytes < 0 || cfg->max_held_bytes_per_peer < 0 ||
        cfg->max_held_tensors < 0 || cfg->max_held_tensors_per_peer < 0 ||
        cfg->keep_steps < 0 || cfg->n_routes < 0 || (cfg->n_routes > 0 && cfg->routes == NULL))
        return FAIL(err, TFC_ERR_INVALID_ARGUMENT, "transport: a negative timeout, limit or "
                    "route count");
    const char *name = cfg->name != NULL ? cfg->name : "tfc";
    if (!tfc_wire_name_valid(name))
        return FAIL(err, TFC_ERR_INVALID_ARGUMENT, "transport: the name must have 1 to %d "
                    "printable characters without spaces", TFC_TRANSPORT_MAX_NAME);
    const char *host = cfg->bind_host != NULL ? cfg->bind_host : "127.0.0.1";
    const char *token = cfg->token != NULL ? cfg->token : getenv("TFC_CLUSTER_TOKEN");

    tfc_transport *t = (tfc_transport *)TFC_MALLOC(sizeof *t);
    if (t == NULL) return FAIL(err, TFC_ERR_RESOURCE_EXHAUSTED, "transport: out of memory");
    memset(t, 0, sizeof *t);
    t->listen_fd = t->wake[0] = t->wake[1] = -1;
    t->name = dup_string(name);
    t->token = dup_string(token != NULL ? token : "");
    t->wire_dtype = cfg->wire_dtype == TFC_DTYPE_F32 ? 0 : cfg->wire_dtype;
#define OR(value, fallback) ((value) ? (value) : (fallback))
    t->connect_timeout_ms = OR(cfg->connect_timeout_ms, 30000);
    t->io_timeout_ms = OR(cfg->io_timeout_ms, 10000);
    t->max_frame_bytes = OR(cfg->max_frame_bytes, INT64_C(1) << 31);
    t->idle_ms = OR(cfg->idle_timeout_ms, 60000);
    t->max_conns = OR(cfg->max_connections, 64);
    t->max_conns_per_peer = OR(cfg->max_connections_per_peer, 8);
    t->max_handshakes = OR(cfg->max_handshakes, 32);
    t->max_held_bytes = OR(cfg->max_held_bytes, INT64_C(1) << 30);
    t->max_held_bytes_per_peer = OR(cfg->max_held_bytes_per_peer, INT64_C(1) << 28);
    t->max_held_tensors = OR(cfg->max_held_tensors, 65536);
    t->max_held_tensors_per_peer = OR(cfg->max_held_tensors_per_peer, 16384);
#undef OR
    t->keep_steps = cfg->keep_steps;
    t->routed = cfg->n_routes > 0;
    pthread_mutex_init(&t->lock, NULL);
    pthread_mutex_init(&t->peers_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (t->name == NULL || t->token == NULL) {
        tfc_transport_destroy(t);
        return FAIL(err, TFC_ERR_RESOURCE_EXHAUSTED, "transport: out of memory");
    }
    int rc = tfc_rendezvous_add_routes(t, cfg->routes, cfg->n_routes, err);
    if (rc != TFC_OK) {
        tfc_transport_destroy(t);
        return rc;
    }

    char port[16];
    TFC_SNPRINTF(port, sizeof port, "%d", cfg->port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        tfc_transport_destroy(t);
        return FAIL(err, TFC_ERR_INVALID_ARGUMENT, "transport: cannot resolve bind host '%s': %s",
                    host, gai_strerror(gai));
    }
    if (!is_loopback(res->ai_addr) && t->token[0] == '\0' && !cfg->insecure) {
        freeaddrinfo(res);
        tfc_transport_destroy(t);
        return FAIL(err, TFC_ERR_PERMISSION_DENIED, "transport: refusing to listen on %s, which "
                    "is not a loopback address, without a cluster token: anyone who reaches the "
                    "port could send this task tensors and stop it. Set TFC_CLUSTER_TOKEN to the "
                    "same secret in every task (tfc launch makes one), or accept the risk "
                    "explicitly (train --insecure)", host);
    }
    int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 128) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        freeaddrinfo(res);
        tfc_transport_destroy(t);
        return FAIL(err, TFC_ERR_UNKNOWN, "transport: cannot listen on %s:%s: %s", host, port,
                    strerror(e));
    }
    freeaddrinfo(res);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); /* accept only after poll says so */
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    t->listen_fd = fd;
    struct sockaddr_storage bound;
    socklen_t len = sizeof bound;
    getsockname(fd, (struct sockaddr *)&bound, &len);
    t->port = bound.ss_family == AF_INET6
                  ? ntohs(((struct sockaddr_in6 *)(void *)&bound)->sin6_port)
                  : ntohs(((struct sockaddr_in *)(void *)&bound)->sin_port);
    if (pipe(t->wake) != 0 || pthread_create(&t->accept_thread, NULL, tfc_transport_accept_main, t) != 0) {
        int e = errno;
        if (t->wake[0] >= 0) close(t->wake[0]), close(t->wake[1]);
        t->wake[0] = t->wake[1] = -1;
        tfc_transport_destroy(t);
        return FAIL(err, TFC_ERR_UNKNOWN, "transport: cannot start the accept thread: %s",
                    strerror(e));
    }
    *out = t;
    return TFC_OK;
}

int tfc_transport_port(const tfc_transport *t) { return t != NULL ? t->port : -1; }

void tfc_transport_cancel(tfc_transport *t) {
    if (t == NULL) return;
    pthread_mutex_lock(&t->lock);
    __atomic_store_n(&t->cancelled, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

void tfc_transport_get_stats(const tfc_transport *t, tfc_transport_stats *stats) {
    if (t == NULL || stats == NULL) return;
    const int64_t *from = &t->stats.frames_sent;
    int64_t *to = &stats->frames_sent;
    for (size_t i = 0; i < sizeof *stats / sizeof(int64_t); ++i)
        to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
    tfc_transport *locked = (tfc_transport *)t; /* the lock only: nothing is changed */
    pthread_mutex_lock(&locked->lock);
    stats->held_bytes = t->held_bytes;
    stats->held_tensors = t->held_tensors;
    pthread_mutex_unlock(&locked->lock);
}

void tfc_transport_destroy(tfc_transport *t) {
    if (t == NULL) return;
    tfc_transport_cancel(t);
    __atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
    if (t->wake[1] >= 0) {
        ssize_t ignored = write(t->wake[1], "x", 1);
        (void)ignored;
        pthread_join(t->accept_thread, NULL);
        close(t->wake[0]), close(t->wake[1]);
    }
    tfc_transport_reap(t, 1);
    if (t->listen_fd >= 0) close(t->listen_fd);
    for (int i = 0; i < t->n_peers; ++i) {
        tfc_peer *p = t->peers[i];
        pthread_mutex_lock(&p->lock); /* a send in flight ends: it sees `cancelled` */
        if (p->fd >= 0) close(p->fd);
        pthread_mutex_unlock(&p->lock);
        pthread_mutex_destroy(&p->lock);
        TFC_FREE(p->staging);
        TFC_FREE(p);
    }
    TFC_FREE(t->peers);
    tfc_rendezvous_free_all(t); /* what arrived and was never received */
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->peers_lock);
    TFC_FREE(t->name);
    TFC_FREE(t->token);
    TFC_FREE(t);
}

