/* Tensor transport between the tasks of a distributed program: the whitepaper's Send/Recv over TCP.
 *
 * Every task owns one tfc_transport. It listens on host:port (127.0.0.1 unless told otherwise);
 * a background thread accepts connections and runs their handshakes itself (no thread is
 * started for a connection that has not completed one), then gives each accepted connection a
 * reader thread of its own, so a peer that misbehaves (bad frame, stalls, disconnects) is
 * closed and logged while the others keep being served. To send, a task connects to the
 * receiving task (tfc_transport_connect, which retries with exponential backoff, so tasks may
 * start in any order) and calls tfc_transport_send; the frame lands in the receiver's
 * rendezvous table under (key, step) until a tfc_transport_recv there takes it. A recv posted
 * before its tensor arrives is filled in place (no extra copy). Connections are one-way:
 * A -> B carries A's sends to B; B sends to A over a connection of its own.
 *
 * Rendezvous keys are strings (at most TFC_TRANSPORT_MAX_KEY bytes), unique per step as the
 * whitepaper's Send/Recv pairs are, e.g. "/job:worker/task:0;/job:ps/task:0;W/read:0". The
 * step id is the caller's (the global step, or any counter both sides agree on).
 *
 * The wire format, per tensor, little-endian (tfc_wire.c):
 *   u32 magic "TFCF" | u16 version | u16 reserved (0) | i64 step | u32 key length |
 *   u8 dtype | u8 wire dtype | u8 rank | u8 reserved (0) | u64 payload bytes |
 *   i64 dims[rank] | key bytes | payload | u32 CRC32C of everything before it.
 * Every field is validated before use (magic, version, key length, dtype, wire dtype, rank
 * <= TFC_TRANSPORT_MAX_RANK, dims >= 0, payload bytes == prod(dims) * size of the wire dtype,
 * the frame no larger than max_frame_bytes, the CRC); a bad frame closes that connection with
 * an error log naming the peer (ip:port) and the field.
 *
 * Optional lossy compression: with wire_dtype TFC_DTYPE_F16 or TFC_DTYPE_BF16, float32 tensors
 * travel as 16-bit floats (round to nearest even, NaN and Inf kept) and are widened back on
 * receipt: half the bytes. Other dtypes always travel as they are.
 *
 * Peers and routes: every connection starts with a handshake in which the connecting task
 * names itself (config.name, "worker:1"). With `routes` a task says which keys it receives
 * and from whom: a frame under another key, or under a key owned by another peer, is refused
 * (the connection is closed and the refusal logged) before its payload is read, and a peer
 * that owns no route is refused at the handshake. Without routes any peer may send any key.
 *
 * Cluster secret: when a token is configured (by default the environment variable
 * TFC_CLUSTER_TOKEN), every connection starts with a mutual HMAC-SHA256 challenge-response
 * over fresh random nonces that also covers the name the connecting task gives, so a name is
 * only ever accepted from a holder of the token; a peer without the right token is refused
 * and logged, and the token itself never crosses the wire. Without a token the handshake only
 * checks magic and version, a name is a claim any local process can make, and a server with a
 * token refuses clients without one (and vice versa). A transport that listens on an address
 * other than loopback refuses to start without a token unless `insecure` is set.
 *
 * Limits (each a field of tfc_transport_config): tensors that arrived and wait for their recv
 * are capped in bytes and in count, per peer and in total (a frame over a cap is refused);
 * with keep_steps, a tensor more than keep_steps steps behind a newer arrival under its key is
 * evicted (what the caps allow bounds the rest). Connections are capped per peer (a
 * peer's oldest connection is closed when it opens one more) and in total (more are refused
 * at the handshake), as are connections in the handshake. A handshake, and each frame from
 * its first byte, must arrive whole within its deadline (io_timeout_ms, plus the payload's
 * bytes at TFC_TRANSPORT_MIN_RATE bytes per second): a peer sending a byte now and then gets
 * no more time. A connection with no frame for idle_timeout_ms is closed; the server tells
 * its idle timeout in the handshake and a sender reconnects before it would pass, so closing
 * idle connections loses no frame. Everything a peer controls (keys, names) is escaped before
 * it is logged.
 *
 * Timeouts everywhere: connect (total time of the retries), handshake and frames (their
 * deadlines), recv (its own argument). Nothing blocks forever unless asked to (-1).
 *
 * Thread-safety: every function may be called from any thread at once, except create and
 * destroy. Logs go through tfc_platform.h's TFC_LOG hook. Buffers must be aligned to their
 * dtype.
 *
 * Status codes (tfc_runtime.h): TFC_OK; TFC_ERR_INVALID_ARGUMENT (bad config, address, key,
 * tensor, or a received tensor that does not match the caller's dtype/shape);
 * TFC_ERR_DEADLINE_EXCEEDED (a recv or poll timed out, or a send stalled for io_timeout_ms);
 * TFC_ERR_UNAVAILABLE (the peer could not be reached within connect_timeout_ms, or closed the
 * connection: a send may be retried, it reconnects);
 * TFC_ERR_FAILED_PRECONDITION (the peer speaks another protocol version);
 * TFC_ERR_PERMISSION_DENIED (cluster token missing or wrong, on either side; a peer the server
 * takes nothing from; listening beyond loopback without a token);
 * TFC_ERR_CANCELLED (tfc_transport_cancel was called, or the transport is shutting down);
 * TFC_ERR_RESOURCE_EXHAUSTED (out of memory, or a tensor over max_frame_bytes);
 * TFC_ERR_UNKNOWN (other system errors: bind, socket, threads). Messages go to err->msg.
 *
 * Build: compile every file of runtime/src/transport/ (TFC_TRANSPORT_SOURCES below) with
 * -Iruntime/include and link with -pthread; POSIX only. They sit in a directory of their own
 * so that builds without distribution (which compile the .c files of runtime/src) never
 * compile them. */
#ifndef TFC_TRANSPORT_H
#define TFC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "tfc_runtime.h"

/* Element types, numbered as TensorFlow's DataType enum (TFC_CHECKPOINT_* use the same values). */
enum {
    TFC_DTYPE_F32 = 1,
    TFC_DTYPE_F64 = 2,
    TFC_DTYPE_I32 = 3,
    TFC_DTYPE_U8 = 4,
    TFC_DTYPE_I8 = 6,
    TFC_DTYPE_I64 = 9,
    TFC_DTYPE_BOOL = 10, /* one byte, 0 or 1 */
    TFC_DTYPE_BF16 = 14,
    TFC_DTYPE_F16 = 19
};

#define TFC_TRANSPORT_SOURCES \
    "tfc_transport.c tfc_transport_accept.c tfc_transport_read.c tfc_transport_send.c " \
    "tfc_rendezvous.c tfc_transport_handshake.c tfc_wire.c tfc_sha256.c tfc_crc32c.c"

#define TFC_TRANSPORT_MAX_RANK 8
#define TFC_TRANSPORT_MAX_KEY 1024
/* A peer's name (config.name): 1 to 31 printable ASCII characters, no space. */
#define TFC_TRANSPORT_MAX_NAME 31
/* The slowest a frame may arrive: its deadline grows by its payload bytes at this rate. */
#define TFC_TRANSPORT_MIN_RATE (1024 * 1024)
/* A recv's step that matches a tensor of its key sent at any step (the oldest one first). */
#define TFC_TRANSPORT_ANY_STEP INT64_MIN
/* A recv's rank that takes the shape from the frame (dims are filled in). */
#define TFC_TRANSPORT_ANY_RANK (-1)

/* Bytes of one element of `dtype`; 0 for an unknown dtype. */
int64_t tfc_transport_dtype_size(int dtype);

/* A key this task receives, and the one peer (by the name it gives in the handshake) that
 * may send it. max_bytes > 0: the most bytes a tensor under it may have (its compiled size).
 * tfc_transport_create copies what it needs: the routes may be freed after it. */
typedef struct {
    const char *key;
    const char *peer;
    int64_t max_bytes;
} tfc_transport_route;

/* Settings of one transport. Zero-initialise, then set what you need: every 0 / NULL field
 * takes the default named beside it. */
typedef struct {
    const char *bind_host;      /* NULL: "127.0.0.1"; "0.0.0.0" listens on every interface */
    int port;                   /* 0: an ephemeral port (tfc_transport_port tells which) */
    const char *token;          /* NULL: getenv("TFC_CLUSTER_TOKEN"); "" or unset: no secret */
    int wire_dtype;             /* 0: float32 as is; TFC_DTYPE_F16 / TFC_DTYPE_BF16: lossy */
    int64_t connect_timeout_ms; /* 0: 30000; total time tfc_transport_connect keeps retrying */
    int64_t io_timeout_ms;      /* 0: 10000; a whole handshake, a frame's header (and payload,
                                   at TFC_TRANSPORT_MIN_RATE), a stalled send */
    int64_t max_frame_bytes;    /* 0: 2^31; larger frames are refused on both sides */
    const char *name;           /* NULL: "tfc"; this task to its peers and in log lines
                                   ("worker:1"; TFC_TRANSPORT_MAX_NAME printable characters) */
    const tfc_transport_route *routes; /* n_routes 0: every peer may send every key */
    int n_routes;
    int insecure; /* 1: listen beyond loopback without a token (anyone reaching it is trusted) */
    int64_t idle_timeout_ms;            /* 0: 60000; -1: never close an idle connection */
    int max_connections;                /* 0: 64 accepted connections, all peers together */
    int max_connections_per_peer;       /* 0: 8 */
    int max_handshakes;                 /* 0: 32 connections in the handshake at once */
    int64_t max_held_bytes;             /* 0: 2^30 bytes of tensors waiting for their recv */
    int64_t max_held_bytes_per_peer;    /* 0: 2^28 */
    int64_t max_held_tensors;           /* 0: 65536 */
    int64_t max_held_tensors_per_peer;  /* 0: 16384 */
    int64_t keep_steps;                 /* 0: keep every tensor until received; see Limits */
} tfc_transport_config;

typedef struct tfc_transport tfc_transport;

/* One tensor to send, or to receive into. For send, `data` holds nbytes == prod(dims) *
 * dtype size. For recv, dtype and rank/dims say what is expected (a mismatch is
 * TFC_ERR_INVALID_ARGUMENT naming the key and both shapes) and nbytes is the capacity of
 * `data`; with rank TFC_TRANSPORT_ANY_RANK the shape is taken from the frame, written into
 * rank and dims, and it must fit nbytes. */
typedef struct {
    int dtype;
    int rank; /* 0 (a scalar) .. TFC_TRANSPORT_MAX_RANK */
    int64_t dims[TFC_TRANSPORT_MAX_RANK];
    void *data;
    int64_t nbytes;
} tfc_transport_tensor;

/* Bind and listen (SO_REUSEADDR), start the accept thread. On success *out owns the transport;
 * destroy it with tfc_transport_destroy. TFC_ERR_UNKNOWN when the port cannot be bound. */
int tfc_transport_create(const tfc_transport_config *config, tfc_transport **out,
                         tfc_error *err);

/* The port this transport listens on (the ephemeral one when config.port was 0). */
int tfc_transport_port(const tfc_transport *t);

/* Open (or reuse) the connection to the task listening at "host:port" and handshake with it,
 * retrying refused/unreachable connects with exponential backoff (10 ms doubling to 1 s) for
 * up to connect_timeout_ms. *peer receives a small non-negative id for tfc_transport_send.
 * Connecting twice to the same address returns the same id. A wrong or missing token is
 * TFC_ERR_PERMISSION_DENIED at once (no retry). */
int tfc_transport_connect(tfc_transport *t, const char *address, int *peer, tfc_error *err);

/* Send one tensor to `peer` under (key, step); returns once the whole frame is written to the
 * socket (not when it is received). Sends to one peer are serialised, in call order. When the
 * connection was lost, the send reconnects (with the connect retries) before giving up with
 * TFC_ERR_UNAVAILABLE. float32 tensors go as the configured wire dtype. */
int tfc_transport_send(tfc_transport *t, int peer, const char *key, int64_t step,
                       const tfc_transport_tensor *tensor, tfc_error *err);

/* tfc_transport_connect and tfc_transport_send with their own bound on connecting, retries
 * included: within_ms (> 0; 0: connect_timeout_ms). For a send that must not wait long on a
 * peer that may be gone for good: a worker's gradients to a ps that has finished. */
int tfc_transport_connect_within(tfc_transport *t, const char *address, int64_t within_ms,
                                 int *peer, tfc_error *err);
int tfc_transport_send_within(tfc_transport *t, int peer, const char *key, int64_t step,
                              const tfc_transport_tensor *tensor, int64_t within_ms,
                              tfc_error *err);

/* Wait for the tensor sent under (key, step) (step may be TFC_TRANSPORT_ANY_STEP) and copy it
 * into `tensor`, at most timeout_ms milliseconds (-1: no limit, 0: only if already here).
 * *step_out (may be NULL) receives the step it was sent with. The tensor is consumed: a second
 * recv of the same (key, step) waits for a second send. A tensor sent again under the same
 * (key, step) before it was received replaces the first (a resend carries the newer value).
 * TFC_ERR_DEADLINE_EXCEEDED on timeout: no tensor was taken, and none is written into the
 * buffer after the return. */
int tfc_transport_recv(tfc_transport *t, const char *key, int64_t step,
                       tfc_transport_tensor *tensor, int64_t timeout_ms, int64_t *step_out,
                       tfc_error *err);

/* The same recv in two halves, so that several can be outstanding: post it now, wait later.
 * A tensor that arrives after the post lands in `tensor`'s buffer directly, so posting ahead
 * (all the recvs of a step at once, or step s+1 while working on step s) keeps the reader
 * threads from ever waiting for the caller. `key` is copied; `tensor` and its buffer must stay
 * valid until the request is finished: tfc_transport_recv_wait returned anything but
 * TFC_ERR_DEADLINE_EXCEEDED (after which the request may be waited on again), or
 * tfc_transport_recv_abandon returned. Finish every request before tfc_transport_destroy. */
typedef struct tfc_transport_request tfc_transport_request;
int tfc_transport_recv_post(tfc_transport *t, const char *key, int64_t step,
                            tfc_transport_tensor *tensor, tfc_transport_request **req,
                            tfc_error *err);
int tfc_transport_recv_wait(tfc_transport *t, tfc_transport_request *req, int64_t timeout_ms,
                            int64_t *step_out, tfc_error *err);
/* Withdraw a posted recv (waiting while a reader is writing into its buffer) and free it. */
void tfc_transport_recv_abandon(tfc_transport *t, tfc_transport_request *req);

/* Wait until a tensor of any of `keys[0..n)` at `step` (or TFC_TRANSPORT_ANY_STEP) is here,
 * without taking it: *index receives the first such key's index, for a tfc_transport_recv that
 * will not block. For a parameter server that applies whichever worker's gradients come first. */
int tfc_transport_poll(tfc_transport *t, const char *const *keys, int n, int64_t step,
                       int64_t timeout_ms, int *index, tfc_error *err);

/* Wake every blocked recv/poll/connect with TFC_ERR_CANCELLED, now and later (a step is
 * being aborted, or the process is stopping). Safe from any thread; not from a signal handler. */
void tfc_transport_cancel(tfc_transport *t);

/* Counters since create, for logs and benchmarks (read without locking: approximate). */
typedef struct {
    int64_t frames_sent, frames_received;
    int64_t bytes_sent, bytes_received; /* on the wire, headers and CRC included */
    int64_t bad_frames;                 /* connections closed for an invalid or refused frame */
    int64_t refused_handshakes;         /* peers refused (token, magic, version, name, limits,
                                           deadline) */
    int64_t refused_frames;             /* of bad_frames: a key not routed from that peer, or a
                                           tensor over a cap */
    int64_t evicted_tensors;            /* dropped unreceived for keep_steps */
    int64_t closed_connections;         /* closed for being idle or one too many of a peer */
    int64_t held_bytes, held_tensors;   /* waiting for their recv now */
} tfc_transport_stats;
void tfc_transport_get_stats(const tfc_transport *t, tfc_transport_stats *stats);

/* Close every connection, stop and join the threads, free what arrived and was never
 * received. Call it when no other thread uses the transport any more (tfc_transport_cancel
 * wakes them first). NULL is a no-op. */
void tfc_transport_destroy(tfc_transport *t);

/* Pieces of the wire protocol, exposed for tests and benchmarks. */
uint32_t tfc_crc32c(uint32_t crc, const void *data, size_t n); /* crc 0 to start */
uint32_t tfc_crc32c_portable(uint32_t crc, const void *data, size_t n); /* tables, never SSE4.2 */
/* float32 <-> float16 / bfloat16, round to nearest even, NaN stays NaN, +-Inf stays +-Inf. */
void tfc_transport_f32_to_f16(const float *src, uint16_t *dst, int64_t n);
void tfc_transport_f16_to_f32(const uint16_t *src, float *dst, int64_t n);
void tfc_transport_f32_to_bf16(const float *src, uint16_t *dst, int64_t n);
void tfc_transport_bf16_to_f32(const uint16_t *src, float *dst, int64_t n);
/* The same without F16C instructions (what other CPUs run), for tests. */
void tfc_transport_f32_to_f16_portable(const float *src, uint16_t *dst, int64_t n);
void tfc_transport_f16_to_f32_portable(const uint16_t *src, float *dst, int64_t n);
/* SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104) of the cluster-token handshake. */
void tfc_sha256(const void *data, size_t n, uint8_t digest[32]);
void tfc_hmac_sha256(const void *key, size_t key_len, const void *data, size_t n,
                     uint8_t mac[32]);

#endif /* TFC_TRANSPORT_H */
