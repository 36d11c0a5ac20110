/* The start of every connection: magic and version, then (with a cluster token) a mutual
 * HMAC-SHA256 challenge-response over fresh nonces; the token never crosses the wire.
 *
 *   client -> server  HELLO  u32 "TFCH" | u16 version | u16 flags (1: has a token) | nonce_c[32]
 *   server -> client  HELLO  u32 "TFCH" | u16 version | u16 flags (1: has a token, 2: refused)
 *                            | nonce_s[32] | mac_s[32] = HMAC(token, "tfc server" nonce_c nonce_s)
 *   client -> server  PROOF  u32 "TFCH" | mac_c[32] = HMAC(token, "tfc client" nonce_s nonce_c)
 *   server -> client  ACK    u32 "TFCA" | u32 verdict (0: accepted, 1: refused)
 * Without tokens both MACs are zeros. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "tfc_transport_internal.h"

#define HELLO_BYTES (8 + TFC_WIRE_NONCE_BYTES)
#define REPLY_BYTES (8 + TFC_WIRE_NONCE_BYTES + 32)
#define PROOF_BYTES (4 + 32)
#define ACK_BYTES 8
#define FLAG_TOKEN 1u
#define FLAG_REFUSED 2u

#define WHY(...) TFC_SNPRINTF(why, cap, __VA_ARGS__)

static void handshake_mac(const char *token, const char *role, const uint8_t *first,
                          const uint8_t *second, uint8_t mac[32]) {
    uint8_t msg[10 + 2 * TFC_WIRE_NONCE_BYTES];
    memcpy(msg, role, 10);
    memcpy(msg + 10, first, TFC_WIRE_NONCE_BYTES);
    memcpy(msg + 10 + TFC_WIRE_NONCE_BYTES, second, TFC_WIRE_NONCE_BYTES);
    tfc_hmac_sha256(token, strlen(token), msg, sizeof msg, mac);
}

static int io_failed(int io, const char *stage, char *why, size_t cap) {
    WHY("handshake (%s): %s", stage, tfc_wire_io_name(io));
    if (io == TFC_IO_STOPPED) return TFC_ERR_CANCELLED;
    return io == TFC_IO_TIMEOUT ? TFC_ERR_DEADLINE_EXCEEDED : TFC_ERR_UNAVAILABLE;
}

int tfc_handshake_client(int fd, const char *token, int64_t timeout_ms, const int *stop,
                         char *why, size_t cap) {
    int has_token = token != NULL && token[0] != '\0';
    uint8_t hello[HELLO_BYTES], reply[REPLY_BYTES], proof[PROOF_BYTES], ack[ACK_BYTES];
    uint8_t *nonce_c = hello + 8, *nonce_s = reply + 8, *mac_s = reply + 8 + 32;
    tfc_wire_put_u32(hello, TFC_WIRE_HELLO);
    tfc_wire_put_u16(hello + 4, TFC_WIRE_VERSION);
    tfc_wire_put_u16(hello + 6, has_token ? FLAG_TOKEN : 0);
    if (tfc_wire_random(nonce_c, TFC_WIRE_NONCE_BYTES) != 0) {
        WHY("handshake: cannot read random bytes for a nonce");
        return TFC_ERR_UNKNOWN;
    }
    int io = tfc_wire_write_full(fd, hello, sizeof hello, timeout_ms, stop);
    if (io != TFC_IO_OK) return io_failed(io, "hello", why, cap);
    io = tfc_wire_read_full(fd, reply, sizeof reply, timeout_ms, stop, NULL);
    if (io != TFC_IO_OK) return io_failed(io, "server hello", why, cap);
    unsigned version = tfc_wire_get_u16(reply + 4), flags = tfc_wire_get_u16(reply + 6);
    if (tfc_wire_get_u32(reply) != TFC_WIRE_HELLO) {
        WHY("handshake: the server's magic is 0x%08x: not a tfc transport",
            (unsigned)tfc_wire_get_u32(reply));
        return TFC_ERR_UNAVAILABLE;
    }
    if (version != TFC_WIRE_VERSION) {
        WHY("handshake: the server speaks protocol version %u, this task %u", version,
            (unsigned)TFC_WIRE_VERSION);
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
        WHY("refused by the server");
        return TFC_ERR_PERMISSION_DENIED;
    }
    uint8_t expected[32] = {0};
    if (has_token) handshake_mac(token, "tfc server", nonce_c, nonce_s, expected);
    tfc_wire_put_u32(proof, TFC_WIRE_HELLO);
    memset(proof + 4, 0, 32);
    if (has_token) handshake_mac(token, "tfc client", nonce_s, nonce_c, proof + 4);
    io = tfc_wire_write_full(fd, proof, sizeof proof, timeout_ms, stop);
    if (!tfc_wire_mac_equal(expected, mac_s)) { /* the proof went anyway: the server logs why */
        WHY("refused: the server has another cluster token than this task");
        return TFC_ERR_PERMISSION_DENIED;
    }
    if (io != TFC_IO_OK) return io_failed(io, "proof", why, cap);
    io = tfc_wire_read_full(fd, ack, sizeof ack, timeout_ms, stop, NULL);
    if (io != TFC_IO_OK) return io_failed(io, "verdict", why, cap);
    if (tfc_wire_get_u32(ack) != TFC_WIRE_ACK || tfc_wire_get_u32(ack + 4) != 0) {
        WHY("refused: the server did not accept this task's cluster token");
        return TFC_ERR_PERMISSION_DENIED;
    }
    return TFC_OK;
}

int tfc_handshake_server(int fd, const char *token, int64_t timeout_ms, const int *stop,
                         char *why, size_t cap) {
    int has_token = token != NULL && token[0] != '\0';
    uint8_t hello[HELLO_BYTES], reply[REPLY_BYTES], proof[PROOF_BYTES], ack[ACK_BYTES];
    uint8_t *nonce_c = hello + 8, *nonce_s = reply + 8, *mac_s = reply + 8 + 32;
    int io = tfc_wire_read_full(fd, hello, sizeof hello, timeout_ms, stop, NULL);
    if (io != TFC_IO_OK) return io_failed(io, "hello", why, cap);
    uint32_t magic = tfc_wire_get_u32(hello);
    unsigned version = tfc_wire_get_u16(hello + 4), flags = tfc_wire_get_u16(hello + 6);
    unsigned refused = 0;
    int code = TFC_OK;
    if (magic != TFC_WIRE_HELLO) {
        WHY("handshake magic: 0x%08x is not 0x%08x (\"TFCH\")", (unsigned)magic,
            (unsigned)TFC_WIRE_HELLO);
        return TFC_ERR_UNAVAILABLE; /* not a tfc peer: no reply at all */
    }
    if (version != TFC_WIRE_VERSION) {
        WHY("handshake version: %u is not %u", version, (unsigned)TFC_WIRE_VERSION);
        refused = FLAG_REFUSED, code = TFC_ERR_FAILED_PRECONDITION;
    } else if (has_token && !(flags & FLAG_TOKEN)) {
        WHY("refused: the peer has no cluster token");
        refused = FLAG_REFUSED, code = TFC_ERR_PERMISSION_DENIED;
    } else if (!has_token && (flags & FLAG_TOKEN)) {
        WHY("refused: the peer has a cluster token, this task none");
        refused = FLAG_REFUSED, code = TFC_ERR_PERMISSION_DENIED;
    }
    tfc_wire_put_u32(reply, TFC_WIRE_HELLO);
    tfc_wire_put_u16(reply + 4, TFC_WIRE_VERSION);
    tfc_wire_put_u16(reply + 6, (uint16_t)((has_token ? FLAG_TOKEN : 0) | refused));
    if (tfc_wire_random(nonce_s, TFC_WIRE_NONCE_BYTES) != 0) {
        WHY("handshake: cannot read random bytes for a nonce");
        return TFC_ERR_UNKNOWN;
    }
    memset(mac_s, 0, 32);
    if (has_token && !refused) handshake_mac(token, "tfc server", nonce_c, nonce_s, mac_s);
    io = tfc_wire_write_full(fd, reply, sizeof reply, timeout_ms, stop);
    if (code != TFC_OK) return code;
    if (io != TFC_IO_OK) return io_failed(io, "reply", why, cap);
    io = tfc_wire_read_full(fd, proof, sizeof proof, timeout_ms, stop, NULL);
    if (io != TFC_IO_OK) return io_failed(io, "proof", why, cap);
    uint8_t expected[32] = {0};
    if (has_token) handshake_mac(token, "tfc client", nonce_s, nonce_c, expected);
    int ok = tfc_wire_get_u32(proof) == TFC_WIRE_HELLO && tfc_wire_mac_equal(expected, proof + 4);
    tfc_wire_put_u32(ack, TFC_WIRE_ACK);
    tfc_wire_put_u32(ack + 4, ok ? 0 : 1);
    io = tfc_wire_write_full(fd, ack, sizeof ack, timeout_ms, stop);
    if (!ok) {
        WHY("refused: wrong cluster token");
        return TFC_ERR_PERMISSION_DENIED;
    }
    if (io != TFC_IO_OK) return io_failed(io, "verdict", why, cap);
    return TFC_OK;
}
