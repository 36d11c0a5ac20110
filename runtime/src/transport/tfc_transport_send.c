/* Outbound: connections to peers (retry with backoff, handshake) and sending frames. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tfc_transport_internal.h"

/* Sleep `ms`, waking every 50 ms to see whether the transport was cancelled. */
static void backoff_sleep(tfc_transport *t, int64_t ms) {
    int64_t end = tfc_wire_now_ms() + ms;
    for (int64_t left = ms; left > 0 && !tfc_transport_flag(&t->cancelled);
         left = end - tfc_wire_now_ms()) {
        int64_t slice = left < 50 ? left : 50;
        struct timespec ts = {(time_t)(slice / 1000), (long)(slice % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* "host:port" or "[v6 host]:port" into host and port strings. */
static int split_address(const char *address, char *host, size_t host_cap, char *port,
                         size_t port_cap) {
    const char *colon = strrchr(address, ':');
    if (colon == NULL || colon[1] == '\0' || strlen(colon + 1) >= port_cap) return -1;
    const char *h = address;
    size_t n = (size_t)(colon - address);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') h += 1, n -= 2;
    if (n == 0 || n >= host_cap) return -1;
    memcpy(host, h, n);
    host[n] = '\0';
    strcpy(port, colon + 1);
    for (const char *p = port; *p; ++p)
        if (*p < '0' || *p > '9') return -1;
    return atoi(port) > 0 && atoi(port) <= 65535 ? 0 : -1;
}

/* One TCP connect attempt to `ai`, at most `wait_ms`; the fd, or -1 with errno set. */
static int connect_once(tfc_transport *t, const struct addrinfo *ai, int64_t wait_ms) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) return -1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); /* to bound the connect's wait */
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        tfc_wire_socket_options(fd);
        return fd;
    }
    if (errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int64_t end = tfc_wire_now_ms() + wait_ms;
    for (;;) {
        int64_t left = end - tfc_wire_now_ms();
        if (left <= 0 || tfc_transport_flag(&t->cancelled)) {
            close(fd);
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {fd, POLLOUT, 0};
        int r = poll(&p, 1, (int)(left < 100 ? left : 100));
        if (r > 0) break;
        if (r < 0 && errno != EINTR) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
    }
    int so_error = 0;
    socklen_t len = sizeof so_error;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
        close(fd);
        errno = so_error;
        return -1;
    }
    tfc_wire_socket_options(fd);
    return fd;
}

/* Connect and handshake, retrying with exponential backoff for up to `within_ms`. The
 * caller holds p->lock. */
static int connect_peer(tfc_transport *t, tfc_peer *p, int64_t within_ms, tfc_error *err) {
    char host[256], port[16];
    if (split_address(p->address, host, sizeof host, port, sizeof port) != 0)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport connect: '%s' is not host:port", p->address);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int64_t end = tfc_wire_now_ms() + within_ms, backoff = 10;
    char last[512] = "no attempt";
    int attempts = 0;
    for (;;) {
        if (tfc_transport_flag(&t->cancelled))
            return tfc_error_setf(err, TFC_ERR_CANCELLED, "transport connect to %s: cancelled",
                                      p->address);
        int gai = getaddrinfo(host, port, &hints, &res);
        if (gai != 0) {
            TFC_SNPRINTF(last, sizeof last, "cannot resolve '%s': %s", host, gai_strerror(gai));
        } else {
            for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
                int64_t left = end - tfc_wire_now_ms();
                int fd = connect_once(t, ai, left > 0 ? left : 1);
                ++attempts;
                if (fd < 0) {
                    TFC_SNPRINTF(last, sizeof last, "%s", strerror(errno));
                    continue;
                }
                char why[256];
                uint32_t idle_ms = 0;
                int code = tfc_handshake_client_run(fd, t->token, t->name, t->io_timeout_ms,
                                                    &t->cancelled, &idle_ms, why, sizeof why);
                if (code == TFC_OK) {
                    freeaddrinfo(res);
                    p->fd = fd;
                    p->idle_ms = idle_ms;
                    p->last_ms = tfc_wire_now_ms();
                    return TFC_OK;
                }
                close(fd);
                if (code != TFC_ERR_UNAVAILABLE && code != TFC_ERR_DEADLINE_EXCEEDED) {
                    freeaddrinfo(res);
                    tfc_transport_log(t, "error", "connection to %s: %s", p->address, why);
                    return tfc_error_setf(err, code, "transport connect to %s: %s",
                                              p->address, why);
                }
                TFC_SNPRINTF(last, sizeof last, "%s", why);
            }
            freeaddrinfo(res);
            res = NULL;
        }
        int64_t left = end - tfc_wire_now_ms();
        if (left <= 0)
            return tfc_error_setf(err, TFC_ERR_UNAVAILABLE,
                                      "transport connect: cannot reach %s within %" PRId64
                                      " ms (%d attempts): %s",
                                      p->address, within_ms, attempts, last);
        backoff_sleep(t, backoff < left ? backoff : left);
        backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
    }
}

/* The configured connect timeout, or the caller's (> 0). */
static int64_t connect_bound(const tfc_transport *t, int64_t within_ms) {
    return within_ms > 0 ? within_ms : t->connect_timeout_ms;
}

int tfc_transport_connect(tfc_transport *t, const char *address, int *peer, tfc_error *err) {
    return tfc_transport_connect_within(t, address, 0, peer, err);
}

int tfc_transport_connect_within(tfc_transport *t, const char *address, int64_t within_ms,
                                 int *peer, tfc_error *err) {
    if (t == NULL || address == NULL || peer == NULL)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport connect: needs a transport, an address and peer");
    if (strlen(address) >= sizeof(((tfc_peer *)NULL)->address))
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport connect: the address is too long");
    pthread_mutex_lock(&t->peers_lock);
    int id = -1;
    for (int i = 0; i < t->n_peers; ++i)
        if (strcmp(t->peers[i]->address, address) == 0) id = i;
    if (id < 0) {
        if (t->n_peers == t->cap_peers) {
            int cap = t->cap_peers ? 2 * t->cap_peers : 8;
            tfc_peer **grown =
                (tfc_peer **)TFC_REALLOC(t->peers, (size_t)cap * sizeof *grown);
            if (grown == NULL) {
                pthread_mutex_unlock(&t->peers_lock);
                return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory");
            }
            t->peers = grown;
            t->cap_peers = cap;
        }
        tfc_peer *p = (tfc_peer *)TFC_MALLOC(sizeof *p);
        if (p == NULL) {
            pthread_mutex_unlock(&t->peers_lock);
            return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory");
        }
        memset(p, 0, sizeof *p);
        strcpy(p->address, address);
        p->fd = -1;
        pthread_mutex_init(&p->lock, NULL);
        id = t->n_peers;
        t->peers[t->n_peers++] = p;
    }
    tfc_peer *p = t->peers[id];
    pthread_mutex_unlock(&t->peers_lock);
    pthread_mutex_lock(&p->lock);
    int rc = p->fd >= 0 ? TFC_OK : connect_peer(t, p, connect_bound(t, within_ms), err);
    pthread_mutex_unlock(&p->lock);
    *peer = id;
    return rc;
}

static int check_tensor(const tfc_transport_tensor *x, tfc_error *err) {
    if (x == NULL)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "transport send: tensor is NULL");
    int64_t size = tfc_transport_dtype_size(x->dtype);
    if (size == 0 || x->dtype == TFC_DTYPE_F16 || x->dtype == TFC_DTYPE_BF16)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport send: dtype %d is not one the transport carries",
                                  x->dtype);
    if (x->rank < 0 || x->rank > TFC_TRANSPORT_MAX_RANK)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport send: rank %d is not in [0, %d]", x->rank,
                                  TFC_TRANSPORT_MAX_RANK);
    int64_t count = tfc_wire_count(x->rank, x->dims);
    if (count < 0 || count > INT64_MAX / 8)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport send: negative or too large dims");
    if (x->nbytes != count * size || (x->nbytes > 0 && x->data == NULL))
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport send: nbytes %" PRId64 " is not the %" PRId64
                                  " bytes of the shape (or data is NULL)",
                                  x->nbytes, count * size);
    return TFC_OK;
}

/* Write one whole frame; a TFC_IO_* status. */
static int write_frame(tfc_transport *t, tfc_peer *p, const char *key, int64_t step,
                       const tfc_transport_tensor *x, int wire_dtype, int64_t *wire_bytes) {
    uint8_t head[TFC_WIRE_HEADER_BYTES + 8 * TFC_TRANSPORT_MAX_RANK + TFC_TRANSPORT_MAX_KEY];
    tfc_wire_header h;
    memset(&h, 0, sizeof h);
    h.step = step;
    h.key_len = (uint32_t)strlen(key);
    h.dtype = x->dtype;
    h.wire_dtype = wire_dtype;
    h.rank = x->rank;
    int64_t count = tfc_wire_count(x->rank, x->dims);
    h.payload_bytes = (uint64_t)(count * tfc_transport_dtype_size(wire_dtype));
    tfc_wire_encode_header(&h, head);
    size_t n = TFC_WIRE_HEADER_BYTES;
    for (int i = 0; i < x->rank; ++i, n += 8) tfc_wire_put_u64(head + n, (uint64_t)x->dims[i]);
    memcpy(head + n, key, h.key_len);
    n += h.key_len;
    uint32_t crc = tfc_crc32c(0, head, n);
    int io = tfc_wire_write_flags(p->fd, head, n, t->io_timeout_ms, &t->cancelled, 1);
    const uint8_t *src = (const uint8_t *)x->data;
    for (uint64_t off = 0; off < h.payload_bytes && io == TFC_IO_OK;) {
        size_t chunk = h.payload_bytes - off < TFC_WIRE_CHUNK ? (size_t)(h.payload_bytes - off)
                                                              : (size_t)TFC_WIRE_CHUNK;
        const uint8_t *out = src + off;
        if (wire_dtype != x->dtype) {
            const float *from = (const float *)(const void *)(src + off * 2);
            uint16_t *to = (uint16_t *)(void *)p->staging;
            if (wire_dtype == TFC_DTYPE_F16)
                tfc_transport_f32_to_f16(from, to, (int64_t)chunk / 2);
            else
                tfc_transport_f32_to_bf16(from, to, (int64_t)chunk / 2);
            out = p->staging;
        }
        /* the checksum after the send: the kernel's copy brought the chunk into the cache */
        io = tfc_wire_write_flags(p->fd, out, chunk, t->io_timeout_ms, &t->cancelled, 1);
        crc = tfc_crc32c(crc, out, chunk);
        off += chunk;
    }
    uint8_t tail[4];
    tfc_wire_put_u32(tail, crc);
    if (io == TFC_IO_OK) io = tfc_wire_write_full(p->fd, tail, 4, t->io_timeout_ms, &t->cancelled);
    *wire_bytes = (int64_t)(n + h.payload_bytes + 4);
    return io;
}

int tfc_transport_send(tfc_transport *t, int peer, const char *key, int64_t step,
                       const tfc_transport_tensor *tensor, tfc_error *err) {
    return tfc_transport_send_within(t, peer, key, step, tensor, 0, err);
}

int tfc_transport_send_within(tfc_transport *t, int peer, const char *key, int64_t step,
                              const tfc_transport_tensor *tensor, int64_t within_ms,
                              tfc_error *err) {
    if (t == NULL)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "transport send: t is NULL");
    size_t key_len = key != NULL ? strlen(key) : 0;
    if (key_len == 0 || key_len > TFC_TRANSPORT_MAX_KEY)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport send: the key must have 1 to %d bytes",
                                  TFC_TRANSPORT_MAX_KEY);
    if (step == TFC_TRANSPORT_ANY_STEP)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport send '%s': TFC_TRANSPORT_ANY_STEP is for recv", key);
    int rc = check_tensor(tensor, err);
    if (rc != TFC_OK) return rc;
    pthread_mutex_lock(&t->peers_lock);
    tfc_peer *p = peer >= 0 && peer < t->n_peers ? t->peers[peer] : NULL;
    pthread_mutex_unlock(&t->peers_lock);
    if (p == NULL)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT,
                                  "transport send '%s': %d is not a connected peer", key, peer);
    int wire = tensor->dtype == TFC_DTYPE_F32 && t->wire_dtype ? t->wire_dtype : tensor->dtype;
    int64_t payload = tensor->nbytes / tfc_transport_dtype_size(tensor->dtype) *
                      tfc_transport_dtype_size(wire);
    int64_t frame = payload + TFC_WIRE_HEADER_BYTES + 8 * tensor->rank + (int64_t)key_len + 4;
    if (frame > t->max_frame_bytes)
        return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED,
                                  "transport send '%s': a frame of %" PRId64
                                  " bytes is over the limit of %" PRId64,
                                  key, frame, t->max_frame_bytes);
    pthread_mutex_lock(&p->lock);
    if (wire != tensor->dtype && p->staging == NULL &&
        (p->staging = (uint8_t *)TFC_MALLOC(TFC_WIRE_CHUNK)) == NULL) {
        pthread_mutex_unlock(&p->lock);
        return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    /* the server closes a connection idle for its idle timeout: one idle for half of it is
     * replaced now, before a frame could be written into a socket about to be closed */
    if (p->fd >= 0 && p->idle_ms > 0 && tfc_wire_now_ms() - p->last_ms > p->idle_ms / 2) {
        close(p->fd);
        p->fd = -1;
    }
    /* a lost connection (the peer restarted, say) is opened again, once per send */
    int io = TFC_IO_CLOSED;
    int64_t wire_bytes = 0;
    for (int attempt = 0; attempt < 2 && (io == TFC_IO_CLOSED || io == TFC_IO_ERROR); ++attempt) {
        if (p->fd < 0) {
            rc = connect_peer(t, p, connect_bound(t, within_ms), err);
            if (rc != TFC_OK) {
                pthread_mutex_unlock(&p->lock);
                return rc;
            }
        }
        io = write_frame(t, p, key, step, tensor, wire, &wire_bytes);
        p->last_ms = tfc_wire_now_ms();
        if (io != TFC_IO_OK) {
            close(p->fd);
            p->fd = -1;
        }
    }
    pthread_mutex_unlock(&p->lock);
    if (io == TFC_IO_OK) {
        TFC_STAT_ADD(t, frames_sent, 1);
        TFC_STAT_ADD(t, bytes_sent, wire_bytes);
        return TFC_OK;
    }
    int code = io == TFC_IO_STOPPED   ? TFC_ERR_CANCELLED
               : io == TFC_IO_TIMEOUT ? TFC_ERR_DEADLINE_EXCEEDED
                                      : TFC_ERR_UNAVAILABLE;
    return tfc_error_setf(err, code, "transport send '%s' at step %" PRId64 " to %s: %s", key,
                              step, p->address, tfc_wire_io_name(io));
}
