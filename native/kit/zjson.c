/* A small strict JSON reader; see zjson.h. */
#include "zjson.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s, *end, *start;
    char *err;
    size_t errlen;
    int failed;
} parser;

static void fail(parser *p, const char *fmt, ...) {
    if (p->failed) return;
    p->failed = 1;
    size_t line = 1;
    for (const char *c = p->start; c < p->s && c < p->end; c++) line += *c == '\n';
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (p->err && p->errlen)
        snprintf(p->err, p->errlen, "not valid JSON at line %zu (byte %ld): %s", line, (long)(p->s - p->start), what);
}

static void skip_ws(parser *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')) p->s++;
}

/* Memory ran out: not the document's fault, so the message names no place in it (zjson.h). */
static void out_of_memory(parser *p) {
    if (p->failed) return;
    p->failed = 1;
    if (p->err && p->errlen) snprintf(p->err, p->errlen, "%s", ZJ_OUT_OF_MEMORY);
}

static zj_value *new_value(parser *p, zj_type t) {
    zj_value *v = calloc(1, sizeof *v);
    if (!v) out_of_memory(p);
    else v->type = t;
    return v;
}

static int hex4(parser *p, unsigned *out) {
    if (p->end - p->s < 4) { fail(p, "short \\u escape"); return 0; }
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else { fail(p, "bad hex digit in \\u escape"); return 0; }
    }
    p->s += 4;
    *out = v;
    return 1;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* p->s is just past the opening quote. The decoded string is never longer than its source. */
static char *parse_string(parser *p, size_t *len_out) {
    const char *q = p->s;
    while (q < p->end && *q != '"') q += (*q == '\\') ? 2 : 1;
    if (q >= p->end) { fail(p, "unterminated string"); return NULL; }
    char *out = malloc((size_t)(q - p->s) + 1), *o = out;
    if (!out) { out_of_memory(p); return NULL; }
    while (*p->s != '"') {
        unsigned char c = (unsigned char)*p->s;
        if (c < 0x20) { fail(p, "control character in string"); free(out); return NULL; }
        if (c != '\\') { *o++ = (char)c; p->s++; continue; }
        p->s++;
        char e = *p->s++;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (!hex4(p, &cp)) { free(out); return NULL; }
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u') { fail(p, "lone surrogate"); free(out); return NULL; }
                p->s += 2;
                if (!hex4(p, &lo)) { free(out); return NULL; }
                if (lo < 0xDC00 || lo > 0xDFFF) { fail(p, "bad low surrogate"); free(out); return NULL; }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) { fail(p, "lone surrogate"); free(out); return NULL; }
            o += put_utf8(o, cp);
            break;
        }
        default: p->s--; fail(p, "bad escape"); free(out); return NULL;
        }
    }
    p->s++;
    *o = 0;
    *len_out = (size_t)(o - out);
    return out;
}

static zj_value *parse_value(parser *p, int depth);

static zj_value *parse_number(parser *p) {
    const char *b = p->s;
    int integer = 1;
    if (p->s < p->end && *p->s == '-') p->s++;
    if (p->s >= p->end) { fail(p, "expected a digit"); return NULL; }
    if (*p->s == '0') p->s++;
    else if (*p->s >= '1' && *p->s <= '9') while (p->s < p->end && *p->s >= '0' && *p->s <= '9') p->s++;
    else { fail(p, "expected a value"); return NULL; }
    if (p->s < p->end && *p->s == '.') {
        integer = 0;
        p->s++;
        if (p->s >= p->end || *p->s < '0' || *p->s > '9') { fail(p, "expected a digit after '.'"); return NULL; }
        while (p->s < p->end && *p->s >= '0' && *p->s <= '9') p->s++;
    }
    if (p->s < p->end && (*p->s == 'e' || *p->s == 'E')) {
        integer = 0;
        p->s++;
        if (p->s < p->end && (*p->s == '+' || *p->s == '-')) p->s++;
        if (p->s >= p->end || *p->s < '0' || *p->s > '9') { fail(p, "expected a digit in the exponent"); return NULL; }
        while (p->s < p->end && *p->s >= '0' && *p->s <= '9') p->s++;
    }
    char buf[64];
    size_t n = (size_t)(p->s - b);
    if (n >= sizeof buf) { fail(p, "number too long"); return NULL; }
    memcpy(buf, b, n);
    buf[n] = 0;
    zj_value *v = new_value(p, ZJ_NUMBER);
    if (!v) return NULL;
    v->number = strtod(buf, NULL);
    if (!isfinite(v->number)) { fail(p, "number out of range"); free(v); return NULL; }
    if (integer) {
        errno = 0;
        long long ll = strtoll(buf, NULL, 10);
        if (errno == 0) { v->is_integer = 1; v->integer = (int64_t)ll; }
    }
    return v;
}

static int literal(parser *p, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(p->end - p->s) < n || memcmp(p->s, word, n) != 0) { fail(p, "expected a value"); return 0; }
    p->s += n;
    return 1;
}

static zj_value *parse_container(parser *p, int depth, int object) {
    zj_value *v = new_value(p, object ? ZJ_OBJECT : ZJ_ARRAY), **tail;
    if (!v) return NULL;
    tail = &v->first;
    p->s++;
    skip_ws(p);
    char close = object ? '}' : ']';
    if (p->s < p->end && *p->s == close) { p->s++; return v; }
    for (;;) {
        char *key = NULL;
        size_t klen;
        skip_ws(p);
        if (object) {
            if (p->s >= p->end || *p->s != '"') { fail(p, "expected a member name in quotes"); zj_free(v); return NULL; }
            p->s++;
            key = parse_string(p, &klen);
            if (!key) { zj_free(v); return NULL; }
            skip_ws(p);
            if (p->s >= p->end || *p->s != ':') { fail(p, "expected ':'"); free(key); zj_free(v); return NULL; }
            p->s++;
        }
        zj_value *child = parse_value(p, depth + 1);
        if (!child) { free(key); zj_free(v); return NULL; }
        child->key = key;
        *tail = child;
        tail = &child->next;
        v->len++;
        skip_ws(p);
        if (p->s < p->end && *p->s == ',') { p->s++; continue; }
        if (p->s < p->end && *p->s == close) { p->s++; return v; }
        fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
        zj_free(v);
        return NULL;
    }
}

static zj_value *parse_value(parser *p, int depth) {
    if (depth > ZJ_MAX_DEPTH) { fail(p, "nested deeper than %d", ZJ_MAX_DEPTH); return NULL; }
    skip_ws(p);
    if (p->s >= p->end) { fail(p, "unexpected end of input"); return NULL; }
    zj_value *v;
    switch (*p->s) {
    case '{': return parse_container(p, depth, 1);
    case '[': return parse_container(p, depth, 0);
    case '"':
        p->s++;
        v = new_value(p, ZJ_STRING);
        if (!v) return NULL;
        v->string = parse_string(p, &v->len);
        if (!v->string) { free(v); return NULL; }
        return v;
    case 't': if (!literal(p, "true")) return NULL; v = new_value(p, ZJ_BOOL); if (v) v->boolean = 1; return v;
    case 'f': if (!literal(p, "false")) return NULL; return new_value(p, ZJ_BOOL);
    case 'n': if (!literal(p, "null")) return NULL; return new_value(p, ZJ_NULL);
    default: return parse_number(p);
    }
}

zj_value *zj_parse(const char *text, size_t len, char *err, size_t errlen) {
    parser p = {text, text + len, text, err, errlen, 0};
    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF)
        p.s += 3; /* a UTF-8 byte order mark, as Python's json tolerates with utf-8-sig */
    zj_value *v = parse_value(&p, 0);
    if (!v) return NULL;
    skip_ws(&p);
    if (p.s != p.end) { fail(&p, "extra data after the document"); zj_free(v); return NULL; }
    return v;
}

void zj_free(zj_value *v) {
    /* Iterative over siblings, recursive over depth (bounded by ZJ_MAX_DEPTH). */
    while (v) {
        zj_value *next = v->next;
        if (v->first) zj_free(v->first);
        free(v->string);
        free(v->key);
        free(v);
        v = next;
    }
}

const zj_value *zj_get(const zj_value *v, const char *key) {
    if (!v || v->type != ZJ_OBJECT) return NULL;
    const zj_value *found = NULL;
    for (const zj_value *c = v->first; c; c = c->next)
        if (strcmp(c->key, key) == 0) found = c; /* the last duplicate wins, as in Python's json */
    return found;
}

const zj_value *zj_at(const zj_value *v, size_t i) {
    if (!v || v->type != ZJ_ARRAY) return NULL;
    const zj_value *c = v->first;
    while (c && i--) c = c->next;
    return c;
}

const char *zj_type_name(zj_type t) {
    static const char *names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
    return names[t];
}
