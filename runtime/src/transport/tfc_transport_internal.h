/* Shared by the transport's C files: the frame and handshake layouts, socket I/O with deadlines. */
#ifndef TFC_TRANSPORT_INTERNAL_H
#define TFC_TRANSPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tfc_transport.h"

#define TFC_WIRE_MAGIC 0x46434654u     /* the bytes "TFCF" read little-endian */
#define TFC_WIRE_HELLO 0x48434654u     /* "TFCH": the handshake's messages */
#define TFC_WIRE_ACK 0x41434654u       /* "TFCA": the server's verdict */
#define TFC_WIRE_VERSION 1
#define TFC_WIRE_HEADER_BYTES 32
#define TFC_WIRE_NONCE_BYTES 32
#define TFC_WIRE_CHUNK (1024 * 1024) /* payload bytes checksummed (and converted) per step */
#define TFC_WIRE_WAKE_MS 100

/* The fixed part of a frame, decoded. */
typedef struct {
    int64_t step;
    uint32_t key_len;
    int dtype, wire_dtype, rank;
    uint64_t payload_bytes;
    int64_t dims[TFC_TRANSPORT_MAX_RANK];
} tfc_wire_header;

/* 32 bytes: magic, version, step, key length, dtype, wire dtype, rank, payload bytes. */
void tfc_wire_encode_header(const tfc_wire_header *h, uint8_t out[TFC_WIRE_HEADER_BYTES]);
/* Decode and validate the fixed part (magic, version, reserved, key length, dtype, wire dtype,
 * rank, payload bytes against max_frame_bytes). 0, or -1 with "field: problem" in `why`. */
int tfc_wire_decode_header(const uint8_t in[TFC_WIRE_HEADER_BYTES], int64_t max_frame_bytes,
                           tfc_wire_header *h, char *why, size_t cap);
/* After the dims are read: each >= 0, and payload bytes == prod(dims) * wire dtype size. */
int tfc_wire_check_dims(const tfc_wire_header *h, char *why, size_t cap);
/* Elements in dims[0..rank) (1 for a scalar); -1 on overflow or a negative dim. */
int64_t tfc_wire_count(int rank, const int64_t *dims);
/* "float32[2,3]" */
void tfc_wire_describe(int dtype, int rank, const int64_t *dims, char *out, size_t cap);
const char *tfc_wire_dtype_name(int dtype);

void tfc_wire_put_u16(uint8_t *p, uint16_t v);
void tfc_wire_put_u32(uint8_t *p, uint32_t v);
void tfc_wire_put_u64(uint8_t *p, uint64_t v);
uint16_t tfc_wire_get_u16(const uint8_t *p);
uint32_t tfc_wire_get_u32(const uint8_t *p);
uint64_t tfc_wire_get_u64(const uint8_t *p);

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t tfc_wire_now_ms(void);

/* Socket I/O on a connected fd set up by tfc_wire_socket_options: a wait for progress lasts at
 * most `stall_ms` (-1: no limit), and `*stop` (may be NULL), checked at least every
 * TFC_WIRE_WAKE_MS, ends it. Results: */
enum {
    TFC_IO_OK = 0,
    TFC_IO_CLOSED = 1,  /* the peer closed (EOF) before all bytes came */
    TFC_IO_TIMEOUT = 2, /* no progress for stall_ms */
    TFC_IO_ERROR = 3,   /* errno says which */
    TFC_IO_STOPPED = 4  /* *stop became non-zero */
};
int tfc_wire_read_full(int fd, void *buf, size_t n, int64_t stall_ms, const int *stop,
                       size_t *got);
int tfc_wire_write_full(int fd, const void *buf, size_t n, int64_t stall_ms,
                        const int *stop);
/* The same; `more` says that more of the frame follows at once (MSG_MORE: the kernel need not
 * push a short segment out on its own). */
int tfc_wire_write_flags(int fd, const void *buf, size_t n, int64_t stall_ms, const int *stop,
                         int more);
const char *tfc_wire_io_name(int io_status);

/* Fill `buf` with `n` bytes from the OS's random source; 0 on success. */
int tfc_wire_random(void *buf, size_t n);
/* 1 when the 32-byte MACs are equal, compared in constant time. */
int tfc_wire_mac_equal(const uint8_t *a, const uint8_t *b);

/* The handshake (tfc_transport_handshake.c). `token` NULL or "" means none. Both return TFC_OK
 * or a TFC_ERR_* code with the reason in `why` (the client's is for err->msg, the server's is
 * logged by the caller, naming the peer). */
int tfc_handshake_client(int fd, const char *token, int64_t timeout_ms,
                         const int *stop, char *why, size_t cap);
int tfc_handshake_server(int fd, const char *token, int64_t timeout_ms,
                         const int *stop, char *why, size_t cap);

/* ---- the transport's state (tfc_transport.c, tfc_rendezvous.c, tfc_transport_send.c) ---- */
#include <pthread.h>

enum { ENTRY_ARRIVED, ENTRY_POSTED, ENTRY_FILLING, ENTRY_DONE };

/* One rendezvous slot: a tensor that arrived before its recv (owns `data`), or a recv waiting
 * for its tensor (lives on the recv's stack; the reader thread fills `want` in place). */
typedef struct tfc_entry {
    struct tfc_entry *next;
    const char *key; /* owned (malloc) when ARRIVED, the caller's when POSTED */
    int64_t step;    /* TFC_TRANSPORT_ANY_STEP in a POSTED entry matches every step */
    int state;
    int dtype, rank;
    int64_t dims[TFC_TRANSPORT_MAX_RANK];
    void *data;
    int64_t nbytes;
    tfc_transport_tensor *want; /* POSTED */
    int64_t got_step;           /* DONE */
} tfc_entry;

typedef struct tfc_conn {
    struct tfc_conn *next;
    tfc_transport *t;
    int fd;
    char peer[80]; /* "ip:port" */
    pthread_t thread;
    int done;
    uint8_t *staging; /* TFC_WIRE_CHUNK bytes when 16-bit floats arrive */
} tfc_conn;

typedef struct {
    char address[256];
    int fd;
    pthread_mutex_t lock; /* serialises the sends to this peer */
    uint8_t *staging;
} tfc_peer;

struct tfc_transport {
    char *name, *token;
    int wire_dtype;
    int64_t connect_timeout_ms, io_timeout_ms, max_frame_bytes;
    int listen_fd, port;
    int wake[2];
    pthread_t accept_thread;
    int stop;      /* destroy: readers and the accept loop end */
    int cancelled; /* cancel: blocked calls end */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    tfc_entry *entries; /* in arrival order */
    tfc_conn *conns;    /* guarded by the accept thread until destroy joins it */
    pthread_mutex_t peers_lock;
    tfc_peer **peers;
    int n_peers, cap_peers;
    tfc_transport_stats stats;
};

#define TFC_STAT_ADD(t, field, n) \
    __atomic_fetch_add(&(t)->stats.field, (int64_t)(n), __ATOMIC_RELAXED)

/* A log line "transport NAME: ..." through TFC_LOG. */
void tfc_transport_log(tfc_transport *t, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int tfc_transport_flag(const int *flag);
/* A connected socket: TCP_NODELAY, close-on-exec, blocking calls that return at least every
 * TFC_WIRE_WAKE_MS (SO_RCVTIMEO, SO_SNDTIMEO). */
void tfc_wire_socket_options(int fd);

/* The rendezvous table; t->lock held. */
tfc_entry *tfc_rendezvous_find(tfc_transport *t, int state, const char *key, int64_t step);
void tfc_rendezvous_unlink(tfc_transport *t, tfc_entry *gone);
void tfc_rendezvous_append(tfc_transport *t, tfc_entry *e);
/* Does a frame of (dtype, rank, dims, nbytes) fit what the recv asked for? */
int tfc_rendezvous_fits(const tfc_transport_tensor *want, int dtype, int rank,
                        const int64_t *dims, int64_t nbytes);

#endif /* TFC_TRANSPORT_INTERNAL_H */
