/* TensorBoard event files from C (tfc_events.h). The protocol-buffer bytes are written by hand:
 * Event {1: wall_time double, 2: step int64, 3: file_version string, 5: summary Summary},
 * Summary {1: repeated Value}, Value {1: tag string, 2: simple_value float}, the field numbers
 * of tensorflow/core/util/event.proto and framework/summary.proto. */
#define _POSIX_C_SOURCE 200809L

#include "tfc_events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tfc_driver.h"

/* CRC-32C (Castagnoli), bit by bit: event records are tens of bytes */
static uint32_t crc32c(const unsigned char *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static uint32_t masked_crc(const unsigned char *p, size_t n) {
    uint32_t crc = crc32c(p, n);
    return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

typedef struct {
    unsigned char *data;
    size_t len, cap;
    int failed;
} buffer;

static void put(buffer *b, const void *p, size_t n) {
    if (b->failed) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n) cap *= 2;
        unsigned char *grown = realloc(b->data, cap);
        if (grown == NULL) {
            b->failed = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_varint(buffer *b, uint64_t v) {
    unsigned char bytes[10];
    int n = 0;
    while (v > 0x7F) {
        bytes[n++] = (unsigned char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    bytes[n++] = (unsigned char)v;
    put(b, bytes, (size_t)n);
}

static void put_le(buffer *b, uint64_t v, int width) {
    unsigned char bytes[8];
    for (int i = 0; i < width; ++i) bytes[i] = (unsigned char)(v >> (8 * i));
    put(b, bytes, (size_t)width);
}

static void put_bytes_field(buffer *b, int field, const void *p, size_t n) {
    put_varint(b, (uint64_t)field << 3 | 2);
    put_varint(b, n);
    put(b, p, n);
}

static void put_double_field(buffer *b, int field, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    put_varint(b, (uint64_t)field << 3 | 1);
    put_le(b, bits, 8);
}

static double wall_time(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

/* One TFRecord of the Event in `event`. */
static int write_record(tfc_events *e, const buffer *event, tfc_error *err) {
    if (event->failed) return tfc_error_setf(err, TFC_ERR_RESOURCE_EXHAUSTED, "out of memory");
    unsigned char header[12];
    for (int i = 0; i < 8; ++i) header[i] = (unsigned char)((uint64_t)event->len >> (8 * i));
    uint32_t crc = masked_crc(header, 8);
    for (int i = 0; i < 4; ++i) header[8 + i] = (unsigned char)(crc >> (8 * i));
    uint32_t data_crc = masked_crc(event->data, event->len);
    unsigned char footer[4];
    for (int i = 0; i < 4; ++i) footer[i] = (unsigned char)(data_crc >> (8 * i));
    if (fwrite(header, 1, 12, e->file) != 12 ||
        fwrite(event->data, 1, event->len, e->file) != event->len ||
        fwrite(footer, 1, 4, e->file) != 4)
        return tfc_error_setf(err, TFC_ERR_INTERNAL, "writing %s: %s", e->path, strerror(errno));
    return TFC_OK;
}

int tfc_events_open(tfc_events *e, const char *dir, tfc_error *err) {
    char msg[512];
    e->file = NULL;
    if (tfc_driver_mkdirs(dir, msg, sizeof(msg)) != 0)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "--logdir: %s", msg);
    char host[256] = "localhost";
    if (gethostname(host, sizeof(host) - 1) != 0) strcpy(host, "localhost");
    host[sizeof(host) - 1] = '\0';
    snprintf(e->path, sizeof(e->path), "%s/events.out.tfevents.%010ld.%s", dir,
             (long)time(NULL), host);
    e->file = fopen(e->path, "ab");
    if (e->file == NULL)
        return tfc_error_setf(err, TFC_ERR_INVALID_ARGUMENT, "cannot create %s: %s", e->path,
                              strerror(errno));
    buffer b = {0};
    put_double_field(&b, 1, wall_time());
    static const char version[] = "brain.Event:2";
    put_bytes_field(&b, 3, version, sizeof(version) - 1);
    int status = write_record(e, &b, err);
    free(b.data);
    if (status == TFC_OK) status = tfc_events_flush(e, err);
    return status;
}

int tfc_events_scalars(tfc_events *e, int64_t step, int n, const char *const *tags,
                       const float *values, tfc_error *err) {
    buffer summary = {0}, value = {0}, event = {0};
    for (int i = 0; i < n; ++i) {
        value.len = 0;
        put_bytes_field(&value, 1, tags[i], strlen(tags[i]));
        uint32_t bits;
        memcpy(&bits, &values[i], sizeof(bits));
        put_varint(&value, 2 << 3 | 5);
        put_le(&value, bits, 4);
        put_bytes_field(&summary, 1, value.data, value.len);
        if (value.failed) summary.failed = 1;
    }
    put_double_field(&event, 1, wall_time());
    if (step != 0) {
        put_varint(&event, 2 << 3 | 0);
        put_varint(&event, (uint64_t)step);
    }
    put_bytes_field(&event, 5, summary.data, summary.len);
    if (summary.failed) event.failed = 1;
    int status = write_record(e, &event, err);
    free(summary.data);
    free(value.data);
    free(event.data);
    return status;
}

int tfc_events_flush(tfc_events *e, tfc_error *err) {
    if (fflush(e->file) != 0)
        return tfc_error_setf(err, TFC_ERR_INTERNAL, "writing %s: %s", e->path, strerror(errno));
    return TFC_OK;
}

void tfc_events_close(tfc_events *e) {
    if (e->file != NULL) fclose(e->file);
    e->file = NULL;
}
