/* The tensor transport: a listening endpoint, one reader thread per inbound connection, the
 * rendezvous table that matches sends to recvs by (key, step), and outbound connections. */
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

/* ---- inbound: one reader thread per connection ---- */

/* Read one frame into the table. 0: a frame was delivered; 1: the peer closed between frames;
 * -1: a bad frame or a broken connection, described in `why`. */
static int read_frame(tfc_conn *c, char *why, size_t cap) {
    tfc_transport *t = c->t;
    uint8_t head[TFC_WIRE_HEADER_BYTES + 8 * TFC_TRANSPORT_MAX_RANK + TFC_TRANSPORT_MAX_KEY + 1];
    size_t got = 0;
    int io = tfc_wire_read_full(c->fd, head, 1, -1, &t->stop, &got); /* idle: no time limit */
    if (io == TFC_IO_CLOSED && got == 0) return 1;
    if (io == TFC_IO_OK) io = tfc_wire_read_full(c->fd, head + 1, TFC_WIRE_HEADER_BYTES - 1,
                                                 t->io_timeout_ms, &t->stop, &got);
    if (io != TFC_IO_OK) {
        TFC_SNPRINTF(why, cap, "truncated: header: %s", tfc_wire_io_name(io));
        return -1;
    }
    tfc_wire_header h;
    if (tfc_wire_decode_header(head, t->max_frame_bytes, &h, why, cap) != 0) return -1;
    size_t dims_bytes = 8u * (size_t)h.rank, head_bytes = TFC_WIRE_HEADER_BYTES + dims_bytes;
    io = tfc_wire_read_full(c->fd, head + TFC_WIRE_HEADER_BYTES, dims_bytes + h.key_len,
                            t->io_timeout_ms, &t->stop, NULL);
    if (io != TFC_IO_OK) {
        TFC_SNPRINTF(why, cap, "truncated: dims and key: %s", tfc_wire_io_name(io));
        return -1;
    }
    for (int i = 0; i < h.rank; ++i)
        h.dims[i] = (int64_t)tfc_wire_get_u64(head + TFC_WIRE_HEADER_BYTES + 8 * i);
    if (tfc_wire_check_dims(&h, why, cap) != 0) return -1;
    char *key_bytes = (char *)head + head_bytes;
    if (memchr(key_bytes, '\0', h.key_len) != NULL) {
        TFC_SNPRINTF(why, cap, "key: contains a NUL byte");
        return -1;
    }
    key_bytes[h.key_len] = '\0';
    uint32_t crc = tfc_crc32c(0, head, head_bytes + h.key_len);
    int64_t count = tfc_wire_count(h.rank, h.dims);
    int64_t nbytes = count * tfc_transport_dtype_size(h.dtype);
    if (h.wire_dtype != h.dtype && c->staging == NULL &&
        (c->staging = (uint8_t *)TFC_MALLOC(TFC_WIRE_CHUNK)) == NULL) {
        TFC_SNPRINTF(why, cap, "payload: out of memory");
        return -1;
    }

    /* a recv already waiting for this tensor gets it in place; otherwise it waits in the table */
    pthread_mutex_lock(&t->lock);
    if (tfc_rendezvous_find(t, ENTRY_ARRIVED, key_bytes, h.step) != NULL) {
        pthread_mutex_unlock(&t->lock);
        TFC_SNPRINTF(why, cap, "key: '%s' at step %" PRId64 " arrived twice", key_bytes, h.step);
        return -1;
    }
    tfc_entry *posted = tfc_rendezvous_find(t, ENTRY_POSTED, key_bytes, h.step);
    if (posted != NULL && !tfc_rendezvous_fits(posted->want, h.dtype, h.rank, h.dims, nbytes))
        posted = NULL;
    if (posted != NULL) posted->state = ENTRY_FILLING;
    pthread_mutex_unlock(&t->lock);

    tfc_entry *arrived = NULL;
    uint8_t *dest;
    if (posted != NULL) {
        dest = (uint8_t *)posted->want->data;
    } else {
        arrived = (tfc_entry *)TFC_MALLOC(sizeof *arrived);
        char *key = (char *)TFC_MALLOC(h.key_len + 1u);
        dest = (uint8_t *)TFC_MALLOC(nbytes > 0 ? (size_t)nbytes : 1u);
        if (arrived == NULL || key == NULL || dest == NULL) {
            TFC_FREE(arrived), TFC_FREE(key), TFC_FREE(dest);
            TFC_SNPRINTF(why, cap, "payload: out of memory for %" PRId64 " bytes", nbytes);
            return -1;
        }
        memcpy(key, key_bytes, h.key_len + 1u);
        memset(arrived, 0, sizeof *arrived);
        arrived->key = key;
    }
    int64_t wire_size = tfc_transport_dtype_size(h.wire_dtype);
    int64_t size = tfc_transport_dtype_size(h.dtype);
    for (uint64_t off = 0; off < h.payload_bytes && io == TFC_IO_OK;) {
        size_t n = h.payload_bytes - off < TFC_WIRE_CHUNK ? (size_t)(h.payload_bytes - off)
                                                          : (size_t)TFC_WIRE_CHUNK;
        if (arrived != NULL && off > 0) { /* a recv posted since the header came: switch to it */
            pthread_mutex_lock(&t->lock);
            tfc_entry *late = tfc_rendezvous_find(t, ENTRY_POSTED, key_bytes, h.step);
            if (late != NULL && tfc_rendezvous_fits(late->want, h.dtype, h.rank, h.dims, nbytes))
                late->state = ENTRY_FILLING;
            else
                late = NULL;
            pthread_mutex_unlock(&t->lock);
            if (late != NULL) {
                size_t done = (size_t)(off / (uint64_t)wire_size * (uint64_t)size);
                memcpy(late->want->data, dest, done);
                TFC_FREE(dest), TFC_FREE((void *)arrived->key), TFC_FREE(arrived);
                arrived = NULL;
                posted = late;
                dest = (uint8_t *)late->want->data;
            }
        }
        uint8_t *into = h.wire_dtype == h.dtype ? dest + off : c->staging;
        io = tfc_wire_read_full(c->fd, into, n, t->io_timeout_ms, &t->stop, NULL);
        if (io != TFC_IO_OK) break;
        crc = tfc_crc32c(crc, into, n);
        float *out = (float *)(void *)(dest + off / (uint64_t)wire_size * 4u);
        if (h.wire_dtype == TFC_DTYPE_F16)
            tfc_transport_f16_to_f32((const uint16_t *)(void *)into, out, (int64_t)n / 2);
        else if (h.wire_dtype == TFC_DTYPE_BF16)
            tfc_transport_bf16_to_f32((const uint16_t *)(void *)into, out, (int64_t)n / 2);
        off += n;
    }
    uint8_t tail[4];
    if (io == TFC_IO_OK) io = tfc_wire_read_full(c->fd, tail, 4, t->io_timeout_ms, &t->stop, NULL);
    int bad = io != TFC_IO_OK;
    if (bad) {
        TFC_SNPRINTF(why, cap, "truncated: payload of '%s': %s", key_bytes, tfc_wire_io_name(io));
    } else if (tfc_wire_get_u32(tail) != crc) {
        TFC_SNPRINTF(why, cap, "crc32c: the frame of '%s' says 0x%08" PRIx32
                     ", its bytes sum to 0x%08" PRIx32, key_bytes, tfc_wire_get_u32(tail), crc);
        bad = 1;
    }

    pthread_mutex_lock(&t->lock);
    if (posted != NULL) {
        posted->state = bad ? ENTRY_POSTED : ENTRY_DONE; /* after a bad frame it waits on */
        if (!bad) {
            posted->got_step = h.step;
            if (posted->want->rank == TFC_TRANSPORT_ANY_RANK) {
                posted->want->rank = h.rank;
                memcpy(posted->want->dims, h.dims, sizeof h.dims);
            }
        }
    } else if (!bad) {
        arrived->step = h.step;
        arrived->state = ENTRY_ARRIVED;
        arrived->dtype = h.dtype;
        arrived->rank = h.rank;
        memcpy(arrived->dims, h.dims, sizeof h.dims);
        arrived->data = dest;
        arrived->nbytes = nbytes;
        tfc_rendezvous_append(t, arrived);
    }
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    if (bad && arrived != NULL) {
        TFC_FREE((void *)arrived->key), TFC_FREE(arrived), TFC_FREE(dest);
        return -1;
    }
    if (bad) return -1;
    TFC_STAT_ADD(t, frames_received, 1);
    TFC_STAT_ADD(t, bytes_received, head_bytes + h.key_len + h.payload_bytes + 4u);
    return 0;
}

static void *reader_main(void *arg) {
    tfc_conn *c = (tfc_conn *)arg;
    tfc_transport *t = c->t;
    char why[512];
    int code = tfc_handshake_server(c->fd, t->token, t->io_timeout_ms, &t->stop, why, sizeof why);
    if (code != TFC_OK) {
        if (!tfc_transport_flag(&t->stop)) {
            TFC_STAT_ADD(t, refused_handshakes, 1);
            tfc_transport_log(t, "error", "refused the connection from %s: %s", c->peer, why);
        }
    } else {
        int r;
        while ((r = read_frame(c, why, sizeof why)) == 0) {
        }
        if (r < 0 && !tfc_transport_flag(&t->stop)) {
            TFC_STAT_ADD(t, bad_frames, 1);
            tfc_transport_log(t, "error", "bad frame from %s: %s; closing that connection",
                              c->peer, why);
        }
    }
    close(c->fd);
    c->fd = -1;
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void reap_conns(tfc_transport *t, int all) {
    for (tfc_conn **p = &t->conns; *p != NULL;) {
        tfc_conn *c = *p;
        if (all || tfc_transport_flag(&c->done)) {
            pthread_join(c->thread, NULL);
            *p = c->next;
            TFC_FREE(c->staging);
            TFC_FREE(c);
        } else {
            p = &c->next;
        }
    }
}

static void *accept_main(void *arg) {
    tfc_transport *t = (tfc_transport *)arg;
    while (!tfc_transport_flag(&t->stop)) {
        struct pollfd p[2] = {{t->listen_fd, POLLIN, 0}, {t->wake[0], POLLIN, 0}};
        int r = poll(p, 2, 1000);
        reap_conns(t, 0);
        if (r <= 0 || !(p[0].revents & POLLIN)) continue;
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        int fd = accept(t->listen_fd, (struct sockaddr *)&addr, &len);
        if (fd < 0) continue;
        tfc_wire_socket_options(fd);
        tfc_conn *c = (tfc_conn *)TFC_MALLOC(sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        memset(c, 0, sizeof *c);
        c->t = t;
        c->fd = fd;
        char host[INET6_ADDRSTRLEN] = "?";
        int port = 0;
        if (addr.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)(void *)&addr;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
            port = ntohs(a->sin_port);
        } else if (addr.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)(void *)&addr;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
            port = ntohs(a->sin6_port);
        }
        TFC_SNPRINTF(c->peer, sizeof c->peer, "%s:%d", host, port);
        if (pthread_create(&c->thread, NULL, reader_main, c) != 0) {
            tfc_transport_log(t, "error", "cannot start a thread for the connection from %s",
                              c->peer);
            close(fd);
            TFC_FREE(c);
            continue;
        }
        c->next = t->conns;
        t->conns = c;
    }
    return NULL;
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
    if (cfg->connect_timeout_ms < 0 || cfg->io_timeout_ms < 0 || cfg->max_frame_bytes < 0)
        return FAIL(err, TFC_ERR_INVALID_ARGUMENT, "transport: negative timeout or frame limit");
    const char *host = cfg->bind_host != NULL ? cfg->bind_host : "127.0.0.1";
    const char *token = cfg->token != NULL ? cfg->token : getenv("TFC_CLUSTER_TOKEN");

    tfc_transport *t = (tfc_transport *)TFC_MALLOC(sizeof *t);
    if (t == NULL) return FAIL(err, TFC_ERR_RESOURCE_EXHAUSTED, "transport: out of memory");
    memset(t, 0, sizeof *t);
    t->listen_fd = t->wake[0] = t->wake[1] = -1;
    t->name = dup_string(cfg->name != NULL ? cfg->name : "tfc");
    t->token = dup_string(token != NULL ? token : "");
    t->wire_dtype = cfg->wire_dtype == TFC_DTYPE_F32 ? 0 : cfg->wire_dtype;
    t->connect_timeout_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 30000;
    t->io_timeout_ms = cfg->io_timeout_ms ? cfg->io_timeout_ms : 10000;
    t->max_frame_bytes = cfg->max_frame_bytes ? cfg->max_frame_bytes : INT64_C(1) << 31;
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
    if (pipe(t->wake) != 0 || pthread_create(&t->accept_thread, NULL, accept_main, t) != 0) {
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
    reap_conns(t, 1);
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
    for (tfc_entry *e = t->entries, *next; e != NULL; e = next) {
        next = e->next;
        if (e->state == ENTRY_ARRIVED) { /* POSTED ones belong to recvs, which have returned */
            TFC_FREE((void *)e->key), TFC_FREE(e->data), TFC_FREE(e);
        }
    }
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->peers_lock);
    TFC_FREE(t->name);
    TFC_FREE(t->token);
    TFC_FREE(t);
}

