/* The start of every connection (the layout is in tfc_transport_internal.h): magic and
 * version, the client's name, the server's idle timeout, then (with a cluster token) a mutual
 * HMAC-SHA256 challenge-response over fresh nonces that covers the name; the token never
 * crosses the wire. Decoding is pure (bytes in, bytes out): the server's side runs inside the
 * accept loop's event loop, the client's in tfc_handshake_client_run below. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "tfc_transport_internal.h"

#define FLAG_TOKEN 1u
#define FLAG_REFUSED 2u

#define WHY(...) TFC_SNPRINTF(why, cap, __VA_ARGS__)

static int has(const char *token) { return token != NULL && token[0] != '\0'; }

/* HMAC(token, role | first | second | name | extra) */
static void handshake_mac(const char *token, const char *role, const uint8_t *first,
                          const uint8_t *second, const uint8_t *name, const uint8_t *extra,
                          size_t extra_len, uint8_t mac[32]) {
    uint8_t msg[10 + 2 * TFC_WIRE_NONCE_BYTES + TFC_WIRE_NAME_BYTES + 4];
    size_t n = 0;
    memcpy(msg, role, 10), n += 10;
    memcpy(msg + n, first, TFC_WIRE_NONCE_BYTES), n += TFC_WIRE_NONCE_BYTES;
    memcpy(msg + n, second, TFC_WIRE_NONCE_BYTES), n += TFC_WIRE_NONCE_BYTES;
    memcpy(msg + n, name, TFC_WIRE_NAME_BYTES), n += TFC_WIRE_NAME_BYTES;
    if (extra_len > 0) memcpy(msg + n, extra, extra_len), n += extra_len;
    tfc_hmac_sha256(token, strlen(token), msg, n, mac);
}

/* The name field: printable characters, then NUL padding only. */
static int decode_name(const uint8_t field[TFC_WIRE_NAME_BYTES], char out[]) {
    size_t n = 0;
    while (n < TFC_WIRE_NAME_BYTES && field[n] != 0) ++n;
    memcpy(out, field, n);
    out[n] = '\0';
    for (size_t i = n; i < TFC_WIRE_NAME_BYTES; ++i)
        if (field[i] != 0) return 0;
    return tfc_wire_name_valid(out);
}

/* ---- server ---- */

int tfc_handshake_server_hello(tfc_handshake_server *s, const uint8_t hello[TFC_HS_HELLO_BYTES],
                               const char *token, uint32_t idle_ms,
                               const uint8_t nonce_s[TFC_WIRE_NONCE_BYTES],
                               uint8_t reply[TFC_HS_REPLY_BYTES], size_t *reply_len, char *why,
                               size_t cap) {
    int has_token = has(token);
    uint32_t magic = tfc_wire_get_u32(hello);
    unsigned version = tfc_wire_get_u16(hello + 4), flags = tfc_wire_get_u16(hello + 6);
    memset(s, 0, sizeof *s);
    *reply_len = 0;
    if (magic != TFC_WIRE_HELLO) {
        WHY("handshake magic: 0x%08x is not 0x%08x (\"TFCH\")", (unsigned)magic,
            (unsigned)TFC_WIRE_HELLO);
        return TFC_ERR_UNAVAILABLE; /* not a tfc peer: no reply at all */
    }
    memcpy(s->nonce_c, hello + 8, TFC_WIRE_NONCE_BYTES);
    memcpy(s->nonce_s, nonce_s, TFC_WIRE_NONCE_BYTES);
    int code = TFC_OK;
    if (version != TFC_WIRE_HANDSHAKE_VERSION) {
        WHY("handshake version: %u is not %u", version, (unsigned)TFC_WIRE_HANDSHAKE_VERSION);
        code = TFC_ERR_FAILED_PRECONDITION;
    } else if (!decode_name(hello + 8 + TFC_WIRE_NONCE_BYTES, s->name)) {
        WHY("handshake name: not 1 to %d printable characters", TFC_TRANSPORT_MAX_NAME);
        s->name[0] = '\0';
        code = TFC_ERR_INVALID_ARGUMENT;
    } else if (has_token && !(flags & FLAG_TOKEN)) {
        WHY("refused: the peer has no cluster token");
        code = TFC_ERR_PERMISSION_DENIED;
    } else if (!has_token && (flags & FLAG_TOKEN)) {
        WHY("refused: the peer has a cluster token, this task none");
        code = TFC_ERR_PERMISSION_DENIED;
    }
    uint8_t *idle = reply + 8 + TFC_WIRE_NONCE_BYTES, *mac_s = idle + 4;
    tfc_wire_put_u32(reply, TFC_WIRE_HELLO);
    tfc_wire_put_u16(reply + 4, TFC_WIRE_HANDSHAKE_VERSION);
    tfc_wire_put_u16(reply + 6, (uint16_t)((has_token ? FLAG_TOKEN : 0) |
                                           (code != TFC_OK ? FLAG_REFUSED : 0)));
    memcpy(reply + 8, nonce_s, TFC_WIRE_NONCE_BYTES);
    tfc_wire_put_u32(idle, idle_ms);
    memset(mac_s, 0, 32);
    if (has_token && code == TFC_OK)
        handshake_mac(token, "tfc server", s->nonce_c, nonce_s,
                      hello + 8 + TFC_WIRE_NONCE_BYTES, idle, 4, mac_s);
    *reply_len = TFC_HS_REPLY_BYTES;
    return code;
}

int tfc_handshake_server_proof(const tfc_handshake_server *s,
                               const uint8_t proof[TFC_HS_PROOF_BYTES], const char *token,
                               uint8_t ack[TFC_HS_ACK_BYTES], char *why, size_t cap) {
    uint8_t expected[32] = {0}, name[TFC_WIRE_NAME_BYTES] = {0};
    memcpy(name, s->name, strlen(s->name));
    if (has(token)) handshake_mac(token, "tfc client", s->nonce_s, s->nonce_c, name, NULL, 0,
                                  expected);
    int ok = tfc_wire_get_u32(proof) == TFC_WIRE_HELLO && tfc_wire_mac_equal(expected, proof + 4);
    tfc_wire_put_u32(ack, TFC_WIRE_ACK);
    tfc_wire_put_u32(ack + 4, ok ? TFC_VERDICT_ACCEPTED : TFC_VERDICT_WRONG_TOKEN);
    if (ok) return TFC_OK;
    WHY("refused: wrong cluster token");
    return TFC_ERR_PERMISSION_DENIED;
}

void tfc_handshake_set_verdict(uint8_t ack[TFC_HS_ACK_BYTES], uint32_t verdict) {
    tfc_wire_put_u32(ack + 4, verdict);
}

/* ---- client ---- */

void tfc_handshake_client_hello(tfc_handshake_client *c, const char *token, const char *name,
                                const uint8_t nonce_c[TFC_WIRE_NONCE_BYTES]) {
    memset(c, 0, sizeof *c);
    tfc_wire_put_u32(c->hello, TFC_WIRE_HELLO);
    tfc_wire_put_u16(c->hello + 4, TFC_WIRE_HANDSHAKE_VERSION);
    tfc_wire_put_u16(c->hello + 6, has(token) ? FLAG_TOKEN : 0);
    memcpy(c->hello + 8, nonce_c, TFC_WIRE_NONCE_BYTES);
    size_t n = strlen(name);
    memcpy(c->hello + 8 + TFC_WIRE_NONCE_BYTES, name,
           n < TFC_WIRE_NAME_BYTES ? n : TFC_WIRE_NAME_BYTES);
}

int tfc_handshake_client_reply(tfc_handshake_client *c, const uint8_t reply[TFC_HS_REPLY_BYTES],
                               const char *token, uint8_t proof[TFC_HS_PROOF_BYTES],
                               int *send_proof, char *why, size_t cap) {
    int has_token = has(token);
    const uint8_t *nonce_c = c->hello + 8, *name = c->hello + 8 + TFC_WIRE_NONCE_BYTES;
    const uint8_t *nonce_s = reply + 8, *idle = nonce_s + TFC_WIRE_NONCE_BYTES, *mac_s = idle + 4;
    unsigned version = tfc_wire_get_u16(reply + 4), flags = tfc_wire_get_u16(reply + 6);
    *send_proof = 0;
    if (tfc_wire_get_u32(reply) != TFC_WIRE_HELLO) {
        WHY("handshake: the server's magic is 0x%08x: not a tfc transport",
            (unsigned)tfc_wire_get_u32(reply));
        return TFC_ERR_UNAVAILABLE;
    }
    if (version != TFC_WIRE_HANDSHAKE_VERSION) {
        WHY("handshake: the server speaks protocol version %u, this task %u", version,
            (unsigned)TFC_WIRE_HANDSHAKE_VERSION);
        return TFC_ERR_FAILED_PRECONDITION;
    }
    if ((flags & FLAG_TOKEN) && !has_token) {
        WHY("refused: the server requires the cluster token (set TFC_CLUSTER_TOKEN)");
        return TFC_ERR_PERMISSION_DENIED;
    }
    if (!(flags & FLAG_TOKEN) && has_token) {
        WHY("refused: the server has no cluster token, this task has one");
        return TFC_ERR_PERMISSION_DENIED;
    }
    if (flags & FLAG_REFUSED) {
        WHY("refused by the server (it logs why)");
        return TFC_ERR_PERMISSION_DENIED;
    }
    uint8_t expected[32] = {0};
    if (has_token) handshake_mac(token, "tfc server", nonce_c, nonce_s, name, idle, 4, expected);
    tfc_wire_put_u32(proof, TFC_WIRE_HELLO);
    memset(proof + 4, 0, 32);
    if (has_token) handshake_mac(token, "tfc client", nonce_s, nonce_c, name, NULL, 0, proof + 4);
    *send_proof = 1;
    c->idle_ms = tfc_wire_get_u32(idle);
    if (!tfc_wire_mac_equal(expected, mac_s)) { /* the proof goes anyway: the server logs why */
        WHY("refused: the server has another cluster token than this task");
        return TFC_ERR_PERMISSION_DENIED;
    }
    return TFC_OK;
}

int tfc_handshake_client_ack(const uint8_t ack[TFC_HS_ACK_BYTES], const char *name, char *why,
                             size_t cap) {
    uint32_t verdict = tfc_wire_get_u32(ack + 4);
    if (tfc_wire_get_u32(ack) != TFC_WIRE_ACK) {
        WHY("handshake: the server's verdict has magic 0x%08x", (unsigned)tfc_wire_get_u32(ack));
        return TFC_ERR_UNAVAILABLE;
    }
    switch (verdict) {
    case TFC_VERDICT_ACCEPTED: return TFC_OK;
    case TFC_VERDICT_UNKNOWN_PEER:
        WHY("refused: the server takes nothing from a task named '%s'", name);
        return TFC_ERR_PERMISSION_DENIED;
    case TFC_VERDICT_BUSY:
        WHY("the server has all the connections it accepts (max_connections)");
        return TFC_ERR_UNAVAILABLE;
    default:
        WHY("refused: the server did not accept this task's cluster token");
        return TFC_ERR_PERMISSION_DENIED;
    }
}

static int io_failed(int io, const char *stage, char *why, size_t cap) {
    WHY("handshake (%s): %s", stage, tfc_wire_io_name(io));
    if (io == TFC_IO_STOPPED) return TFC_ERR_CANCELLED;
    return io == TFC_IO_TIMEOUT ? TFC_ERR_DEADLINE_EXCEEDED : TFC_ERR_UNAVAILABLE;
}

int tfc_handshake_client_run(int fd, const char *token, const char *name, int64_t timeout_ms,
                             const int *stop, uint32_t *idle_ms, char *why, size_t cap) {
    tfc_handshake_client c;
    uint8_t nonce_c[TFC_WIRE_NONCE_BYTES], reply[TFC_HS_REPLY_BYTES], proof[TFC_HS_PROOF_BYTES];
    uint8_t ack[TFC_HS_ACK_BYTES];
    int64_t deadline = tfc_wire_now_ms() + timeout_ms;
    if (tfc_wire_random(nonce_c, sizeof nonce_c) != 0) {
        WHY("handshake: cannot read random bytes for a nonce");
        return TFC_ERR_UNKNOWN;
    }
    tfc_handshake_client_hello(&c, token, name, nonce_c);
    int io = tfc_wire_write_full(fd, c.hello, sizeof c.hello, timeout_ms, stop);
    if (io != TFC_IO_OK) return io_failed(io, "hello", why, cap);
    io = tfc_wire_read_by(fd, reply, sizeof reply, deadline, stop, NULL);
    if (io != TFC_IO_OK) return io_failed(io, "server hello", why, cap);
    int send_proof;
    int code = tfc_handshake_client_reply(&c, reply, token, proof, &send_proof, why, cap);
    if (send_proof) {
        io = tfc_wire_write_full(fd, proof, sizeof proof, timeout_ms, stop);
        if (code == TFC_OK && io != TFC_IO_OK) return io_failed(io, "proof", why, cap);
    }
    if (code != TFC_OK) return code;
    io = tfc_wire_read_by(fd, ack, sizeof ack, deadline, stop, NULL);
    if (io != TFC_IO_OK) return io_failed(io, "verdict", why, cap);
    *idle_ms = c.idle_ms;
    return tfc_handshake_client_ack(ack, name, why, cap);
}
