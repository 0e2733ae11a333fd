/* A small JSON reader for job files (docs/runner-protocol.md, "job"): parses a whole document into a tree.
 * Strict RFC 8259 syntax; nesting is capped so that a hostile file cannot exhaust the stack. */
#ifndef ZJSON_H
#define ZJSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum { ZJ_NULL, ZJ_BOOL, ZJ_NUMBER, ZJ_STRING, ZJ_ARRAY, ZJ_OBJECT } zj_type;

typedef struct zj_value {
    zj_type type;
    int boolean;
    double number;
    int is_integer;        /* the number was written without fraction or exponent and fits int64 */
    int64_t integer;
    char *string;          /* NUL-terminated UTF-8 (strings); may hold NULs from \u0000, len says */
    size_t len;            /* string length in bytes, or element count of arrays/objects */
    char *key;             /* the member name when this value is in an object */
    struct zj_value *first, *next;
} zj_value;

#define ZJ_MAX_DEPTH 256

/* Parse `len` bytes. Returns the root, or NULL with a message in err (byte offset, line and what was expected),
 * or exactly ZJ_OUT_OF_MEMORY when memory ran out. Free with zj_free. */
#define ZJ_OUT_OF_MEMORY "out of memory"
zj_value *zj_parse(const char *text, size_t len, char *err, size_t errlen);
void zj_free(zj_value *v);

/* Member `key` of an object, or NULL (also when v is not an object). */
const zj_value *zj_get(const zj_value *v, const char *key);
/* Element i of an array, or NULL. */
const zj_value *zj_at(const zj_value *v, size_t i);
const char *zj_type_name(zj_type t);

#endif
