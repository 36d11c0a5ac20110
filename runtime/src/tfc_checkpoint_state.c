/* The "checkpoint" state file of a checkpoint directory: TensorFlow's CheckpointState in
 * protocol buffer text format, read and written as tfc/io/checkpoint_state.py does. */
#define _POSIX_C_SOURCE 200809L

#include "tfc_checkpoint_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "tfc_json.h" /* character classes and UTF-8 checks */

#define CK_STATE_MAX_BYTES ((size_t)64 << 20) /* far above any real state file */

void tfc_checkpoint_state_free(tfc_checkpoint_state *state) {
    if (state == NULL) return;
    TFC_FREE(state->model_checkpoint_path);
    for (int i = 0; i < state->n_all; ++i) TFC_FREE(state->all_model_checkpoint_paths[i]);
    TFC_FREE(state->all_model_checkpoint_paths);
    state->model_checkpoint_path = NULL;
    state->all_model_checkpoint_paths = NULL;
    state->n_all = 0;
}

/* C escapes as protobuf's text format writes them: non-ASCII bytes in octal. */
static void ck_put_text_string(ck_buf *b, const char *s) {
    tfc_ck_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
        char tmp[5];
        if (*p == '"' || *p == '\'' || *p == '\\') {
            tmp[0] = '\\', tmp[1] = (char)*p, tmp[2] = '\0';
        } else if (*p == '\n' || *p == '\r' || *p == '\t') {
            tmp[0] = '\\', tmp[1] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't', tmp[2] = '\0';
        } else if (*p >= 0x20 && *p < 0x7F) {
            tmp[0] = (char)*p, tmp[1] = '\0';
        } else {
            tmp[0] = '\\';
            tmp[1] = (char)('0' + (*p >> 6));
            tmp[2] = (char)('0' + ((*p >> 3) & 7));
            tmp[3] = (char)('0' + (*p & 7));
            tmp[4] = '\0';
        }
        tfc_ck_puts(b, tmp);
    }
    tfc_ck_puts(b, "\"\n");
}

int tfc_checkpoint_state_write(const char *dir, const tfc_checkpoint_state *state,
                               tfc_error *err) {
    if (dir == NULL || state == NULL || state->model_checkpoint_path == NULL ||
        state->n_all < 0 || (state->n_all > 0 && state->all_model_checkpoint_paths == NULL))
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint state: a directory and a "
                       "complete state must be given");
    char *path = tfc_ck_join(dir, "checkpoint");
    if (path == NULL) return tfc_ck_oom(err, dir);
    ck_buf text = {0};
    tfc_ck_puts(&text, "model_checkpoint_path: ");
    ck_put_text_string(&text, state->model_checkpoint_path);
    for (int i = 0; i < state->n_all; ++i) {
        if (state->all_model_checkpoint_paths[i] == NULL) continue;
        tfc_ck_puts(&text, "all_model_checkpoint_paths: ");
        ck_put_text_string(&text, state->all_model_checkpoint_paths[i]);
    }
    int status = text.oom ? tfc_ck_oom(err, path)
                          : tfc_ck_write_atomically(path, text.p, text.n, NULL, NULL, err);
    TFC_FREE(text.p);
    TFC_FREE(path);
    return status;
}

static int ck_is_text_ws(int c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static int ck_is_ident(int c, int first) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (!first && tfc_json_is_digit(c));
}

static int ck_line_of(const char *s, size_t pos) {
    int line = 1;
    for (size_t i = 0; i < pos; ++i) line += s[i] == '\n';
    return line;
}

/* Decode one quoted literal at s[*pos] (escapes as Python's parse_checkpoint_state takes
 * them) onto out. Returns NULL on success, else what is wrong. */
static const char *ck_text_literal(const char *s, size_t n, size_t *pos, ck_buf *out) {
    char quote = s[*pos];
    size_t i = *pos + 1;
    for (;;) {
        if (i >= n || s[i] == '\n') return "unterminated string";
        char c = s[i];
        if (c == quote) break;
        if (c != '\\') {
            tfc_ck_put(out, &c, 1);
            ++i;
            continue;
        }
        if (i + 1 >= n || s[i + 1] == '\n') return "unterminated string";
        char e = s[i + 1];
        static const char simple_in[] = "nrt\"'\\abfv?", simple_out[] = "\n\r\t\"'\\\a\b\f\v?";
        const char *hit = strchr(simple_in, e);
        if (e >= '0' && e <= '7') {
            unsigned v = 0;
            size_t k = i + 1;
            while (k < n && k < i + 4 && s[k] >= '0' && s[k] <= '7')
                v = v * 8 + (unsigned)(s[k++] - '0');
            char byte = (char)(v & 0xFF);
            tfc_ck_put(out, &byte, 1);
            i = k;
        } else if (e == 'x' || e == 'X') {
            unsigned v = 0;
            size_t k = i + 2;
            while (k < n && k < i + 4 && tfc_json_hex_value((unsigned char)s[k]) >= 0)
                v = v * 16 + (unsigned)tfc_json_hex_value((unsigned char)s[k++]);
            if (k == i + 2) return "\\x escape without hex digits";
            char byte = (char)v;
            tfc_ck_put(out, &byte, 1);
            i = k;
        } else if (e != '\0' && hit != NULL) {
            tfc_ck_put(out, &simple_out[hit - simple_in], 1);
            i += 2;
        } else {
            return "unknown escape";
        }
    }
    *pos = i + 1;
    return NULL;
}

int tfc_ck_state_append(tfc_checkpoint_state *st, char *path) {
    char **grown = TFC_REALLOC(st->all_model_checkpoint_paths,
                               ((size_t)st->n_all + 1) * sizeof *grown);
    if (grown == NULL) return -1;
    st->all_model_checkpoint_paths = grown;
    grown[st->n_all++] = path;
    return 0;
}

static int ck_parse_state(const char *file, const char *s, size_t n, tfc_checkpoint_state *st,
                          tfc_error *err) {
    size_t pos = 0;
    ck_buf value = {0};
    int status = TFC_OK;
    while (pos < n && status == TFC_OK) {
        if (ck_is_text_ws((unsigned char)s[pos])) {
            ++pos;
            continue;
        }
        if (s[pos] == '#') {
            while (pos < n && s[pos] != '\n') ++pos;
            continue;
        }
        size_t start = pos, name_end = pos;
        const char *problem = NULL;
        if (!ck_is_ident((unsigned char)s[pos], 1)) {
            problem = "cannot parse";
        } else {
            while (pos < n && ck_is_ident((unsigned char)s[pos], 0)) ++pos;
            name_end = pos;
            while (pos < n && ck_is_text_ws((unsigned char)s[pos])) ++pos;
            if (pos >= n || s[pos] != ':') problem = "cannot parse";
            else ++pos;
        }
        while (problem == NULL && pos < n && ck_is_text_ws((unsigned char)s[pos])) ++pos;
        int is_string = pos < n && (s[pos] == '"' || s[pos] == '\'');
        value.n = 0;
        value.oom = 0;
        tfc_ck_put(&value, "", 0);
        if (problem == NULL && is_string) {
            while (problem == NULL && pos < n && (s[pos] == '"' || s[pos] == '\'')) {
                problem = ck_text_literal(s, n, &pos, &value);
                while (pos < n && ck_is_text_ws((unsigned char)s[pos])) ++pos;
            }
        } else if (problem == NULL) {
            size_t t = pos;
            while (t < n && strchr("-+0123456789.eEinfINFa", s[t]) != NULL && s[t] != '\0') ++t;
            if (t == pos) problem = "cannot parse";
            else {
                tfc_ck_put(&value, s + pos, t - pos);
                char *endp;
                if (!value.oom) (void)strtod(value.p, &endp);
                if (!value.oom && *endp != '\0') problem = "cannot parse a number";
                pos = t;
            }
        }
        if (problem == NULL && value.oom) {
            status = tfc_ck_oom(err, file);
            break;
        }
        if (problem != NULL) {
            status = CK_FAIL(err, TFC_ERR_DATA_LOSS, "checkpoint state file %s line %d: %s",
                             file, ck_line_of(s, start), problem);
            break;
        }
        size_t name_len = name_end - start;
#define CK_IS(lit) (name_len == sizeof lit - 1 && memcmp(s + start, lit, name_len) == 0)
        if (is_string && (CK_IS("model_checkpoint_path") || CK_IS("all_model_checkpoint_paths"))) {
            if (strlen(value.p) != value.n ||
                tfc_utf8_valid_prefix((const unsigned char *)value.p, value.n) != value.n) {
                status = CK_FAIL(err, TFC_ERR_DATA_LOSS, "checkpoint state file %s line %d: a "
                                 "path holds a NUL character or invalid UTF-8", file,
                                 ck_line_of(s, start));
                break;
            }
            char *copy = tfc_ck_strdup(value.p);
            if (copy == NULL) {
                status = tfc_ck_oom(err, file);
            } else if (CK_IS("model_checkpoint_path")) {
                TFC_FREE(st->model_checkpoint_path);
                st->model_checkpoint_path = copy;
            } else if (tfc_ck_state_append(st, copy) != 0) {
                TFC_FREE(copy);
                status = tfc_ck_oom(err, file);
            }
        } else if (!is_string && (CK_IS("all_model_checkpoint_timestamps") ||
                                  CK_IS("last_preserved_timestamp"))) {
            /* timestamps TF may write: nothing here needs them */
        } else {
            status = CK_FAIL(err, TFC_ERR_DATA_LOSS, "checkpoint state file %s line %d: "
                             "unexpected field %.*s", file, ck_line_of(s, start), (int)name_len,
                             s + start);
        }
#undef CK_IS
    }
    TFC_FREE(value.p);
    return status;
}

int tfc_checkpoint_state_read(const char *dir, tfc_checkpoint_state *state, tfc_error *err) {
    if (dir == NULL || state == NULL)
        return CK_FAIL(err, TFC_ERR_INVALID_ARGUMENT, "checkpoint state: a directory and a "
                       "state to fill must be given");
    memset(state, 0, sizeof *state);
    char *path = tfc_ck_join(dir, "checkpoint");
    if (path == NULL) return tfc_ck_oom(err, dir);
    int status = TFC_OK;
    char *text = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        status = errno == ENOENT ? CK_FAIL(err, TFC_ERR_NOT_FOUND, "checkpoint state file %s "
                                           "does not exist", path)
                                 : tfc_ck_io_error(err, "open", path, errno);
    } else if (fstat(fd, &st) != 0) {
        status = tfc_ck_io_error(err, "stat", path, errno);
    } else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > CK_STATE_MAX_BYTES) {
        status = CK_FAIL(err, TFC_ERR_DATA_LOSS, "checkpoint state file %s is not a regular "
                         "file of at most %zu bytes", path, CK_STATE_MAX_BYTES);
    } else if ((text = TFC_MALLOC((size_t)st.st_size + 1)) == NULL) {
        status = tfc_ck_oom(err, path);
    } else {
        int64_t got = tfc_ck_pread_full(fd, text, (size_t)st.st_size, 0);
        if (got < 0) {
            status = tfc_ck_io_error(err, "read", path, errno);
        } else {
            text[got] = '\0';
            status = ck_parse_state(path, text, (size_t)got, state, err);
        }
    }
    if (fd >= 0) close(fd);
    TFC_FREE(text);
    TFC_FREE(path);
    if (status != TFC_OK) tfc_checkpoint_state_free(state);
    return status;
}

