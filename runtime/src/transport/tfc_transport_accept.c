/* The accept loop: one thread accepts connections and runs every handshake itself, on
 * non-blocking sockets under one deadline each, so a connection costs a thread only once its
 * peer has proved itself; then it applies the connection limits and starts a reader thread.
 * It also reaps the reader threads that ended. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tfc_transport_internal.h"

enum { HS_HELLO, HS_REPLY, HS_PROOF, HS_ACK };

/* One connection in its handshake. */
typedef struct {
    int fd;
    char peer[80];
    int64_t deadline;
    int stage;
    uint8_t in[TFC_HS_HELLO_BYTES];
    size_t have, need;
    uint8_t out[TFC_HS_REPLY_BYTES];
    size_t out_len, sent;
    int accept_after; /* once `out` is sent: 1 hand the connection to a reader, 0 close it */
    tfc_handshake_server hs;
} pending;

static void describe_peer(const struct sockaddr_storage *addr, char *out, size_t cap) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (addr->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)addr;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        port = ntohs(a->sin_port);
    } else if (addr->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)addr;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        port = ntohs(a->sin6_port);
    }
    TFC_SNPRINTF(out, cap, "%s:%d", host, port);
}

static void refused(tfc_transport *t, pending *p, const char *why) {
    if (!tfc_transport_flag(&t->stop)) {
        TFC_STAT_ADD(t, refused_handshakes, 1);
        tfc_transport_log(t, "error", "refused the connection from %s: %s", p->peer, why);
    }
}

static void drop(pending *p) {
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
}

/* Does any route come from `name`? (t->lock held) */
static int routes_from(tfc_transport *t, const char *name) {
    for (size_t i = 0; i < t->n_buckets; ++i)
        for (const tfc_slot *s = t->buckets[i]; s != NULL; s = s->next)
            if (s->route && strcmp(s->peer, name) == 0) return 1;
    return 0;
}

static int live_conns(tfc_transport *t, const tfc_account *of) {
    int n = 0;
    for (const tfc_conn *c = t->conns; c != NULL; c = c->next)
        if (!tfc_transport_flag(&c->done) && !c->kicked && (of == NULL || c->account == of)) ++n;
    return n;
}

/* A peer with max_connections_per_peer connections that opens one more most likely lost the
 * old ones (it restarted): its oldest go. */
static void kick_oldest(tfc_transport *t, tfc_account *a) {
    while (live_conns(t, a) >= t->max_conns_per_peer) {
        tfc_conn *oldest = NULL;
        for (tfc_conn *c = t->conns; c != NULL; c = c->next)
            if (c->account == a && !tfc_transport_flag(&c->done) && !c->kicked &&
                (oldest == NULL || c->opened_ms <= oldest->opened_ms))
                oldest = c;
        if (oldest == NULL) return;
        __atomic_store_n(&oldest->kicked, 1, __ATOMIC_RELEASE);
        shutdown(oldest->fd, SHUT_RDWR); /* its reader sees the end and exits */
        TFC_STAT_ADD(t, closed_connections, 1);
        tfc_transport_log(t, "info", "closing the oldest connection of %s (%s): it has %d, the "
                          "most a peer may have", a->name, oldest->peer, t->max_conns_per_peer);
    }
}

/* The handshake is done: a reader thread takes the connection over. */
static void establish(tfc_transport *t, pending *p) {
    tfc_conn *c = (tfc_conn *)TFC_MALLOC(sizeof *c);
    if (c == NULL) {
        drop(p);
        return;
    }
    memset(c, 0, sizeof *c);
    c->t = t;
    c->fd = p->fd;
    c->opened_ms = tfc_wire_now_ms();
    memcpy(c->peer, p->peer, sizeof c->peer);
    pthread_mutex_lock(&t->lock);
    c->account = tfc_account_get(t, p->hs.name);
    if (c->account != NULL) c->account->conns += 1;
    pthread_mutex_unlock(&t->lock);
    if (c->account == NULL) {
        TFC_FREE(c);
        drop(p);
        return;
    }
    kick_oldest(t, c->account);
    tfc_wire_socket_options(c->fd); /* blocking from now on, waking every TFC_WIRE_WAKE_MS */
    if (pthread_create(&c->thread, NULL, tfc_transport_reader_main, c) != 0) {
        tfc_transport_log(t, "error", "cannot start a thread for the connection from %s",
                          c->peer);
        pthread_mutex_lock(&t->lock);
        c->account->conns -= 1;
        tfc_account_put(t, c->account);
        pthread_mutex_unlock(&t->lock);
        TFC_FREE(c);
        drop(p);
        return;
    }
    c->next = t->conns;
    t->conns = c;
    p->fd = -1;
}

/* After the HELLO came (or its first 8 bytes said enough): the reply to send. */
static void on_hello(tfc_transport *t, pending *p) {
    char why[256];
    uint8_t nonce_s[TFC_WIRE_NONCE_BYTES];
    if (tfc_wire_random(nonce_s, sizeof nonce_s) != 0) {
        refused(t, p, "handshake: cannot read random bytes for a nonce");
        drop(p);
        return;
    }
    uint32_t idle = t->idle_ms > 0 ? (uint32_t)(t->idle_ms > UINT32_MAX ? UINT32_MAX : t->idle_ms)
                                   : 0;
    int code = tfc_handshake_server_hello(&p->hs, p->in, t->token, idle, nonce_s, p->out,
                                          &p->out_len, why, sizeof why);
    if (code != TFC_OK) refused(t, p, why);
    if (p->out_len == 0) {
        drop(p);
        return;
    }
    p->stage = HS_REPLY;
    p->sent = 0;
    p->accept_after = code == TFC_OK;
}

/* After the PROOF came: the verdict to send. */
static void on_proof(tfc_transport *t, pending *p) {
    char why[256];
    int code = tfc_handshake_server_proof(&p->hs, p->in, t->token, p->out, why, sizeof why);
    if (code == TFC_OK) {
        pthread_mutex_lock(&t->lock);
        int known = !t->routed || routes_from(t, p->hs.name);
        pthread_mutex_unlock(&t->lock);
        if (!known) {
            tfc_handshake_set_verdict(p->out, TFC_VERDICT_UNKNOWN_PEER);
            TFC_SNPRINTF(why, sizeof why, "refused: this task takes nothing from '%s'",
                         p->hs.name);
            code = TFC_ERR_PERMISSION_DENIED;
        } else if (live_conns(t, NULL) >= t->max_conns) {
            tfc_handshake_set_verdict(p->out, TFC_VERDICT_BUSY);
            TFC_SNPRINTF(why, sizeof why, "refused: %d connections already, the most this task "
                         "accepts (max_connections)", t->max_conns);
            code = TFC_ERR_UNAVAILABLE;
        }
    }
    if (code != TFC_OK) refused(t, p, why);
    p->stage = HS_ACK;
    p->out_len = TFC_HS_ACK_BYTES;
    p->sent = 0;
    p->accept_after = code == TFC_OK;
}

/* Move `p` on as far as its socket allows. */
static void advance(tfc_transport *t, pending *p) {
    for (;;) {
        if (p->stage == HS_HELLO || p->stage == HS_PROOF) {
            ssize_t r = recv(p->fd, p->in + p->have, p->need - p->have, 0);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                char why[128];
                TFC_SNPRINTF(why, sizeof why, "handshake (%s): %s",
                             p->stage == HS_HELLO ? "hello" : "proof",
                             r == 0 ? "the peer closed the connection" : strerror(errno));
                refused(t, p, why);
                drop(p);
                return;
            }
            if (r < 0) return;
            p->have += (size_t)r;
            if (p->stage == HS_HELLO && p->have >= 8 && p->have < p->need &&
                (tfc_wire_get_u32(p->in) != TFC_WIRE_HELLO ||
                 tfc_wire_get_u16(p->in + 4) != TFC_WIRE_HANDSHAKE_VERSION)) {
                on_hello(t, p); /* not our hello: answer now rather than wait for the rest */
                continue;
            }
            if (p->have < p->need) continue;
            if (p->stage == HS_HELLO) on_hello(t, p);
            else on_proof(t, p);
            if (p->fd < 0) return;
        } else {
            ssize_t r = send(p->fd, p->out + p->sent, p->out_len - p->sent, MSG_NOSIGNAL);
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
            if (r <= 0) {
                drop(p);
                return;
            }
            p->sent += (size_t)r;
            if (p->sent < p->out_len) continue;
            if (!p->accept_after) {
                drop(p);
            } else if (p->stage == HS_REPLY) {
                p->stage = HS_PROOF;
                p->have = 0;
                p->need = TFC_HS_PROOF_BYTES;
                continue;
            } else {
                establish(t, p);
            }
            return;
        }
    }
}

void tfc_transport_reap(tfc_transport *t, int all) {
    for (tfc_conn **p = &t->conns; *p != NULL;) {
        tfc_conn *c = *p;
        if (all || tfc_transport_flag(&c->done)) {
            if (all) shutdown(c->fd, SHUT_RDWR);
            pthread_join(c->thread, NULL);
            close(c->fd);
            *p = c->next;
            pthread_mutex_lock(&t->lock);
            c->account->conns -= 1;
            tfc_account_put(t, c->account);
            pthread_mutex_unlock(&t->lock);
            TFC_FREE(c->staging);
            TFC_FREE(c);
        } else {
            p = &c->next;
        }
    }
}

static void accept_one(tfc_transport *t, pending *p) {
    struct sockaddr_storage addr;
    socklen_t len = sizeof addr;
    int fd = accept(t->listen_fd, (struct sockaddr *)&addr, &len);
    if (fd < 0) return;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    memset(p, 0, sizeof *p);
    p->fd = fd;
    describe_peer(&addr, p->peer, sizeof p->peer);
    p->deadline = tfc_wire_now_ms() + t->io_timeout_ms;
    p->stage = HS_HELLO;
    p->need = TFC_HS_HELLO_BYTES;
    advance(t, p); /* the hello is often there already */
}

void *tfc_transport_accept_main(void *arg) {
    tfc_transport *t = (tfc_transport *)arg;
    int cap = t->max_handshakes;
    pending *ps = (pending *)TFC_MALLOC((size_t)cap * sizeof *ps);
    struct pollfd *fds = (struct pollfd *)TFC_MALLOC((size_t)(cap + 2) * sizeof *fds);
    int *which = (int *)TFC_MALLOC((size_t)(cap + 2) * sizeof *which);
    if (ps == NULL || fds == NULL || which == NULL) {
        tfc_transport_log(t, "error", "out of memory: accepting no connections");
        TFC_FREE(ps), TFC_FREE(fds), TFC_FREE(which);
        return NULL;
    }
    for (int i = 0; i < cap; ++i) ps[i].fd = -1;
    while (!tfc_transport_flag(&t->stop)) {
        int n = 0, free_slot = -1;
        int64_t now = tfc_wire_now_ms(), wait_ms = 1000;
        fds[n].fd = t->wake[0], fds[n].events = POLLIN, which[n++] = -2;
        for (int i = 0; i < cap; ++i) {
            pending *p = &ps[i];
            if (p->fd >= 0 && now >= p->deadline) {
                char why[128];
                TFC_SNPRINTF(why, sizeof why, "handshake (%s): timed out (a handshake gets %"
                             PRId64 " ms)", p->stage <= HS_REPLY ? "hello" : "proof",
                             t->io_timeout_ms);
                refused(t, p, why);
                drop(p);
            }
            if (p->fd < 0) {
                if (free_slot < 0) free_slot = i;
                continue;
            }
            int out = p->stage == HS_REPLY || p->stage == HS_ACK;
            fds[n].fd = p->fd, fds[n].events = out ? POLLOUT : POLLIN, which[n++] = i;
            if (p->deadline - now < wait_ms) wait_ms = p->deadline - now;
        }
        if (free_slot >= 0) /* at max_handshakes, new connections wait in the backlog */
            fds[n].fd = t->listen_fd, fds[n].events = POLLIN, which[n++] = -1;
        for (int i = 0; i < n; ++i) fds[i].revents = 0;
        int r = poll(fds, (nfds_t)n, (int)(wait_ms > 0 ? wait_ms : 0));
        tfc_transport_reap(t, 0);
        if (r <= 0) continue;
        for (int i = 0; i < n; ++i) {
            if (fds[i].revents == 0) continue;
            if (which[i] >= 0) advance(t, &ps[which[i]]);
            else if (which[i] == -1) accept_one(t, &ps[free_slot]);
        }
    }
    for (int i = 0; i < cap; ++i) drop(&ps[i]);
    TFC_FREE(ps), TFC_FREE(fds), TFC_FREE(which);
    return NULL;
}
