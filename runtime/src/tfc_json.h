/* JSON and UTF-8 for safetensors headers (internal to runtime/src, not part of the API).
 *
 * Reading is two-step: tfc_json_skip_value checks the syntax of a whole value first; the other
 * readers then assume well-formed JSON and take exactly the forms a header holds (objects of
 * members, strings, lists of non-negative integers). Nothing here allocates except where a
 * function says it returns a malloc'd (TFC_MALLOC) result. */
#ifndef TFC_JSON_H
#define TFC_JSON_H

#include <stddef.h>
#include <stdint.h>

#define TFC_JSON_MAX_DEPTH 64

/* A scanner over s[0, n): pos advances as values are read. */
typedef struct {
    const char *s;
    size_t n, pos;
    const char *what; /* the syntax error, when a skip fails */
} tfc_json;

/* One member of a JSON object: its decoded key and where its value lies. */
typedef struct {
    char *key;
    size_t key_len;
    size_t value_begin, value_end;
    size_t index; /* position among the object's members */
} tfc_json_member;

/* Results of the readers that decode strings. */
enum { TFC_JSON_STR_OK = 0, TFC_JSON_STR_OOM = 1, TFC_JSON_STR_SURROGATE = 2 };

static inline int tfc_json_is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline void tfc_json_skip_ws(tfc_json *j) {
    while (j->pos < j->n && tfc_json_is_ws(j->s[j->pos])) ++j->pos;
}

static inline int tfc_json_peek(const tfc_json *j) {
    return j->pos < j->n ? (unsigned char)j->s[j->pos] : -1;
}

static inline int tfc_json_is_digit(int c) { return c >= '0' && c <= '9'; }

static inline int tfc_json_hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The length of the valid UTF-8 prefix of s (RFC 3629): n when all of s is valid. */
size_t tfc_utf8_valid_prefix(const unsigned char *s, size_t n);

/* Skip one JSON value of any kind at j->pos, checking its syntax. Returns 0, or -1 with j->what
 * set and j->pos at the error. Nesting deeper than TFC_JSON_MAX_DEPTH is an error. */
int tfc_json_skip_value(tfc_json *j);

/* Decode the (syntax-checked) string at j->pos into a malloc'd buffer; *len excludes the NUL
 * that terminates it, so strlen(*out) != *len means the string holds a NUL character. Returns
 * a TFC_JSON_STR_* code. */
int tfc_json_decode_string(tfc_json *j, char **out, size_t *len);

/* Split the (syntax-checked) object at j->pos into members (a malloc'd array, freed with
 * tfc_json_free_members). Returns a TFC_JSON_STR_* code. */
int tfc_json_members(tfc_json *j, tfc_json_member **out, size_t *count);
void tfc_json_free_members(tfc_json_member *m, size_t n);

/* Keys compared bytewise, NUL characters included. */
int tfc_json_key_cmp(const tfc_json_member *a, const tfc_json_member *b);

/* The member that repeats an earlier key, first in document order (NULL if none); *oom is set
 * when memory ran out. */
const tfc_json_member *tfc_json_duplicate(const tfc_json_member *m, size_t n, int *oom);

/* Read the (syntax-checked) value s[begin, end) as a list of non-negative int64 integers.
 * Stores the first `max` in vals and the length in *count. Returns 0, or -1 when it is not
 * such a list. */
int tfc_json_uint_list(const char *s, size_t begin, size_t end, int64_t *vals, int max,
                       int64_t *count);

#endif /* TFC_JSON_H */
