/* JSON and UTF-8 for safetensors headers: a syntax pass over any value, then readers for
 * exactly the forms a header holds (see tfc_json.h). */
#include "tfc_json.h"

#include <stdlib.h>
#include <string.h>

#include "tfc_platform.h"

#define JSON_INT64_MAX ((uint64_t)INT64_MAX)

/* ---------------------------------------------------------------------------------------------
 * UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF) */

/* Returns the length of the valid prefix: n when all of s is valid. */
size_t tfc_utf8_valid_prefix(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t len;
        unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (c < 0x80) {
            ++i;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            return i;
        }
        if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) return i;
        for (size_t k = 2; k < len; ++k)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
        i += len;
    }
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * JSON: a syntax pass over any value, then readers for exactly the safetensors header form */

static int json_syntax(tfc_json *j, const char *what) {
    j->what = what;
    return -1;
}

static int json_skip_string(tfc_json *j) {
    if (tfc_json_peek(j) != '"') return json_syntax(j, "expected a string");
    ++j->pos;
    for (;;) {
        int c = tfc_json_peek(j);
        if (c < 0) return json_syntax(j, "unterminated string");
        if (c == '"') {
            ++j->pos;
            return 0;
        }
        if (c < 0x20) return json_syntax(j, "control character in string");
        if (c == '\\') {
            ++j->pos;
            c = tfc_json_peek(j);
            if (c == 'u') {
                for (int k = 1; k <= 4; ++k)
                    if (j->pos + (size_t)k >= j->n || tfc_json_hex_value(j->s[j->pos + k]) < 0)
                        return json_syntax(j, "invalid \\u escape");
                j->pos += 5;
                continue;
            }
            if (c < 0 || strchr("\"\\/bfnrt", c) == NULL) return json_syntax(j, "invalid escape");
        }
        ++j->pos;
    }
}

static int json_skip_number(tfc_json *j) {
    if (tfc_json_peek(j) == '-') ++j->pos;
    if (tfc_json_peek(j) == '0') {
        ++j->pos;
    } else if (tfc_json_is_digit(tfc_json_peek(j))) {
        while (tfc_json_is_digit(tfc_json_peek(j))) ++j->pos;
    } else {
        return json_syntax(j, "invalid number");
    }
    if (tfc_json_peek(j) == '.') {
        ++j->pos;
        if (!tfc_json_is_digit(tfc_json_peek(j))) return json_syntax(j, "invalid number");
        while (tfc_json_is_digit(tfc_json_peek(j))) ++j->pos;
    }
    if (tfc_json_peek(j) == 'e' || tfc_json_peek(j) == 'E') {
        ++j->pos;
        if (tfc_json_peek(j) == '+' || tfc_json_peek(j) == '-') ++j->pos;
        if (!tfc_json_is_digit(tfc_json_peek(j))) return json_syntax(j, "invalid number");
        while (tfc_json_is_digit(tfc_json_peek(j))) ++j->pos;
    }
    return 0;
}

static int json_skip_key_colon(tfc_json *j) {
    tfc_json_skip_ws(j);
    if (tfc_json_peek(j) != '"') return json_syntax(j, "expected a string key");
    if (json_skip_string(j) != 0) return -1;
    tfc_json_skip_ws(j);
    if (tfc_json_peek(j) != ':') return json_syntax(j, "expected ':'");
    ++j->pos;
    return 0;
}

/* Skip one JSON value of any kind, checking its syntax; iterative, so depth costs no stack. */
int tfc_json_skip_value(tfc_json *j) {
    char stack[TFC_JSON_MAX_DEPTH];
    int depth = 0;
    for (;;) {
        tfc_json_skip_ws(j);
        int c = tfc_json_peek(j);
        if (c == '{' || c == '[') {
            ++j->pos;
            tfc_json_skip_ws(j);
            if (tfc_json_peek(j) == (c == '{' ? '}' : ']')) {
                ++j->pos;
            } else {
                if (depth == TFC_JSON_MAX_DEPTH) return json_syntax(j, "nested too deeply");
                stack[depth++] = (char)c;
                if (c == '{' && json_skip_key_colon(j) != 0) return -1;
                continue;
            }
        } else if (c == '"') {
            if (json_skip_string(j) != 0) return -1;
        } else if (c == '-' || tfc_json_is_digit(c)) {
            if (json_skip_number(j) != 0) return -1;
        } else if (c == 't' && j->n - j->pos >= 4 && memcmp(j->s + j->pos, "true", 4) == 0) {
            j->pos += 4;
        } else if (c == 'f' && j->n - j->pos >= 5 && memcmp(j->s + j->pos, "false", 5) == 0) {
            j->pos += 5;
        } else if (c == 'n' && j->n - j->pos >= 4 && memcmp(j->s + j->pos, "null", 4) == 0) {
            j->pos += 4;
        } else {
            return json_syntax(j, "expected a value");
        }
        /* a value ended: close containers until one wants another element */
        for (;;) {
            if (depth == 0) return 0;
            tfc_json_skip_ws(j);
            c = tfc_json_peek(j);
            char top = stack[depth - 1];
            if (c == ',') {
                ++j->pos;
                if (top == '{' && json_skip_key_colon(j) != 0) return -1;
                break;
            }
            if (c == (top == '{' ? '}' : ']')) {
                ++j->pos;
                --depth;
                continue;
            }
            return json_syntax(j, top == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
}

static void json_put_utf8(char *out, size_t *len, uint32_t cp) {
    if (cp < 0x80) {
        out[(*len)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*len)++] = (char)(0xC0 | (cp >> 6));
        out[(*len)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*len)++] = (char)(0xE0 | (cp >> 12));
        out[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*len)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*len)++] = (char)(0xF0 | (cp >> 18));
        out[(*len)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*len)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*len)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static uint32_t json_hex4(const char *p) {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v = v * 16 + (uint32_t)tfc_json_hex_value((unsigned char)p[k]);
    return v;
}

/* Decode the (syntax-checked) string at j->pos into a malloc'd buffer; *len excludes the NUL
 * that terminates it, so strlen(*out) != *len means the string holds a NUL character. */
int tfc_json_decode_string(tfc_json *j, char **out, size_t *len) {
    size_t start = j->pos;
    tfc_json probe = *j;
    if (json_skip_string(&probe) != 0) return TFC_JSON_STR_OOM; /* unreachable: syntax checked */
    size_t end = probe.pos - 1;                                  /* the closing quote */
    char *buf = TFC_MALLOC(end - start + 1); /* decoding never lengthens: \uXXXX is 6 -> <= 3 */
    if (buf == NULL) return TFC_JSON_STR_OOM;
    size_t n = 0;
    for (size_t i = start + 1; i < end;) {
        char c = j->s[i];
        if (c != '\\') {
            buf[n++] = c;
            ++i;
            continue;
        }
        char e = j->s[i + 1];
        i += 2;
        switch (e) {
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            uint32_t cp = json_hex4(j->s + i);
            i += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                TFC_FREE(buf);
                return TFC_JSON_STR_SURROGATE;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                /* a high surrogate must be followed by an escaped low one */
                if (i + 6 > end || j->s[i] != '\\' || j->s[i + 1] != 'u') {
                    TFC_FREE(buf);
                    return TFC_JSON_STR_SURROGATE;
                }
                uint32_t lo = json_hex4(j->s + i + 2);
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    TFC_FREE(buf);
                    return TFC_JSON_STR_SURROGATE;
                }
                i += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            json_put_utf8(buf, &n, cp);
            break;
        }
        default: buf[n++] = e; break; /* \" \\ \/ */
        }
    }
    buf[n] = '\0';
    j->pos = end + 1;
    *out = buf;
    *len = n;
    return TFC_JSON_STR_OK;
}

void tfc_json_free_members(tfc_json_member *m, size_t n) {
    for (size_t i = 0; i < n; ++i) TFC_FREE(m[i].key);
    TFC_FREE(m);
}

/* Split the (syntax-checked) object at j->pos into members. Returns a TFC_JSON_STR_* code. */
int tfc_json_members(tfc_json *j, tfc_json_member **out, size_t *count) {
    tfc_json_member *m = NULL;
    size_t n = 0, cap = 0;
    int rc = TFC_JSON_STR_OK;
    ++j->pos; /* '{' */
    tfc_json_skip_ws(j);
    if (tfc_json_peek(j) == '}') ++j->pos;
    else
        for (;;) {
            if (n == cap) {
                size_t ncap = cap ? cap * 2 : 8;
                tfc_json_member *grown = TFC_REALLOC(m, ncap * sizeof *m);
                if (grown == NULL) {
                    rc = TFC_JSON_STR_OOM;
                    break;
                }
                m = grown;
                cap = ncap;
            }
            tfc_json_skip_ws(j);
            rc = tfc_json_decode_string(j, &m[n].key, &m[n].key_len);
            if (rc != TFC_JSON_STR_OK) break;
            m[n].index = n;
            tfc_json_skip_ws(j);
            ++j->pos; /* ':' */
            tfc_json_skip_ws(j);
            m[n].value_begin = j->pos;
            tfc_json_skip_value(j);
            m[n].value_end = j->pos;
            ++n;
            tfc_json_skip_ws(j);
            if (tfc_json_peek(j) == ',') {
                ++j->pos;
                continue;
            }
            ++j->pos; /* '}' */
            break;
        }
    if (rc != TFC_JSON_STR_OK) {
        tfc_json_free_members(m, n);
        return rc;
    }
    *out = m;
    *count = n;
    return TFC_JSON_STR_OK;
}

int tfc_json_key_cmp(const tfc_json_member *a, const tfc_json_member *b) {
    size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, n);
    if (c != 0) return c;
    return a->key_len < b->key_len ? -1 : a->key_len > b->key_len;
}

static int json_member_order(const void *pa, const void *pb) {
    const tfc_json_member *a = *(const tfc_json_member *const *)pa;
    const tfc_json_member *b = *(const tfc_json_member *const *)pb;
    int c = tfc_json_key_cmp(a, b);
    if (c != 0) return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* The member that repeats an earlier key, first in document order (NULL if none); -1 on OOM
 * through *oom. */
const tfc_json_member *tfc_json_duplicate(const tfc_json_member *m, size_t n, int *oom) {
    const tfc_json_member *found = NULL;
    *oom = 0;
    if (n < 2) return NULL;
    const tfc_json_member **sorted = TFC_MALLOC(n * sizeof *sorted);
    if (sorted == NULL) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; ++i) sorted[i] = &m[i];
    qsort(sorted, n, sizeof *sorted, json_member_order);
    for (size_t i = 1; i < n; ++i)
        if (tfc_json_key_cmp(sorted[i - 1], sorted[i]) == 0 &&
            (found == NULL || sorted[i]->index < found->index))
            found = sorted[i];
    TFC_FREE(sorted);
    return found;
}

/* Read a (syntax-checked) JSON value as a list of non-negative int64 integers. Stores the
 * first `max` in vals and the length in *count. Returns 0, or -1 when it is not such a list. */
int tfc_json_uint_list(const char *s, size_t begin, size_t end, int64_t *vals, int max,
                       int64_t *count) {
    size_t i = begin;
    *count = 0;
    if (i >= end || s[i] != '[') return -1;
    ++i;
    for (;;) {
        while (i < end && tfc_json_is_ws(s[i])) ++i;
        if (i < end && s[i] == ']' && *count == 0) return 0;
        if (i >= end || !tfc_json_is_digit((unsigned char)s[i])) return -1;
        uint64_t v = 0;
        while (i < end && tfc_json_is_digit((unsigned char)s[i])) {
            unsigned d = (unsigned)(s[i] - '0');
            if (v > (JSON_INT64_MAX - d) / 10) return -1; /* > INT64_MAX: not an int64 */
            v = v * 10 + d;
            ++i;
        }
        if (i < end && (s[i] == '.' || s[i] == 'e' || s[i] == 'E')) return -1;
        if (*count < max) vals[*count] = (int64_t)v;
        ++*count;
        while (i < end && tfc_json_is_ws(s[i])) ++i;
        if (i < end && s[i] == ',') {
            ++i;
            continue;
        }
        return (i < end && s[i] == ']') ? 0 : -1;
    }
}

