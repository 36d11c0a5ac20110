/* Inbound frames: the reader thread of one accepted connection. A frame must arrive whole by
 * its deadline, its key must be routed from this peer, and what it would add to the table
 * must fit the caps: otherwise the connection is closed before its payload is read. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tfc_transport_internal.h"

enum { FRAME_OK = 0, FRAME_END = 1, FRAME_IDLE = 2, FRAME_BAD = -1, FRAME_REFUSED = -2 };

/* Is this frame's key one this task takes from this peer? (t->lock held; released on a
 * refusal) */
static int check_route(tfc_conn *c, const tfc_slot *slot, const char *key, int64_t nbytes,
                       char *why, size_t cap) {
    tfc_transport *t = c->t;
    if (!t->routed) return FRAME_OK;
    if (slot == NULL || !slot->route)
        TFC_SNPRINTF(why, cap, "refused: key '%s' is not one this task receives", key);
    else if (strcmp(slot->peer, c->account->name) != 0)
        TFC_SNPRINTF(why, cap, "refused: key '%s' comes from %s only, not from %s", key,
                     slot->peer, c->account->name);
    else if (slot->max_bytes > 0 && nbytes > slot->max_bytes)
        TFC_SNPRINTF(why, cap, "refused: key '%s' carries at most %" PRId64 " bytes, this frame "
                     "%" PRId64, key, slot->max_bytes, nbytes);
    else
        return FRAME_OK;
    pthread_mutex_unlock(&t->lock);
    return FRAME_REFUSED;
}

/* Read one frame into the table; *last is when the previous frame ended. */
static int read_frame(tfc_conn *c, int64_t *last, char *why, size_t cap) {
    tfc_transport *t = c->t;
    uint8_t head[TFC_WIRE_HEAD_MAX];
    size_t got = 0;
    int64_t idle_deadline = t->idle_ms > 0 ? *last + t->idle_ms : -1;
    int io = tfc_wire_read_by(c->fd, head, 1, idle_deadline, &t->stop, &got);
    if (io == TFC_IO_CLOSED && got == 0) return FRAME_END;
    if (io == TFC_IO_TIMEOUT && got == 0) {
        TFC_SNPRINTF(why, cap, "no frame for %" PRId64 " ms", t->idle_ms);
        return FRAME_IDLE;
    }
    /* from its first byte, a frame has one deadline: a peer trickling bytes gains nothing */
    int64_t deadline = tfc_wire_now_ms() + t->io_timeout_ms;
    if (io == TFC_IO_OK)
        io = tfc_wire_read_by(c->fd, head + 1, TFC_WIRE_HEADER_BYTES - 1, deadline, &t->stop,
                              NULL);
    if (io != TFC_IO_OK) {
        TFC_SNPRINTF(why, cap, "truncated: header: %s (a header, dims and key get %" PRId64
                     " ms)", tfc_wire_io_name(io), t->io_timeout_ms);
        return FRAME_BAD;
    }
    tfc_wire_header h;
    if (tfc_wire_decode_header(head, t->max_frame_bytes, &h, why, cap) != 0) return FRAME_BAD;
    size_t head_bytes = TFC_WIRE_HEADER_BYTES + tfc_wire_rest_bytes(&h);
    io = tfc_wire_read_by(c->fd, head + TFC_WIRE_HEADER_BYTES, tfc_wire_rest_bytes(&h), deadline,
                          &t->stop, NULL);
    if (io != TFC_IO_OK) {
        TFC_SNPRINTF(why, cap, "truncated: dims and key: %s (a header, dims and key get %" PRId64
                     " ms)", tfc_wire_io_name(io), t->io_timeout_ms);
        return FRAME_BAD;
    }
    if (tfc_wire_decode_rest(head, &h, why, cap) != 0) return FRAME_BAD;
    const char *key = (const char *)head + TFC_WIRE_HEADER_BYTES + 8 * h.rank;
    uint32_t crc = tfc_crc32c(0, head, head_bytes);
    int64_t count = tfc_wire_count(h.rank, h.dims);
    int64_t nbytes = count * tfc_transport_dtype_size(h.dtype);
    int64_t payload_ms = (int64_t)(h.payload_bytes / (TFC_TRANSPORT_MIN_RATE / 1000));
    deadline += payload_ms;
    if (h.wire_dtype != h.dtype && c->staging == NULL &&
        (c->staging = (uint8_t *)TFC_MALLOC(TFC_WIRE_CHUNK)) == NULL) {
        TFC_SNPRINTF(why, cap, "payload: out of memory");
        return FRAME_BAD;
    }

    /* a recv already waiting for this tensor gets it in place; otherwise it waits in the table,
     * counted against this peer's caps from now on */
    pthread_mutex_lock(&t->lock);
    tfc_slot *slot = tfc_rendezvous_slot(t, key, 0);
    int verdict = check_route(c, slot, key, nbytes, why, cap);
    if (verdict != FRAME_OK) return verdict;
    /* sent again (a resend after a hello): the newer one replaces the one waiting */
    tfc_entry *again = tfc_rendezvous_find(slot, ENTRY_ARRIVED, h.step);
    if (again != NULL) {
        tfc_rendezvous_drop(t, again);
        slot = tfc_rendezvous_slot(t, key, 0);
    }
    tfc_entry *posted = tfc_rendezvous_find(slot, ENTRY_POSTED, h.step);
    if (posted != NULL && !tfc_rendezvous_fits(posted->want, h.dtype, h.rank, h.dims, nbytes))
        posted = NULL;
    if (posted != NULL) {
        posted->state = ENTRY_FILLING;
    } else if (tfc_rendezvous_reserve(t, c->account, nbytes, why, cap) != 0) {
        pthread_mutex_unlock(&t->lock);
        return FRAME_REFUSED;
    }
    pthread_mutex_unlock(&t->lock);

    tfc_entry *arrived = NULL;
    uint8_t *dest;
    if (posted != NULL) {
        dest = (uint8_t *)posted->want->data;
    } else {
        arrived = (tfc_entry *)TFC_MALLOC(sizeof *arrived);
        dest = (uint8_t *)TFC_MALLOC(nbytes > 0 ? (size_t)nbytes : 1u);
        if (arrived == NULL || dest == NULL) {
            TFC_FREE(arrived), TFC_FREE(dest);
            pthread_mutex_lock(&t->lock);
            tfc_rendezvous_release(t, c->account, nbytes);
            pthread_mutex_unlock(&t->lock);
            TFC_SNPRINTF(why, cap, "payload: out of memory for %" PRId64 " bytes", nbytes);
            return FRAME_BAD;
        }
        memset(arrived, 0, sizeof *arrived);
    }
    int64_t wire_size = tfc_transport_dtype_size(h.wire_dtype);
    int64_t size = tfc_transport_dtype_size(h.dtype);
    for (uint64_t off = 0; off < h.payload_bytes && io == TFC_IO_OK;) {
        size_t n = h.payload_bytes - off < TFC_WIRE_CHUNK ? (size_t)(h.payload_bytes - off)
                                                          : (size_t)TFC_WIRE_CHUNK;
        if (arrived != NULL && off > 0) { /* a recv posted since the header came: switch to it */
            pthread_mutex_lock(&t->lock);
            tfc_entry *late = tfc_rendezvous_find(tfc_rendezvous_slot(t, key, 0), ENTRY_POSTED,
                                                  h.step);
            if (late != NULL && tfc_rendezvous_fits(late->want, h.dtype, h.rank, h.dims, nbytes)) {
                late->state = ENTRY_FILLING;
                tfc_rendezvous_release(t, c->account, nbytes);
            } else {
                late = NULL;
            }
            pthread_mutex_unlock(&t->lock);
            if (late != NULL) {
                size_t done = (size_t)(off / (uint64_t)wire_size * (uint64_t)size);
                memcpy(late->want->data, dest, done);
                TFC_FREE(dest), TFC_FREE(arrived);
                arrived = NULL;
                posted = late;
                dest = (uint8_t *)late->want->data;
            }
        }
        uint8_t *into = h.wire_dtype == h.dtype ? dest + off : c->staging;
        io = tfc_wire_read_by(c->fd, into, n, deadline, &t->stop, NULL);
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
    if (io == TFC_IO_OK) io = tfc_wire_read_by(c->fd, tail, 4, deadline, &t->stop, NULL);
    int bad = io != TFC_IO_OK;
    if (bad) {
        TFC_SNPRINTF(why, cap, "truncated: payload of '%s': %s (%" PRIu64 " bytes get %" PRId64
                     " ms)", key, tfc_wire_io_name(io), h.payload_bytes,
                     t->io_timeout_ms + payload_ms);
    } else if (tfc_wire_get_u32(tail) != crc) {
        TFC_SNPRINTF(why, cap, "crc32c: the frame of '%s' says 0x%08" PRIx32
                     ", its bytes sum to 0x%08" PRIx32, key, tfc_wire_get_u32(tail), crc);
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
        slot = tfc_rendezvous_slot(t, key, 1);
        if (slot == NULL) {
            TFC_SNPRINTF(why, cap, "key '%s': out of memory", key);
            bad = 1;
        } else {
            arrived->step = h.step;
            arrived->state = ENTRY_ARRIVED;
            arrived->dtype = h.dtype;
            arrived->rank = h.rank;
            memcpy(arrived->dims, h.dims, sizeof h.dims);
            arrived->data = dest;
            arrived->nbytes = nbytes;
            arrived->from = c->account;
            tfc_rendezvous_evict(t, slot, h.step);
            tfc_rendezvous_append(slot, arrived);
        }
    }
    if (bad && arrived != NULL) tfc_rendezvous_release(t, c->account, nbytes);
    if (!bad) { /* counted before a receiver can see the tensor: its stats then include it */
        TFC_STAT_ADD(t, frames_received, 1);
        TFC_STAT_ADD(t, bytes_received, head_bytes + h.payload_bytes + 4u);
    }
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    if (bad) {
        if (arrived != NULL) TFC_FREE(arrived), TFC_FREE(dest);
        return FRAME_BAD;
    }
    *last = tfc_wire_now_ms();
    return FRAME_OK;
}

void *tfc_transport_reader_main(void *arg) {
    tfc_conn *c = (tfc_conn *)arg;
    tfc_transport *t = c->t;
    char why[1536];
    int64_t last = tfc_wire_now_ms();
    int r;
    while ((r = read_frame(c, &last, why, sizeof why)) == FRAME_OK) {
    }
    if (!tfc_transport_flag(&t->stop) && !tfc_transport_flag(&c->kicked)) {
        if (r == FRAME_IDLE) {
            TFC_STAT_ADD(t, closed_connections, 1);
            tfc_transport_log(t, "info", "closing the idle connection from %s (%s): %s",
                              c->peer, c->account->name, why);
        } else if (r < 0) {
            TFC_STAT_ADD(t, bad_frames, 1);
            if (r == FRAME_REFUSED) TFC_STAT_ADD(t, refused_frames, 1);
            tfc_transport_log(t, "error", "bad frame from %s (%s): %s; closing that connection",
                              c->peer, c->account->name, why);
        }
    }
    shutdown(c->fd, SHUT_RDWR); /* the accept thread closes the fd when it reaps this thread */
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}
