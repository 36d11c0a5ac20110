/* libFuzzer harness for the transport's decoders: a frame's header, dims and key, and both
 * sides of the handshake. Every input must decode to a valid frame or a "why", never crash,
 * read out of bounds or break an invariant (checked below, a trap when broken). Built by
 * tests/test_runtime_transport.py with clang -fsanitize=fuzzer,address,undefined and run for a
 * bounded time; run it longer by hand:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iruntime/include \
 *       tests/fuzz/transport_fuzz.c runtime/src/transport/tfc_wire.c \
 *       runtime/src/transport/tfc_transport_handshake.c runtime/src/transport/tfc_sha256.c \
 *       runtime/src/transport/tfc_crc32c.c -o transport_fuzz && ./transport_fuzz -max_total_time=600
 *
 * The first byte picks the decoder; the rest is its input. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <string.h>

#include "../../runtime/src/transport/tfc_transport_internal.h"

#define CHECK(cond) \
    do { \
        if (!(cond)) __builtin_trap(); \
    } while (0)

static void check_printable(const char *s) {
    for (; *s; ++s) CHECK(*s >= 0x20 && *s < 0x7F);
}

static void fuzz_frame(const uint8_t *data, size_t size) {
    uint8_t head[TFC_WIRE_HEAD_MAX];
    char why[512];
    if (size < 1 + TFC_WIRE_HEADER_BYTES) return;
    int64_t limits[4] = {INT64_C(1) << 31, 1000, 64, INT64_C(1) << 62};
    int64_t max_frame = limits[data[0] & 3];
    data += 1, size -= 1;
    memcpy(head, data, TFC_WIRE_HEADER_BYTES);
    tfc_wire_header h;
    why[0] = '\0';
    if (tfc_wire_decode_header(head, max_frame, &h, why, sizeof why) != 0) {
        CHECK(why[0] != '\0');
        return;
    }
    /* what decodes re-encodes to the same bytes */
    uint8_t again[TFC_WIRE_HEADER_BYTES];
    tfc_wire_encode_header(&h, again);
    CHECK(memcmp(again, head, TFC_WIRE_HEADER_BYTES) == 0);
    CHECK(h.key_len >= 1 && h.key_len <= TFC_TRANSPORT_MAX_KEY);
    CHECK(h.rank >= 0 && h.rank <= TFC_TRANSPORT_MAX_RANK);
    CHECK(h.payload_bytes <= (uint64_t)max_frame);
    size_t rest = tfc_wire_rest_bytes(&h);
    CHECK(TFC_WIRE_HEADER_BYTES + rest < TFC_WIRE_HEAD_MAX);
    if (size < TFC_WIRE_HEADER_BYTES + rest) return;
    memcpy(head + TFC_WIRE_HEADER_BYTES, data + TFC_WIRE_HEADER_BYTES, rest);
    if (tfc_wire_decode_rest(head, &h, why, sizeof why) != 0) return;
    const char *key = (const char *)head + TFC_WIRE_HEADER_BYTES + 8 * h.rank;
    CHECK(strlen(key) == h.key_len);
    int64_t count = tfc_wire_count(h.rank, h.dims);
    CHECK(count >= 0);
    CHECK((uint64_t)count * (uint64_t)tfc_transport_dtype_size(h.wire_dtype) == h.payload_bytes);
    char shown[4 * TFC_TRANSPORT_MAX_KEY + 1];
    tfc_wire_escape(key, h.key_len, shown, sizeof shown);
    check_printable(shown);
    char shape[200];
    tfc_wire_describe(h.dtype, h.rank, h.dims, shape, sizeof shape);
    (void)tfc_crc32c(0, head, TFC_WIRE_HEADER_BYTES + rest);
}

static void fuzz_server(const uint8_t *data, size_t size) {
    if (size < 1 + TFC_HS_HELLO_BYTES + TFC_HS_PROOF_BYTES) return;
    const char *token = (data[0] & 1) ? "s3cret" : NULL;
    uint32_t idle = (uint32_t)data[0] * 1000u;
    const uint8_t *hello = data + 1, *proof = hello + TFC_HS_HELLO_BYTES;
    uint8_t nonce_s[TFC_WIRE_NONCE_BYTES], reply[TFC_HS_REPLY_BYTES], ack[TFC_HS_ACK_BYTES];
    memset(nonce_s, 0x5A, sizeof nonce_s);
    tfc_handshake_server s;
    size_t reply_len = 7;
    char why[256];
    int code = tfc_handshake_server_hello(&s, hello, token, idle, nonce_s, reply, &reply_len, why,
                                          sizeof why);
    CHECK(reply_len == 0 || reply_len == TFC_HS_REPLY_BYTES);
    if (code != TFC_OK) return;
    CHECK(tfc_wire_name_valid(s.name)); /* an accepted hello names a valid peer */
    check_printable(s.name);
    code = tfc_handshake_server_proof(&s, proof, token, ack, why, sizeof why);
    CHECK(tfc_wire_get_u32(ack) == TFC_WIRE_ACK);
    /* without a token the proof is all zeros; with one it cannot be guessed */
    if (code == TFC_OK && token == NULL) {
        for (int i = 4; i < TFC_HS_PROOF_BYTES; ++i) CHECK(proof[i] == 0);
    }
}

static void fuzz_client(const uint8_t *data, size_t size) {
    if (size < 1 + TFC_HS_REPLY_BYTES + TFC_HS_ACK_BYTES) return;
    const char *token = (data[0] & 1) ? "s3cret" : NULL;
    uint8_t nonce_c[TFC_WIRE_NONCE_BYTES], proof[TFC_HS_PROOF_BYTES];
    memset(nonce_c, 0xA5, sizeof nonce_c);
    tfc_handshake_client c;
    tfc_handshake_client_hello(&c, token, "worker:0", nonce_c);
    int send_proof = -1;
    char why[256];
    (void)tfc_handshake_client_reply(&c, data + 1, token, proof, &send_proof, why, sizeof why);
    CHECK(send_proof == 0 || send_proof == 1);
    (void)tfc_handshake_client_ack(data + 1 + TFC_HS_REPLY_BYTES, "worker:0", why, sizeof why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    switch (data[0] % 3) {
    case 0: fuzz_frame(data + 1, size - 1); break;
    case 1: fuzz_server(data + 1, size - 1); break;
    default: fuzz_client(data + 1, size - 1); break;
    }
    return 0;
}
