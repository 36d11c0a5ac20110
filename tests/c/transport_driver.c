/* Drives runtime/src's tensor transport for tests/test_runtime_transport.py and
 * bench/transport_throughput.py: one command per stdin line, one answer per stdout line.
 *
 *   listen PORT [WIRE]                 -> "port N"           (WIRE: f32, f16, bf16; the
 *                                         environment sets the rest of the config: NAME, BIND,
 *                                         INSECURE, IO_MS, IDLE_MS, MAX_CONNS, ROUTES, ...)
 *   connect HOST:PORT [MS]             -> "peer ID"          (MS: give up connecting after
 *                                         MS, not the configured CONNECT_MS)
 *   send PEER KEY STEP DTYPE DIMS HEX  -> "ok"               (DIMS: "2,3", "-" for a scalar)
 *   recv KEY STEP DTYPE DIMS TIMEOUT   -> "tensor STEP DIMS HEX" (STEP "*": any; DIMS "*": any)
 *   poll STEP TIMEOUT KEY...           -> "index I"
 *   post KEY STEP DTYPE DIMS -> "request I";  wait I TIMEOUT -> as recv;  abandon I -> "ok"
 *   stress_send PEER KEYS STEPS        -> "ok": KEYS tensors per step, content from (key, step)
 *   stress_recv KEYS STEPS TIMEOUT     -> "ok" once every one arrived with the right bytes
 *   stress_drain KEYS STEPS MS         -> "taken N": the same tensors taken by recvs that give up
 *                                         at once, until all came or MS passed (a recv that
 *                                         timed out must have taken nothing)
 *   cancel | quit
 *   stats -> "stats" and tfc_transport_stats' fields in order
 *   bench_send PEER BYTES REPS / bench_recv BYTES REPS  -> "seconds S" (receiver, after rep 0)
 *   raw_listen / raw_accept BYTES REPS / raw_send HOST:PORT BYTES REPS: plain TCP, the peer
 *   selftest                           -> known vectors of CRC32C, SHA-256, HMAC-SHA256
 *   crc HEX | hmac KEYHEX DATAHEX | f16 HEX | f16_portable HEX | bf16 HEX
 *                                      (HEX of float32 in, of uint16 out)
 *   widen16 f16|f16_portable|bf16 HEX  -> HEX of float32 (f16_portable: never F16C)
 * Errors: "ERR CODE MESSAGE". Everything the transport logs goes to stderr. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tfc_transport.h"

static tfc_transport *T;
static char MSG[1024];
static tfc_error ERR = {MSG, sizeof MSG, NULL};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int report(int rc) {
    if (rc != TFC_OK) printf("ERR %d %s\n", rc, MSG);
    return rc;
}

static int dtype_of(const char *name) {
    static const char *names[] = {"float32", "float64", "int32", "uint8", "int8", "int64", "bool"};
    static const int codes[] = {TFC_DTYPE_F32, TFC_DTYPE_F64, TFC_DTYPE_I32, TFC_DTYPE_U8,
                                TFC_DTYPE_I8,  TFC_DTYPE_I64, TFC_DTYPE_BOOL};
    for (int i = 0; i < 7; ++i)
        if (strcmp(name, names[i]) == 0) return codes[i];
    if (strcmp(name, "f16") == 0) return TFC_DTYPE_F16;
    if (strcmp(name, "bf16") == 0) return TFC_DTYPE_BF16;
    return 0;
}

static int parse_dims(const char *s, tfc_transport_tensor *x) {
    x->rank = 0;
    if (strcmp(s, "*") == 0) {
        x->rank = TFC_TRANSPORT_ANY_RANK;
        return 0;
    }
    if (strcmp(s, "-") == 0) return 0;
    for (char *end; *s; s = end + (*end == ',')) {
        if (x->rank == TFC_TRANSPORT_MAX_RANK) return -1;
        x->dims[x->rank++] = strtoll(s, &end, 10);
        if (end == s) return -1;
    }
    return 0;
}

static void print_dims(const tfc_transport_tensor *x) {
    if (x->rank == 0) printf("-");
    for (int i = 0; i < x->rank; ++i) printf(i ? ",%" PRId64 : "%" PRId64, x->dims[i]);
}

static int nibble(char c) {
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

static uint8_t *from_hex(const char *hex, size_t *n) {
    size_t len = strlen(hex) / 2;
    uint8_t *out = (uint8_t *)malloc(len ? len : 1);
    for (size_t i = 0; i < len; ++i)
        out[i] = (uint8_t)(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
    *n = len;
    return out;
}

static void print_hex(const void *data, size_t n) {
    static const char digits[] = "0123456789abcdef";
    char *text = (char *)malloc(2 * n + 1);
    for (size_t i = 0; i < n; ++i) {
        text[2 * i] = digits[((const uint8_t *)data)[i] >> 4];
        text[2 * i + 1] = digits[((const uint8_t *)data)[i] & 15];
    }
    fwrite(text, 1, 2 * n, stdout);
    free(text);
}

static void print_tensor(const tfc_transport_tensor *x, int64_t step) {
    int64_t count = 1;
    for (int i = 0; i < x->rank; ++i) count *= x->dims[i];
    printf("tensor %" PRId64 " ", step);
    print_dims(x);
    printf(" ");
    print_hex(x->data, (size_t)(count * tfc_transport_dtype_size(x->dtype)));
    printf("\n");
}

/* recvs posted ahead (post / wait / abandon) */
#define MAX_POSTED 8
static tfc_transport_request *POSTED[MAX_POSTED];
static tfc_transport_tensor POSTED_TENSORS[MAX_POSTED];
static uint8_t POSTED_DATA[MAX_POSTED][1 << 16];

/* The content of stress tensor `k` at `step`: float32[k % 5 + 1, 7], every value distinct. */
static void stress_tensor(int k, int64_t step, float *buf, tfc_transport_tensor *x) {
    x->dtype = TFC_DTYPE_F32;
    x->rank = 2;
    x->dims[0] = k % 5 + 1;
    x->dims[1] = 7;
    x->nbytes = x->dims[0] * 7 * 4;
    x->data = buf;
    for (int i = 0; i < x->dims[0] * 7; ++i) buf[i] = (float)(k * 1000 + step) + 0.125f * (float)i;
}

static int raw_listen_fd = -1;

static int64_t env_int(const char *name) {
    const char *v = getenv(name);
    return v != NULL ? atoll(v) : 0;
}

/* ROUTES="KEY=PEER=MAX_BYTES;..." */
#define MAX_ROUTES 64
static tfc_transport_route ROUTES[MAX_ROUTES];
static char ROUTE_TEXT[8192];

static int parse_routes(const char *text) {
    if (text == NULL) return 0;
    snprintf(ROUTE_TEXT, sizeof ROUTE_TEXT, "%s", text);
    int n = 0;
    for (char *save = NULL, *r = strtok_r(ROUTE_TEXT, ";", &save); r && n < MAX_ROUTES;
         r = strtok_r(NULL, ";", &save)) {
        char *peer = strchr(r, '='), *max = peer ? strchr(peer + 1, '=') : NULL;
        if (peer == NULL || max == NULL) continue;
        *peer++ = '\0', *max++ = '\0';
        ROUTES[n].key = r, ROUTES[n].peer = peer, ROUTES[n].max_bytes = atoll(max);
        ++n;
    }
    return n;
}

static uint8_t next_byte(uint32_t *seed) {
    *seed = *seed * 1103515245u + 12345u;
    return (uint8_t)(*seed >> 16);
}

static int selftest(void) {
    /* CRC32C check value (RFC 3720's iSCSI test: "123456789"), 32 zero bytes (RFC 3720 B.4) */
    uint8_t zeros[32] = {0}, buf[4099];
    if (tfc_crc32c(0, "123456789", 9) != 0xE3069283u) return printf("bad crc32c check\n"), 1;
    if (tfc_crc32c(0, zeros, 32) != 0x8A9136AAu) return printf("bad crc32c zeros\n"), 1;
    uint32_t seed = 1;
    for (size_t i = 0; i < sizeof buf; ++i) buf[i] = next_byte(&seed);
    for (size_t off = 0; off < 9; ++off)
        for (size_t n = 0; n < 300; n += 7) {
            uint32_t a = tfc_crc32c(0, buf + off, n), b = tfc_crc32c_portable(0, buf + off, n);
            uint32_t head = tfc_crc32c(0, buf + off, n / 3);
            uint32_t split = tfc_crc32c(head, buf + off + n / 3, n - n / 3);
            if (a != b || a != split) return printf("crc32c paths differ at %zu+%zu\n", off, n), 1;
        }
    for (size_t off = 0; off < 9; ++off) /* each SIMD path's loop, fold-down and tail */
        for (size_t n = 300; n < 1400; n += 37) {
            uint32_t a = tfc_crc32c(0, buf + off, n), b = tfc_crc32c_portable(0, buf + off, n);
            if (a != b) return printf("crc32c paths differ at %zu+%zu\n", off, n), 1;
        }
    size_t big = 3 * 8192 * 2 + 3 * 256 + 77;
    uint8_t *large = (uint8_t *)malloc(big + 8);
    for (size_t i = 0; i < big + 8; ++i) large[i] = next_byte(&seed);
    for (size_t off = 0; off < 8; off += 3)
        for (size_t n = big - 3 * 8192; n <= big; n += 3 * 8192 / 2 + 13)
            if (tfc_crc32c(0, large + off, n) != tfc_crc32c_portable(0, large + off, n)) {
                free(large);
                return printf("crc32c paths differ at %zu+%zu\n", off, n), 1;
            }
    free(large);
    static const struct {
        const char *msg, *hex;
    } sha[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"}};
    for (int i = 0; i < 3; ++i) {
        uint8_t d[32];
        char hex[65];
        tfc_sha256(sha[i].msg, strlen(sha[i].msg), d);
        for (int j = 0; j < 32; ++j) snprintf(hex + 2 * j, 3, "%02x", d[j]);
        if (strcmp(hex, sha[i].hex) != 0) return printf("bad sha256 of '%s'\n", sha[i].msg), 1;
    }
    printf("ok\n");
    return 0;
}

static int command(char *line) {
    char *argv[64];
    int argc = 0;
    for (char *tok = strtok(line, " \n"); tok && argc < 64; tok = strtok(NULL, " \n"))
        argv[argc++] = tok;
    if (argc == 0) return 0;
    const char *cmd = argv[0];
    if (strcmp(cmd, "quit") == 0) return 1;
    if (strcmp(cmd, "listen") == 0 && argc >= 2) {
        tfc_transport_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.port = atoi(argv[1]);
        cfg.wire_dtype = argc > 2 ? dtype_of(argv[2]) : 0;
        cfg.name = getenv("NAME") ? getenv("NAME") : "driver";
        cfg.bind_host = getenv("BIND");
        cfg.insecure = env_int("INSECURE") != 0;
        cfg.connect_timeout_ms = env_int("CONNECT_MS");
        cfg.io_timeout_ms = env_int("IO_MS");
        cfg.max_frame_bytes = env_int("MAX_FRAME");
        cfg.idle_timeout_ms = env_int("IDLE_MS");
        cfg.max_connections = (int)env_int("MAX_CONNS");
        cfg.max_connections_per_peer = (int)env_int("MAX_CONNS_PEER");
        cfg.max_handshakes = (int)env_int("MAX_HANDSHAKES");
        cfg.max_held_bytes = env_int("MAX_HELD");
        cfg.max_held_bytes_per_peer = env_int("MAX_HELD_PEER");
        cfg.max_held_tensors = env_int("MAX_TENSORS");
        cfg.max_held_tensors_per_peer = env_int("MAX_TENSORS_PEER");
        cfg.keep_steps = env_int("KEEP_STEPS");
        cfg.n_routes = parse_routes(getenv("ROUTES"));
        cfg.routes = ROUTES;
        if (report(tfc_transport_create(&cfg, &T, &ERR)) == TFC_OK)
            printf("port %d\n", tfc_transport_port(T));
    } else if (strcmp(cmd, "connect") == 0 && (argc == 2 || argc == 3)) {
        int peer = -1;
        int rc = argc == 3 ? tfc_transport_connect_within(T, argv[1], atoll(argv[2]), &peer, &ERR)
                           : tfc_transport_connect(T, argv[1], &peer, &ERR);
        if (report(rc) == TFC_OK)
            printf("peer %d\n", peer);
    } else if (strcmp(cmd, "send") == 0 && argc >= 6) {
        tfc_transport_tensor x;
        memset(&x, 0, sizeof x);
        x.dtype = dtype_of(argv[4]);
        size_t n = 0;
        uint8_t *data = from_hex(argc > 6 ? argv[6] : "", &n);
        parse_dims(argv[5], &x);
        x.data = data;
        x.nbytes = (int64_t)n;
        if (report(tfc_transport_send(T, atoi(argv[1]), argv[2], atoll(argv[3]), &x, &ERR)) ==
            TFC_OK)
            printf("ok\n");
        free(data);
    } else if (strcmp(cmd, "recv") == 0 && argc == 6) {
        tfc_transport_tensor x;
        memset(&x, 0, sizeof x);
        x.dtype = dtype_of(argv[3]);
        parse_dims(argv[4], &x);
        x.nbytes = 16 << 20; /* up to 16 MB: several wire chunks */
        x.data = malloc((size_t)x.nbytes);
        int64_t step = strcmp(argv[2], "*") == 0 ? TFC_TRANSPORT_ANY_STEP : atoll(argv[2]), got;
        if (report(tfc_transport_recv(T, argv[1], step, &x, atoll(argv[5]), &got, &ERR)) ==
            TFC_OK)
            print_tensor(&x, got);
        free(x.data);
    } else if (strcmp(cmd, "post") == 0 && argc == 5) {
        int i = 0;
        while (i < MAX_POSTED && POSTED[i] != NULL) ++i;
        if (i == MAX_POSTED) return printf("ERR -1 too many posted recvs\n"), 0;
        tfc_transport_tensor *x = &POSTED_TENSORS[i];
        memset(x, 0, sizeof *x);
        x->dtype = dtype_of(argv[3]);
        parse_dims(argv[4], x);
        x->nbytes = 1 << 16;
        x->data = POSTED_DATA[i];
        int64_t step = strcmp(argv[2], "*") == 0 ? TFC_TRANSPORT_ANY_STEP : atoll(argv[2]);
        if (report(tfc_transport_recv_post(T, argv[1], step, x, &POSTED[i], &ERR)) == TFC_OK)
            printf("request %d\n", i);
    } else if (strcmp(cmd, "wait") == 0 && argc == 3) {
        int i = atoi(argv[1]);
        int64_t got;
        int rc = report(tfc_transport_recv_wait(T, POSTED[i], atoll(argv[2]), &got, &ERR));
        if (rc != TFC_ERR_DEADLINE_EXCEEDED) POSTED[i] = NULL;
        if (rc == TFC_OK) print_tensor(&POSTED_TENSORS[i], got);
    } else if (strcmp(cmd, "abandon") == 0 && argc == 2) {
        tfc_transport_recv_abandon(T, POSTED[atoi(argv[1])]);
        POSTED[atoi(argv[1])] = NULL;
        printf("ok\n");
    } else if (strcmp(cmd, "poll") == 0 && argc >= 4) {
        int index = -1;
        int64_t step = strcmp(argv[1], "*") == 0 ? TFC_TRANSPORT_ANY_STEP : atoll(argv[1]);
        if (report(tfc_transport_poll(T, (const char *const *)argv + 3, argc - 3, step,
                                      atoll(argv[2]), &index, &ERR)) == TFC_OK)
            printf("index %d\n", index);
    } else if (strcmp(cmd, "stress_send") == 0 && argc == 4) {
        int peer = atoi(argv[1]), keys = atoi(argv[2]), steps = atoi(argv[3]), rc = TFC_OK;
        float buf[35];
        char key[64];
        for (int s = 0; s < steps && rc == TFC_OK; ++s)
            for (int k = 0; k < keys && rc == TFC_OK; ++k) {
                tfc_transport_tensor x;
                stress_tensor(k, s, buf, &x);
                snprintf(key, sizeof key, "/job:worker/task:0;/job:ps/task:0;t%d:0", k);
                rc = report(tfc_transport_send(T, peer, key, s, &x, &ERR));
            }
        if (rc == TFC_OK) printf("ok\n");
    } else if (strcmp(cmd, "stress_recv") == 0 && argc == 4) {
        int keys = atoi(argv[1]), steps = atoi(argv[2]), rc = TFC_OK;
        float want[35], got[35];
        char key[64];
        /* receive in another order than sent: last key first, so most arrive before their recv */
        for (int s = 0; s < steps && rc == TFC_OK; ++s)
            for (int k = keys - 1; k >= 0 && rc == TFC_OK; --k) {
                tfc_transport_tensor w, x;
                stress_tensor(k, s, want, &w);
                x = w;
                x.data = got;
                snprintf(key, sizeof key, "/job:worker/task:0;/job:ps/task:0;t%d:0", k);
                rc = report(tfc_transport_recv(T, key, s, &x, atoll(argv[3]), NULL, &ERR));
                if (rc == TFC_OK && memcmp(want, got, (size_t)w.nbytes) != 0) {
                    printf("ERR -1 wrong bytes in %s at step %d\n", key, s);
                    rc = -1;
                }
            }
        if (rc == TFC_OK) printf("ok\n");
    } else if (strcmp(cmd, "stress_drain") == 0 && argc == 4) {
        int keys = atoi(argv[1]), steps = atoi(argv[2]), rc = TFC_OK;
        int64_t taken = 0;
        double end = now_s() + 1e-3 * (double)atoll(argv[3]);
        char key[64];
        while (rc == TFC_OK && taken < (int64_t)keys * steps && now_s() < end)
            for (int k = 0; k < keys && rc == TFC_OK; ++k) {
                /* a buffer that lives no longer than its recv, as in a caller that frees it
                 * when the recv fails: a reader must not write it after the recv returned */
                float want[35], *got = (float *)malloc(sizeof want);
                tfc_transport_tensor w, x;
                stress_tensor(k, 0, want, &w);
                x = w;
                x.data = got;
                snprintf(key, sizeof key, "/job:worker/task:0;/job:ps/task:0;t%d:0", k);
                int64_t step;
                int status = tfc_transport_recv(T, key, TFC_TRANSPORT_ANY_STEP, &x, 0, &step, &ERR);
                if (status == TFC_OK) {
                    ++taken;
                    stress_tensor(k, step, want, &w);
                    if (memcmp(want, got, (size_t)w.nbytes) != 0) {
                        printf("ERR -1 wrong bytes in %s at step %" PRId64 "\n", key, step);
                        rc = -1;
                    }
                } else if (status != TFC_ERR_DEADLINE_EXCEEDED) {
                    rc = report(status);
                }
                free(got);
            }
        if (rc == TFC_OK) printf("taken %" PRId64 "\n", taken);
    } else if (strcmp(cmd, "cancel") == 0) {
        tfc_transport_cancel(T);
        printf("ok\n");
    } else if (strcmp(cmd, "stats") == 0) {
        tfc_transport_stats s;
        tfc_transport_get_stats(T, &s);
        printf("stats %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
               " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
               s.frames_sent, s.frames_received, s.bytes_sent, s.bytes_received, s.bad_frames,
               s.refused_handshakes, s.refused_frames, s.evicted_tensors, s.closed_connections,
               s.held_bytes, s.held_tensors);
    } else if (strcmp(cmd, "bench_send") == 0 && argc == 4) {
        int64_t bytes = atoll(argv[2]);
        int reps = atoi(argv[3]), rc = TFC_OK;
        float *data = (float *)malloc((size_t)bytes);
        for (int64_t i = 0; i < bytes / 4; ++i) data[i] = (float)(i % 1000) * 0.5f;
        tfc_transport_tensor x = {TFC_DTYPE_F32, 1, {bytes / 4}, data, bytes};
        for (int r = 0; r < reps && rc == TFC_OK; ++r)
            rc = report(tfc_transport_send(T, atoi(argv[1]), "bench", r, &x, &ERR));
        if (rc == TFC_OK) printf("ok\n");
        free(data);
    } else if (strcmp(cmd, "bench_recv") == 0 && argc == 3) {
        int64_t bytes = atoll(argv[1]);
        int reps = atoi(argv[2]), rc = TFC_OK;
        /* two buffers: the recv of step r + 1 is posted before step r is waited for */
        float *data[2] = {(float *)malloc((size_t)bytes), (float *)malloc((size_t)bytes)};
        memset(data[0], 0, (size_t)bytes); /* page faults are no part of the measurement */
        memset(data[1], 0, (size_t)bytes);
        tfc_transport_tensor x[2] = {{TFC_DTYPE_F32, 1, {bytes / 4}, data[0], bytes},
                                     {TFC_DTYPE_F32, 1, {bytes / 4}, data[1], bytes}};
        tfc_transport_request *req[2] = {NULL, NULL};
        double start = 0;
        rc = report(tfc_transport_recv_post(T, "bench", 0, &x[0], &req[0], &ERR));
        for (int r = 0; r < reps && rc == TFC_OK; ++r) {
            if (r + 1 < reps)
                rc = report(tfc_transport_recv_post(T, "bench", r + 1, &x[(r + 1) % 2],
                                                    &req[(r + 1) % 2], &ERR));
            if (rc == TFC_OK) {
                rc = report(tfc_transport_recv_wait(T, req[r % 2], 60000, NULL, &ERR));
                if (rc != TFC_ERR_DEADLINE_EXCEEDED) req[r % 2] = NULL; /* finished */
            }
            if (r == 0) start = now_s();
        }
        for (int i = 0; i < 2; ++i) tfc_transport_recv_abandon(T, req[i]);
        if (rc == TFC_OK) printf("seconds %.9f\n", now_s() - start);
        free(data[0]), free(data[1]);
    } else if (strcmp(cmd, "raw_listen") == 0) {
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        raw_listen_fd = socket(AF_INET, SOCK_STREAM, 0);
        socklen_t len = sizeof a;
        if (bind(raw_listen_fd, (struct sockaddr *)&a, len) != 0 || listen(raw_listen_fd, 4) != 0)
            return printf("ERR -1 raw listen\n"), 0;
        getsockname(raw_listen_fd, (struct sockaddr *)&a, &len);
        printf("port %d\n", ntohs(a.sin_port));
    } else if (strcmp(cmd, "raw_accept") == 0 && argc == 3) {
        int fd = accept(raw_listen_fd, NULL, NULL);
        size_t bytes = (size_t)atoll(argv[1]);
        int reps = atoi(argv[2]);
        char *buf = (char *)malloc(bytes);
        memset(buf, 0, bytes);
        double start = 0;
        for (int r = 0; r < reps; ++r) {
            for (size_t got = 0; got < bytes;) {
                ssize_t n = recv(fd, buf + got, bytes - got, 0);
                if (n <= 0) return printf("ERR -1 raw recv\n"), 0;
                got += (size_t)n;
            }
            if (r == 0) start = now_s();
        }
        printf("seconds %.9f\n", now_s() - start);
        free(buf);
        close(fd);
    } else if (strcmp(cmd, "raw_send") == 0 && argc == 4) {
        char host[64];
        snprintf(host, sizeof host, "%s", argv[1]);
        char *colon = strrchr(host, ':');
        *colon = '\0';
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)atoi(colon + 1));
        inet_pton(AF_INET, host, &a.sin_addr);
        int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
            return printf("ERR -1 raw connect\n"), 0;
        size_t bytes = (size_t)atoll(argv[2]);
        int reps = atoi(argv[3]);
        char *buf = (char *)malloc(bytes);
        memset(buf, 7, bytes);
        for (int r = 0; r < reps; ++r)
            for (size_t sent = 0; sent < bytes;) {
                ssize_t n = send(fd, buf + sent, bytes - sent, MSG_NOSIGNAL);
                if (n <= 0) return printf("ERR -1 raw send\n"), 0;
                sent += (size_t)n;
            }
        free(buf);
        close(fd);
        printf("ok\n");
    } else if (strcmp(cmd, "selftest") == 0) {
        selftest();
    } else if (strcmp(cmd, "crc") == 0) {
        size_t n;
        uint8_t *data = from_hex(argc > 1 ? argv[1] : "", &n);
        printf("%08x %08x\n", tfc_crc32c(0, data, n), tfc_crc32c_portable(0, data, n));
        free(data);
    } else if (strcmp(cmd, "hmac") == 0) {
        size_t nk, nd;
        uint8_t *key = from_hex(argc > 1 ? argv[1] : "", &nk);
        uint8_t *data = from_hex(argc > 2 ? argv[2] : "", &nd), mac[32];
        tfc_hmac_sha256(key, nk, data, nd, mac);
        print_hex(mac, 32);
        printf("\n");
        free(key), free(data);
    } else if ((strcmp(cmd, "f16") == 0 || strcmp(cmd, "bf16") == 0 ||
                strcmp(cmd, "f16_portable") == 0) &&
               argc == 2) {
        size_t n;
        uint8_t *data = from_hex(argv[1], &n);
        uint16_t *out = (uint16_t *)malloc(n / 2 + 2);
        float *in = (float *)malloc(n + 4);
        memcpy(in, data, n);
        if (strcmp(cmd, "f16") == 0) tfc_transport_f32_to_f16(in, out, (int64_t)n / 4);
        else if (cmd[0] == 'f') tfc_transport_f32_to_f16_portable(in, out, (int64_t)n / 4);
        else tfc_transport_f32_to_bf16(in, out, (int64_t)n / 4);
        print_hex(out, n / 2);
        printf("\n");
        free(data), free(out), free(in);
    } else if (strcmp(cmd, "widen16") == 0 && argc == 3) {
        size_t n;
        uint8_t *data = from_hex(argv[2], &n);
        uint16_t *in = (uint16_t *)malloc(n + 2);
        float *out = (float *)malloc(2 * n + 4);
        memcpy(in, data, n);
        if (strcmp(argv[1], "f16") == 0) tfc_transport_f16_to_f32(in, out, (int64_t)n / 2);
        else if (argv[1][0] == 'f') tfc_transport_f16_to_f32_portable(in, out, (int64_t)n / 2);
        else tfc_transport_bf16_to_f32(in, out, (int64_t)n / 2);
        print_hex(out, 2 * n);
        printf("\n");
        free(data), free(in), free(out);
    } else {
        printf("ERR -1 unknown command '%s' with %d arguments\n", cmd, argc - 1);
    }
    return 0;
}

int main(void) {
    size_t cap = 1 << 20;
    char *line = (char *)malloc(cap);
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, (int)cap, stdin) != NULL) {
        size_t n = strlen(line);
        while (n == cap - 1 && line[n - 1] != '\n') { /* a long hex argument */
            char *grown = (char *)realloc(line, cap * 2);
            line = grown;
            if (fgets(line + n, (int)(cap * 2 - n), stdin) == NULL) break;
            cap *= 2;
            n = strlen(line);
        }
        if (command(line)) break;
        fflush(stdout);
    }
    free(line);
    for (int i = 0; i < MAX_POSTED; ++i) tfc_transport_recv_abandon(T, POSTED[i]);
    tfc_transport_destroy(T);
    if (raw_listen_fd >= 0) close(raw_listen_fd);
    return 0;
}
