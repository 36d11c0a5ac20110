/* Shared by the transport's C files: the frame and handshake layouts and their decoders,
 * socket I/O with deadlines, and the transport's state. */
#ifndef TFC_TRANSPORT_INTERNAL_H
#define TFC_TRANSPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tfc_transport.h"

#define TFC_WIRE_MAGIC 0x46434654u     /* the bytes "TFCF" read little-endian */
#define TFC_WIRE_HELLO 0x48434654u     /* "TFCH": the handshake's messages */
#define TFC_WIRE_ACK 0x41434654u       /* "TFCA": the server's verdict */
#define TFC_WIRE_VERSION 1             /* of frames */
#define TFC_WIRE_HANDSHAKE_VERSION 2   /* 2: the client names itself, the server its idle time */
#define TFC_WIRE_HEADER_BYTES 32
#define TFC_WIRE_NONCE_BYTES 32
#define TFC_WIRE_NAME_BYTES 32 /* TFC_TRANSPORT_MAX_NAME characters, NUL-padded */
#define TFC_WIRE_CHUNK (1024 * 1024) /* payload bytes checksummed (and converted) per step */
#define TFC_WIRE_WAKE_MS 100
/* The most a frame's fixed part, dims and key take (a key's NUL included). */
#define TFC_WIRE_HEAD_MAX (TFC_WIRE_HEADER_BYTES + 8 * TFC_TRANSPORT_MAX_RANK + \
                           TFC_TRANSPORT_MAX_KEY + 1)

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
/* Bytes of dims and key that follow a decoded fixed part. */
size_t tfc_wire_rest_bytes(const tfc_wire_header *h);
/* After the fixed part and the tfc_wire_rest_bytes that follow it are in `head` (room for
 * TFC_WIRE_HEAD_MAX bytes): the dims decoded into h and checked against the payload bytes,
 * the key checked (no NUL) and NUL-terminated in place. 0, or -1 with the reason in `why`. */
int tfc_wire_decode_rest(uint8_t *head, tfc_wire_header *h, char *why, size_t cap);
/* After the dims are read: each >= 0, and payload bytes == prod(dims) * wire dtype size. */
int tfc_wire_check_dims(const tfc_wire_header *h, char *why, size_t cap);
/* Elements in dims[0..rank) (1 for a scalar); -1 on overflow or a negative dim. */
int64_t tfc_wire_count(int rank, const int64_t *dims);
/* "float32[2,3]" */
void tfc_wire_describe(int dtype, int rank, const int64_t *dims, char *out, size_t cap);
const char *tfc_wire_dtype_name(int dtype);
/* `in` (n bytes) with every byte that is not printable ASCII written as \xNN, NUL-terminated
 * and cut to fit `cap`: what a peer sent, made safe for a log line. */
void tfc_wire_escape(const char *in, size_t n, char *out, size_t cap);

void tfc_wire_put_u16(uint8_t *p, uint16_t v);
void tfc_wire_put_u32(uint8_t *p, uint32_t v);
void tfc_wire_put_u64(uint8_t *p, uint64_t v);
uint16_t tfc_wire_get_u16(const uint8_t *p);
uint32_t tfc_wire_get_u32(const uint8_t *p);
uint64_t tfc_wire_get_u64(const uint8_t *p);

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t tfc_wire_now_ms(void);

/* Socket I/O on a connected fd set up by tfc_wire_socket_options. Reads and writes end by
 * `deadline_ms` (an absolute tfc_wire_now_ms time; -1: none) or, for writes, after `stall_ms`
 * without progress (-1: no limit); `*stop` (may be NULL), checked at least every
 * TFC_WIRE_WAKE_MS, ends them too. Results: */
enum {
    TFC_IO_OK = 0,
    TFC_IO_CLOSED = 1,  /* the peer closed (EOF) before all bytes came */
    TFC_IO_TIMEOUT = 2, /* the deadline passed, or no progress for stall_ms */
    TFC_IO_ERROR = 3,   /* errno says which */
    TFC_IO_STOPPED = 4  /* *stop became non-zero */
};
int tfc_wire_read_by(int fd, void *buf, size_t n, int64_t deadline_ms, const int *stop,
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
/* 1 when `name` is 1 to TFC_TRANSPORT_MAX_NAME printable ASCII characters without a space. */
int tfc_wire_name_valid(const char *name);

/* ---- the handshake (tfc_transport_handshake.c) ----
 *
 *   client -> server  HELLO  u32 "TFCH" | u16 version | u16 flags (1: has a token) | nonce_c[32]
 *                            | name[32] (the client's name, NUL-padded)
 *   server -> client  REPLY  u32 "TFCH" | u16 version | u16 flags (1: has a token, 2: refused)
 *                            | nonce_s[32] | u32 idle timeout ms (0: none)
 *                            | mac_s[32] = HMAC(token, "tfc server" nonce_c nonce_s name idle)
 *   client -> server  PROOF  u32 "TFCH" | mac_c[32] = HMAC(token, "tfc client" nonce_s nonce_c
 *                            name)
 *   server -> client  ACK    u32 "TFCA" | u32 verdict (TFC_VERDICT_*)
 * Without tokens both MACs are zeros. The messages are decoded by pure functions (no I/O),
 * which the fuzz harness (tests/fuzz/transport_fuzz.c) drives with arbitrary bytes. */
#define TFC_HS_HELLO_BYTES (8 + TFC_WIRE_NONCE_BYTES + TFC_WIRE_NAME_BYTES)
#define TFC_HS_REPLY_BYTES (8 + TFC_WIRE_NONCE_BYTES + 4 + 32)
#define TFC_HS_PROOF_BYTES (4 + 32)
#define TFC_HS_ACK_BYTES 8
enum {
    TFC_VERDICT_ACCEPTED = 0,
    TFC_VERDICT_WRONG_TOKEN = 1,
    TFC_VERDICT_UNKNOWN_PEER = 2, /* the server takes nothing from a peer of that name */
    TFC_VERDICT_BUSY = 3          /* the server has max_connections already */
};

/* What a server knows of one connection between HELLO and PROOF. */
typedef struct {
    uint8_t nonce_c[TFC_WIRE_NONCE_BYTES], nonce_s[TFC_WIRE_NONCE_BYTES];
    char name[TFC_WIRE_NAME_BYTES + 1];
} tfc_handshake_server;

/* The server's reply to `hello` (nonce_s: fresh random bytes). TFC_OK: send `reply` and read
 * the PROOF. An error code with `why`: when *reply_len > 0 send `reply` (it says refused) and
 * close, else (not a tfc peer at all) just close. */
int tfc_handshake_server_hello(tfc_handshake_server *s, const uint8_t hello[TFC_HS_HELLO_BYTES],
                               const char *token, uint32_t idle_ms,
                               const uint8_t nonce_s[TFC_WIRE_NONCE_BYTES],
                               uint8_t reply[TFC_HS_REPLY_BYTES], size_t *reply_len, char *why,
                               size_t cap);
/* Check the PROOF; `ack` is what to send either way. TFC_OK when the client holds the token
 * (the caller may still refuse it with tfc_handshake_set_verdict). */
int tfc_handshake_server_proof(const tfc_handshake_server *s,
                               const uint8_t proof[TFC_HS_PROOF_BYTES], const char *token,
                               uint8_t ack[TFC_HS_ACK_BYTES], char *why, size_t cap);
void tfc_handshake_set_verdict(uint8_t ack[TFC_HS_ACK_BYTES], uint32_t verdict);

/* What a client knows between HELLO and ACK. */
typedef struct {
    uint8_t hello[TFC_HS_HELLO_BYTES];
    uint32_t idle_ms; /* the server's idle timeout, from its reply */
} tfc_handshake_client;

/* The HELLO of a client named `name` with nonce `nonce_c`. */
void tfc_handshake_client_hello(tfc_handshake_client *c, const char *token, const char *name,
                                const uint8_t nonce_c[TFC_WIRE_NONCE_BYTES]);
/* Check the server's reply and make the PROOF. TFC_OK, or a code with `why`; for
 * TFC_ERR_PERMISSION_DENIED of a server that proved another token the PROOF is still made
 * (*send_proof = 1: send it, so that the server logs why, then fail). */
int tfc_handshake_client_reply(tfc_handshake_client *c, const uint8_t reply[TFC_HS_REPLY_BYTES],
                               const char *token, uint8_t proof[TFC_HS_PROOF_BYTES],
                               int *send_proof, char *why, size_t cap);
/* The server's verdict: TFC_OK, or why not (TFC_ERR_UNAVAILABLE for a busy server: retry). */
int tfc_handshake_client_ack(const uint8_t ack[TFC_HS_ACK_BYTES], const char *name, char *why,
                             size_t cap);
/* The client's whole handshake over a connected socket, done by `timeout_ms` from now. */
int tfc_handshake_client_run(int fd, const char *token, const char *name, int64_t timeout_ms,
                             const int *stop, uint32_t *idle_ms, char *why, size_t cap);

/* ---- the transport's state ---- */
#include <pthread.h>

enum { ENTRY_ARRIVED, ENTRY_POSTED, ENTRY_FILLING, ENTRY_DONE };

/* A peer by the name it gave in the handshake: its connections and what it has in the table. */
typedef struct tfc_account {
    struct tfc_account *next;
    char name[TFC_WIRE_NAME_BYTES + 1];
    int conns;
    int64_t held_bytes, held_tensors;
} tfc_account;

struct tfc_slot;

/* One rendezvous entry: a tensor that arrived before its recv (owns `data`), or a recv waiting
 * for its tensor (lives on the recv's stack; the reader thread fills `want` in place). */
typedef struct tfc_entry {
    struct tfc_entry *next; /* in its slot, oldest first */
    struct tfc_slot *slot;
    int64_t step; /* TFC_TRANSPORT_ANY_STEP in a POSTED entry matches every step */
    int state;
    int dtype, rank;
    int64_t dims[TFC_TRANSPORT_MAX_RANK];
    void *data;
    int64_t nbytes;
    tfc_account *from;          /* ARRIVED: the peer it is counted against */
    tfc_transport_tensor *want; /* POSTED */
    int64_t got_step;           /* DONE */
} tfc_entry;

/* Everything under one key: a hash table's node. A route's slot lives as long as the
 * transport; another lives while it holds entries. */
typedef struct tfc_slot {
    struct tfc_slot *next; /* in its bucket */
    uint64_t hash;
    char *key;
    char peer[TFC_WIRE_NAME_BYTES + 1]; /* a route's: the only peer that may send it */
    int64_t max_bytes;
    int route;
    tfc_entry *head, *tail;
} tfc_slot;

typedef struct tfc_conn {
    struct tfc_conn *next;
    tfc_transport *t;
    int fd;
    char peer[80]; /* "ip:port" */
    tfc_account *account;
    int64_t opened_ms;
    pthread_t thread;
    int done, kicked;
    uint8_t *staging; /* TFC_WIRE_CHUNK bytes when 16-bit floats arrive */
} tfc_conn;

typedef struct {
    char address[256];
    int fd;
    int64_t idle_ms, last_ms; /* the server's idle timeout; the connection's last use */
    pthread_mutex_t lock;     /* serialises the sends to this peer */
    uint8_t *staging;
} tfc_peer;

struct tfc_transport {
    char *name, *token;
    int wire_dtype;
    int64_t connect_timeout_ms, io_timeout_ms, max_frame_bytes, idle_ms;
    int max_conns, max_conns_per_peer, max_handshakes;
    int64_t max_held_bytes, max_held_bytes_per_peer, max_held_tensors,
        max_held_tensors_per_peer, keep_steps;
    int routed; /* routes were given: only they are accepted */
    int listen_fd, port;
    int wake[2];
    pthread_t accept_thread;
    int stop;      /* destroy: readers and the accept loop end */
    int cancelled; /* cancel: blocked calls end */
    pthread_mutex_t lock; /* the table, the accounts, held counts */
    pthread_cond_t cond;
    tfc_slot **buckets;
    size_t n_buckets, n_slots;
    tfc_account *accounts;
    int64_t held_bytes, held_tensors;
    tfc_conn *conns; /* the accept thread's: it adds, kicks, reaps */
    pthread_mutex_t peers_lock;
    tfc_peer **peers;
    int n_peers, cap_peers;
    tfc_transport_stats stats;
};

#define TFC_STAT_ADD(t, field, n) \
    __atomic_fetch_add(&(t)->stats.field, (int64_t)(n), __ATOMIC_RELAXED)

/* A log line "transport NAME: ..." through TFC_LOG, every byte outside printable ASCII
 * escaped (keys and names come from peers). */
void tfc_transport_log(tfc_transport *t, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int tfc_transport_flag(const int *flag);
/* A connected socket: TCP_NODELAY, close-on-exec, blocking calls that return at least every
 * TFC_WIRE_WAKE_MS (SO_RCVTIMEO, SO_SNDTIMEO). */
void tfc_wire_socket_options(int fd);

/* The accept loop (tfc_transport_accept.c): handshakes, connection limits, reader threads. */
void *tfc_transport_accept_main(void *arg);
void tfc_transport_reap(tfc_transport *t, int all);
/* A reader thread's body (tfc_transport_read.c): frames until the connection ends. */
void *tfc_transport_reader_main(void *arg);

/* ---- the rendezvous table (tfc_rendezvous.c); t->lock held unless said otherwise ---- */
/* The slot of `key`, or NULL; with `create`, a new (non-route) one when absent (NULL: OOM). */
tfc_slot *tfc_rendezvous_slot(tfc_transport *t, const char *key, int create);
/* Add the config's routes as permanent slots (at create; no lock needed). */
int tfc_rendezvous_add_routes(tfc_transport *t, const tfc_transport_route *routes, int n,
                              tfc_error *err);
/* The first entry of `state` under (key, step) in `slot` (may be NULL). */
tfc_entry *tfc_rendezvous_find(tfc_slot *slot, int state, int64_t step);
void tfc_rendezvous_append(tfc_slot *slot, tfc_entry *e);
/* Take `e` out of its slot (a slot left empty that is no route is freed). */
void tfc_rendezvous_unlink(tfc_transport *t, tfc_entry *e);
/* Unlink an arrived tensor nobody received, release what it counted and free it. */
void tfc_rendezvous_drop(tfc_transport *t, tfc_entry *e);
/* Count `nbytes` more against the caps of `from` and of the whole transport: 0, or -1 with
 * the cap that would be passed in `why`. */
int tfc_rendezvous_reserve(tfc_transport *t, tfc_account *from, int64_t nbytes, char *why,
                           size_t cap);
void tfc_rendezvous_release(tfc_transport *t, tfc_account *from, int64_t nbytes);
/* Apply keep_steps to `slot` before a tensor of `step` joins it: evict the arrived tensors more
 * than keep_steps steps behind it. By step, not by count: the keys a peer sends each step see
 * the same steps, so they keep the same ones (a count would drop one key's step and keep
 * another's while a recv is taking them one by one). */
void tfc_rendezvous_evict(tfc_transport *t, tfc_slot *slot, int64_t step);
/* The account of `name`, made when absent (NULL: out of memory), and its release when it has
 * neither connections nor tensors left. */
tfc_account *tfc_account_get(tfc_transport *t, const char *name);
void tfc_account_put(tfc_transport *t, tfc_account *a);
/* Does a frame of (dtype, rank, dims, nbytes) fit what the recv asked for? (no lock) */
int tfc_rendezvous_fits(const tfc_transport_tensor *want, int dtype, int rank,
                        const int64_t *dims, int64_t nbytes);
/* Free everything in the table (destroy). */
void tfc_rendezvous_free_all(tfc_transport *t);

#endif /* TFC_TRANSPORT_INTERNAL_H */
