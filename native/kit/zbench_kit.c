/* zbench runner kit: the runner protocol in C99 (docs/runner-protocol.md, docs/native-runner.md): arguments,
 * jobs, the frame loop, frames.csv, result.json, PNG. Portable: what differs between operating systems (clocks,
 * sleeping, /proc and /sys) is behind zbench_platform.h. Nothing here ends the process: out of memory is an
 * error returned to the caller, so that an app that links the kit survives it. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* getrusage, sigaction, strdup, uname under -std=c99 */
#endif
#define _DARWIN_C_SOURCE /* Darwin hides struct rusage's counters under _POSIX_C_SOURCE alone */
#include "zbench_kit.h"
#include "zbench_kit_internal.h"
#include "zbench_platform.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define PROGRESS_EVERY_NS 250000000LL
/* A process start further back than this before main is not this process's (an emulator's host values). */
#define MAX_STARTUP_NS 60000000000LL

static int64_t g_main_ns;
static volatile sig_atomic_t g_stop;

/* ------------------------------------------------------------------------------------------ buffers */

/* Room for `more` bytes and a NUL; -1 (b->oom set, the text left as it was) when memory has run out. */
static int buf_reserve(zk_buf *b, size_t more) {
    if (b->oom) return -1;
    if (b->len + more + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1) {
        if (cap > SIZE_MAX / 2) { b->oom = 1; return -1; }
        cap *= 2;
    }
    char *data = realloc(b->data, cap);
    if (!data) { b->oom = 1; return -1; }
    b->data = data;
    b->cap = cap;
    return 0;
}

void zk_buf_add(zk_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buf_reserve(b, (size_t)n) != 0) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* The escaping rule of zk_buf_str and fput_json_str (zbench_kit_internal.h). */
const char *zk_json_char(unsigned char c, char out[8]) {
    if (c == '"' || c == '\\') snprintf(out, 8, "\\%c", c);
    else if (c == '\n') snprintf(out, 8, "\\n");
    else if (c < 0x20) snprintf(out, 8, "\\u%04x", c);
    else snprintf(out, 8, "%c", c);
    return out;
}

void zk_buf_str(zk_buf *b, const char *s) {
    if (!s) { zk_buf_add(b, "null"); return; }
    char text[8];
    zk_buf_add(b, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) zk_buf_add(b, "%s", zk_json_char(*c, text));
    zk_buf_add(b, "\"");
}

/* zk_buf_str straight to a file, without allocating: result.json is written so, to be written when memory has
 * run out. fput_json_chars leaves the quotes out. */
static void fput_json_chars(FILE *f, const char *s) {
    char text[8];
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) fputs(zk_json_char(*c, text), f);
}

static void fput_json_str(FILE *f, const char *s) {
    fputc('"', f);
    fput_json_chars(f, s);
    fputc('"', f);
}

void zk_buf_free(zk_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

/* `part`, a buffer of members composed on its own, into `b`: its loss of memory becomes b's. */
static void buf_join(zk_buf *b, const char *sep, const zk_buf *part) {
    if (part->oom) b->oom = 1;
    else if (part->len) zk_buf_add(b, "%s%s", sep, part->data);
}

/* ------------------------------------------------------------------------------------------------ PNG */

static uint32_t crc_table[256];

static void crc_init(void) {
    if (crc_table[1]) return;
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc32_of(uint32_t crc, const unsigned char *p, size_t n) {
    crc = ~crc;
    while (n--) crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16); p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static unsigned char *chunk(unsigned char *o, const char *type, const unsigned char *data, uint32_t n) {
    put32(o, n);
    memcpy(o + 4, type, 4);
    if (n) memcpy(o + 8, data, n);
    put32(o + 8 + n, crc32_of(0, o + 4, n + 4));
    return o + 12 + n;
}

unsigned char *zk_png_encode(const unsigned char *rgba, int width, int height, size_t *len) {
    crc_init();
    size_t row = (size_t)width * 4 + 1, raw = row * (size_t)height;
    size_t blocks = raw / 65535 + 1;
    size_t idat = 2 + raw + blocks * 5 + 4;
    if (idat > 0x7FFFFFFFu) return NULL;
    unsigned char *out = malloc(8 + 25 + 12 + idat + 12), *o = out;
    unsigned char *z = malloc(idat);
    if (!out || !z) { free(out); free(z); return NULL; }
    memcpy(o, "\x89PNG\r\n\x1a\n", 8);
    o += 8;
    unsigned char ihdr[13];
    put32(ihdr, (uint32_t)width);
    put32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8; ihdr[9] = 6; ihdr[10] = ihdr[11] = ihdr[12] = 0; /* 8-bit RGBA, deflate, no interlace */
    o = chunk(o, "IHDR", ihdr, 13);
    /* zlib stream of stored blocks; each scanline is filter type 0 followed by its pixels. */
    unsigned char *zp = z;
    *zp++ = 0x78; *zp++ = 0x01;
    uint32_t a = 1, b = 0;
    size_t done = 0;
    unsigned char *block_head = NULL;
    size_t in_block = 0;
    for (int y = 0; y < height; y++) {
        for (size_t i = 0; i < row; i++) {
            if (!block_head || in_block == 65535) {
                if (block_head) { block_head[0] = 0; block_head[1] = 0xFF; block_head[2] = 0xFF; block_head[3] = 0; block_head[4] = 0; }
                block_head = zp;
                zp += 5;
                in_block = 0;
            }
            unsigned char byte = i == 0 ? 0 : rgba[(size_t)y * (size_t)width * 4 + i - 1];
            *zp++ = byte;
            in_block++;
            done++;
            a = (a + byte) % 65521;
            b = (b + a) % 65521;
        }
    }
    if (!block_head) { block_head = zp; zp += 5; }
    block_head[0] = 1; /* BFINAL, BTYPE 00 (stored) */
    block_head[1] = (unsigned char)in_block; block_head[2] = (unsigned char)(in_block >> 8);
    block_head[3] = (unsigned char)~in_block; block_head[4] = (unsigned char)(~in_block >> 8);
    (void)done;
    put32(zp, b << 16 | a);
    zp += 4;
    o = chunk(o, "IDAT", z, (uint32_t)(zp - z));
    o = chunk(o, "IEND", NULL, 0);
    free(z);
    *len = (size_t)(o - out);
    return out;
}

unsigned char *zk_png_decode_stored(const unsigned char *png, size_t len, int *width, int *height) {
    if (len < 33 || memcmp(png, "\x89PNG\r\n\x1a\n", 8) != 0 || memcmp(png + 12, "IHDR", 4) != 0) return NULL;
    uint32_t w = get32(png + 16), h = get32(png + 20);
    if (w == 0 || h == 0 || w > ZK_MAX_SIDE || h > ZK_MAX_SIDE || png[24] != 8 || png[25] != 6 || png[28] != 0) return NULL;
    size_t row = (size_t)w * 4 + 1, raw_len = row * h;
    unsigned char *raw = malloc(raw_len), *rgba = malloc((size_t)w * h * 4);
    if (!raw || !rgba) { free(raw); free(rgba); return NULL; }
    size_t got = 0;
    int header_left = 2, final = 0;
    size_t block_left = 0;
    unsigned char head[5];
    int head_have = 0;
    const unsigned char *p = png + 8;
    while (p + 12 <= png + len && !final) {
        uint32_t n = get32(p);
        if (n > (size_t)(png + len - p) - 12) break;
        if (memcmp(p + 4, "IDAT", 4) == 0) {
            for (uint32_t i = 0; i < n; i++) {
                unsigned char c = p[8 + i];
                if (header_left) { header_left--; continue; }
                if (final && block_left == 0) break;
                if (block_left == 0) {
                    head[head_have++] = c;
                    if (head_have < 5) continue;
                    head_have = 0;
                    if ((head[0] & 6) != 0) goto bad; /* not a stored block */
                    final = head[0] & 1;
                    block_left = (size_t)head[1] | (size_t)head[2] << 8;
                    if (((head[3] | head[4] << 8) ^ 0xFFFF) != (int)block_left) goto bad;
                    continue;
                }
                if (got == raw_len) goto bad;
                raw[got++] = c;
                block_left--;
            }
        }
        p += 12 + n;
    }
    if (got != raw_len) goto bad;
    for (uint32_t y = 0; y < h; y++) {
        if (raw[y * row] != 0) goto bad; /* only filter type 0, as zk_png_encode writes */
        memcpy(rgba + (size_t)y * w * 4, raw + y * row + 1, (size_t)w * 4);
    }
    free(raw);
    *width = (int)w;
    *height = (int)h;
    return rgba;
bad:
    free(raw);
    free(rgba);
    return NULL;
}

int zk_png_write(const char *path, const unsigned char *rgba, int width, int height, char *err, size_t errlen) {
    size_t len;
    unsigned char *png = zk_png_encode(rgba, width, height, &len);
    if (!png) { snprintf(err, errlen, "%s: could not encode a %dx%d PNG (out of memory)", path, width, height); return -1; }
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(png, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    free(png);
    if (!ok) { snprintf(err, errlen, "%s: %s", path, strerror(errno)); return -1; }
    return 0;
}

void zk_unpremultiply(unsigned char *rgba, size_t pixels) {
    for (size_t i = 0; i < pixels * 4; i += 4) {
        unsigned a = rgba[i + 3];
        if (a == 255) continue;
        for (int k = 0; k < 3; k++) {
            unsigned v = a ? (rgba[i + k] * 255u + a / 2) / a : 0;
            rgba[i + k] = (unsigned char)(v > 255 ? 255 : v);
        }
    }
}

/* ------------------------------------------------------------------------------------------------ job */

static int job_fail(char *err, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

static int is_int(const zj_value *v) { return v && v->type == ZJ_NUMBER && v->is_integer; }

static int int_key(const zj_value *o, const char *key, int64_t min, int64_t max, int64_t *out, char *err, size_t n) {
    const zj_value *v = zj_get(o, key);
    if (!v) return job_fail(err, n, "missing key '%s'", key);
    if (!is_int(v) || v->integer < min || v->integer > max)
        return job_fail(err, n, "key '%s' must be an integer in %lld..%lld", key, (long long)min, (long long)max);
    *out = v->integer;
    return 0;
}

void zk_job_free(zk_job *job) {
    zj_free(job->root);
    free(job->capture);
    free(job->complexity);
    memset(job, 0, sizeof *job);
}

/* Validate what job.schema.json says (docs/runner-protocol.md, "job"); err names the key. -1: a bad job;
 * ZK_JOB_OUT_OF_MEMORY: the job could not be held (err says which part). */
static int job_load(zk_job *job, const char *path, char *err, size_t n) {
    memset(job, 0, sizeof *job);
    job->path = path;
    FILE *f = fopen(path, "rb");
    if (!f) return job_fail(err, n, "cannot open: %s", strerror(errno));
    zk_buf text = {0};
    char chunk_buf[65536];
    size_t got;
    while ((got = fread(chunk_buf, 1, sizeof chunk_buf, f)) > 0) {
        if (text.len + got > (size_t)256 << 20) { fclose(f); zk_buf_free(&text); return job_fail(err, n, "larger than 256 MiB"); }
        if (buf_reserve(&text, got) != 0) {
            fclose(f);
            job_fail(err, n, "out of memory reading %zu bytes of the job", text.len + got);
            zk_buf_free(&text);
            return ZK_JOB_OUT_OF_MEMORY;
        }
        memcpy(text.data + text.len, chunk_buf, got);
        text.len += got;
    }
    fclose(f);
    int code = zk_job_parse(job, text.data ? text.data : "", text.len, err, n);
    zk_buf_free(&text);
    return code;
}

int zk_job_parse(zk_job *job, const char *text, size_t len, char *err, size_t n) {
    char jerr[300];
    job->root = zj_parse(text, len, jerr, sizeof jerr);
    if (!job->root && strcmp(jerr, ZJ_OUT_OF_MEMORY) == 0) {
        job_fail(err, n, "out of memory parsing the job's %zu bytes", len);
        return ZK_JOB_OUT_OF_MEMORY;
    }
    if (!job->root) return job_fail(err, n, "%s", jerr);
    const zj_value *r = job->root, *v;
    if (r->type != ZJ_OBJECT) return job_fail(err, n, "the job is %s, not an object", zj_type_name(r->type));
    static const char *required[] = {"protocol", "backend", "mode", "refresh_hz", "warmup_frames", "frames",
                                     "capture", "seed", "complexity", "scene"};
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!zj_get(r, required[i])) return job_fail(err, n, "missing key '%s'", required[i]);
    v = zj_get(r, "protocol");
    if (!is_int(v) || v->integer != ZK_PROTOCOL) return job_fail(err, n, "key 'protocol': this runner speaks protocol %d", ZK_PROTOCOL);
    v = zj_get(r, "backend");
    if (v->type != ZJ_STRING || v->len == 0) return job_fail(err, n, "key 'backend' must be a non-empty string");
    job->backend = v->string;
    v = zj_get(r, "mode");
    if (v->type != ZJ_STRING || (strcmp(v->string, "paced") != 0 && strcmp(v->string, "uncapped") != 0))
        return job_fail(err, n, "key 'mode' must be \"paced\" or \"uncapped\"");
    job->paced = strcmp(v->string, "paced") == 0;
    v = zj_get(r, "refresh_hz");
    if (v->type != ZJ_NUMBER || !(v->number > 0)) return job_fail(err, n, "key 'refresh_hz' must be a positive number");
    job->refresh_hz = v->number;
    int64_t x;
    if (int_key(r, "warmup_frames", 0, 100000000, &x, err, n)) return -1;
    job->warmup_frames = (int)x;
    if (int_key(r, "frames", 1, 100000000, &x, err, n)) return -1;
    job->frames = (int)x;
    job->total_frames = job->warmup_frames + job->frames;
    if (int_key(r, "seed", INT64_MIN, INT64_MAX, &job->seed, err, n)) return -1;
    v = zj_get(r, "capture");
    if (v->type != ZJ_ARRAY) return job_fail(err, n, "key 'capture' must be an array of frame indices");
    job->capture = calloc(v->len + 1, sizeof *job->capture);
    if (!job->capture) { job_fail(err, n, "out of memory for %zu capture indices", v->len); return ZK_JOB_OUT_OF_MEMORY; }
    for (const zj_value *c = v->first; c; c = c->next) {
        if (!is_int(c) || c->integer < 0 || c->integer > 100000000)
            return job_fail(err, n, "key 'capture': every entry must be a non-negative frame index");
        job->capture[job->n_capture++] = (int)c->integer;
    }
    v = zj_get(r, "complexity");
    if (v->type == ZJ_ARRAY) {
        if (v->len != (size_t)job->total_frames)
            return job_fail(err, n, "key 'complexity' must hold one number per frame, warmup included (%d), not %zu",
                            job->total_frames, v->len);
        job->complexity = calloc(v->len + 1, sizeof *job->complexity);
        if (!job->complexity) {
            job_fail(err, n, "out of memory for %zu complexity values", v->len);
            return ZK_JOB_OUT_OF_MEMORY;
        }
        for (const zj_value *c = v->first; c; c = c->next) {
            if (c->type != ZJ_NUMBER || c->number < 0)
                return job_fail(err, n, "key 'complexity': every value must be a non-negative number");
            job->complexity[job->n_complexity++] = c->number;
        }
    } else if (v->type != ZJ_NULL) {
        return job_fail(err, n, "key 'complexity' must be null or an array of numbers");
    }
    v = zj_get(r, "duration_s");
    if (v && v->type != ZJ_NULL) {
        if (v->type != ZJ_NUMBER || !(v->number > 0)) return job_fail(err, n, "key 'duration_s' must be null or a positive number");
        job->duration_s = v->number;
    }
    v = zj_get(r, "gpu_timer");
    if (v) {
        static const char *sources[] = {"timer_query", "cmdbuf_time", "finish_bracket", "readback", "none"};
        int known = 0;
        for (size_t i = 0; v->type == ZJ_STRING && i < 5; i++) known |= strcmp(v->string, sources[i]) == 0;
        if (!known) return job_fail(err, n, "key 'gpu_timer' must be one of timer_query, cmdbuf_time, finish_bracket, readback, none");
        job->gpu_timer = v->string;
    }
    const zj_value *s = zj_get(r, "scene");
    if (s->type != ZJ_OBJECT) return job_fail(err, n, "key 'scene' must be an object");
    static const char *scene_keys[] = {"id", "params", "width", "height", "features", "ops"};
    for (size_t i = 0; i < 6; i++)
        if (!zj_get(s, scene_keys[i])) return job_fail(err, n, "scene is missing key '%s'", scene_keys[i]);
    v = zj_get(s, "id");
    if (v->type != ZJ_STRING || v->len == 0) return job_fail(err, n, "scene key 'id' must be a non-empty string");
    job->scene_id = v->string;
    if (zj_get(s, "params")->type != ZJ_OBJECT) return job_fail(err, n, "scene key 'params' must be an object");
    /* int_key's message, prefixed: formatted from a copy (err cannot be both the output and an argument). */
    char key_err[256];
    if (int_key(s, "width", 1, ZK_MAX_SIDE, &x, key_err, sizeof key_err)) return job_fail(err, n, "scene %s", key_err);
    job->width = (int)x;
    if (int_key(s, "height", 1, ZK_MAX_SIDE, &x, key_err, sizeof key_err)) return job_fail(err, n, "scene %s", key_err);
    job->height = (int)x;
    v = zj_get(s, "features");
    if (v->type != ZJ_ARRAY) return job_fail(err, n, "scene key 'features' must be an array of feature names");
    for (const zj_value *c = v->first; c; c = c->next)
        if (c->type != ZJ_STRING) return job_fail(err, n, "scene key 'features': every entry must be a string");
    job->ops = zj_get(s, "ops");
    if (job->ops->type != ZJ_ARRAY) return job_fail(err, n, "scene key 'ops' must be an array of ops");
    job->scene = s;
    return 0;
}

static int has_feature(const zk_engine *e, const char *name) {
    for (const char *const *f = e->features; *f; f++)
        if (strcmp(*f, name) == 0) return 1;
    return 0;
}

/* The first op name (nested ops included) this engine does not draw, or NULL; a malformed op is the engine's
 * to report with its path. */
static const char *missing_op(const zk_engine *e, const zj_value *ops, int depth) {
    if (!ops || ops->type != ZJ_ARRAY || depth > ZJ_MAX_DEPTH) return NULL;
    for (const zj_value *op = ops->first; op; op = op->next) {
        const zj_value *name = zj_get(op, "op");
        if (name && name->type == ZJ_STRING && !has_feature(e, name->string)) return name->string;
        const char *inner = missing_op(e, zj_get(op, "ops"), depth + 1);
        if (inner) return inner;
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------------- issues */

typedef struct {
    int frame; /* -1: the whole launch */
    const char *kind;
    char *detail;
} issue;

typedef struct {
    issue *items;
    size_t n, cap;
    size_t dropped;
    size_t lost; /* issues memory could not hold: result.json then says so in an `error` issue */
} issues;

static void add_issue(issues *is, int frame, const char *kind, const char *fmt, ...) {
    if (is->n >= ZK_MAX_ISSUES) { is->dropped++; return; } /* the host counts by kind; keep the file bounded */
    if (is->n == is->cap) {
        size_t cap = is->cap ? is->cap * 2 : 16;
        issue *items = realloc(is->items, cap * sizeof *items);
        if (!items) { is->lost++; return; }
        is->items = items;
        is->cap = cap;
    }
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    char *held = strdup(detail);
    if (!held) { is->lost++; return; }
    is->items[is->n++] = (issue){frame, kind, held};
}

/* ------------------------------------------------------------------------------------------- machine */

static void machine_json(zk_buf *b, const zk_engine *e) {
    struct utsname u;
    int have_uname = uname(&u) == 0, emulated = 0;
    char model[256] = "", os[256] = "";
    zkp_machine(have_uname ? u.machine : "", model, sizeof model, os, sizeof os, &emulated);
    zk_buf_add(b, "{\"arch\": ");
    zk_buf_str(b, have_uname ? u.machine : "unknown");
    if (model[0]) { zk_buf_add(b, ", \"cpu_model\": "); zk_buf_str(b, model); }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 0) zk_buf_add(b, ", \"cores\": %ld", cores);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) zk_buf_add(b, ", \"ram_mb\": %lld", (long long)pages * page / (1024 * 1024));
    if (os[0]) { zk_buf_add(b, ", \"os\": "); zk_buf_str(b, os); }
    if (have_uname) { zk_buf_add(b, ", \"kernel\": "); zk_buf_str(b, u.release); }
    zk_buf_add(b, ", \"libraries\": {%s}", e->libraries_json ? e->libraries_json : "");
    zk_buf_add(b, ", \"emulated\": %s}", emulated ? "true" : "false");
}

static void build_json(zk_buf *b, const zk_engine *e) {
    zk_buf_add(b, "{\"id\": ");
    zk_buf_str(b, e->build_id);
    zk_buf_add(b, ", \"dirty\": %s, \"describe\": ", e->build_dirty < 0 ? "null" : e->build_dirty ? "true" : "false");
    zk_buf_str(b, e->build_describe);
    zk_buf_add(b, "}");
}

static void toolchain_json(zk_buf *b, const zk_engine *e) {
    zk_buf_add(b, "{\"compiler\": ");
    zk_buf_str(b, e->build_compiler ? e->build_compiler : "");
    zk_buf_add(b, ", \"flags\": ");
    zk_buf_str(b, e->build_flags ? e->build_flags : "");
    zk_buf_add(b, "}");
}

/* ---------------------------------------------------------------------------------------------- probe */

static const char *forced_timer(void) {
    const char *v = getenv("ZBENCH_GPU_TIMER");
    return v && *v ? v : NULL;
}

static int probe(zk_engine *e) {
    char err[512] = "";
    zk_buf b = {0};
    zk_buf_add(&b, "{\"protocol\": %d, \"runner\": {\"name\": ", ZK_PROTOCOL);
    zk_buf_str(&b, e->runner_name);
    zk_buf_add(&b, ", \"version\": ");
    zk_buf_str(&b, e->runner_version);
    zk_buf_add(&b, "}");
    if (e->build_id) { zk_buf_add(&b, ", \"build\": "); build_json(&b, e); }
    if (e->build_compiler || e->build_flags) { zk_buf_add(&b, ", \"toolchain\": "); toolchain_json(&b, e); }
    zk_buf_add(&b, ", \"backends\": {");
    int ok = e->open(e->self, err, sizeof err) == 0;
    const char *forced = forced_timer();
    const char *const *sources = ok ? e->timer_sources(e->self) : NULL;
    if (ok && forced) {
        /* A forced source is the only one listed; one the context lacks leaves the backend out (gpu-timing.md). */
        int found = 0;
        for (const char *const *s = sources; *s; s++) found |= strcmp(*s, forced) == 0;
        if (!found) {
            fprintf(stderr, "probe: %s: ZBENCH_GPU_TIMER=%s is not a source this context offers\n", e->backend, forced);
            ok = 0;
        }
    } else if (!ok) {
        fprintf(stderr, "probe: %s: %s\n", e->backend, err);
    }
    if (ok) {
        zk_buf_str(&b, e->backend);
        zk_buf_add(&b, ": {\"features\": [");
        for (const char *const *f = e->features; *f; f++) {
            if (f != e->features) zk_buf_add(&b, ", ");
            zk_buf_str(&b, *f);
        }
        zk_buf_add(&b, "], \"timer_sources\": [");
        if (forced) zk_buf_str(&b, forced);
        else
            for (const char *const *s = sources; *s; s++) {
                if (s != sources) zk_buf_add(&b, ", ");
                zk_buf_str(&b, *s);
            }
        zk_buf_add(&b, "]");
        zk_buf info = {0};
        e->gpu_info(e->self, &info);
        buf_join(&b, ", ", &info);
        zk_buf_free(&info);
        zk_buf_add(&b, "}");
    }
    zk_buf_add(&b, "}, \"machine\": ");
    machine_json(&b, e);
    zk_buf_add(&b, "}\n");
    int code = ZK_EXIT_OK;
    if (b.oom) {
        fprintf(stderr, "probe: out of memory composing the probe\n");
        code = ZK_EXIT_FAILED;
    } else {
        fputs(b.data, stdout);
        fflush(stdout);
    }
    zk_buf_free(&b);
    if (e->close) e->close(e->self);
    return code;
}

/* ------------------------------------------------------------------------------------- no GPU timer */

static void none_begin(zk_gpu *g, int o) { (void)g; (void)o; }
static void none_before(zk_gpu *g) { (void)g; }
static int none_after(zk_gpu *g, int o, int64_t t, zk_sample *s) { (void)g; (void)o; (void)t; (void)s; return 0; }
static int none_poll(zk_gpu *g, zk_sample *s, int c, int b) { (void)g; (void)s; (void)c; (void)b; return 0; }
static void none_destroy(zk_gpu *g) { (void)g; }

zk_gpu *zk_no_timer(void) {
    static zk_gpu none = {"none", 0, none_begin, none_before, none_after, none_poll, NULL, none_destroy};
    return &none;
}

/* ------------------------------------------------------------------------------------------- pacing */

/* The vsync schedule (zbench_kit_internal.h), its clock read and its sleep done here. */
int zk_pacer_wait_until(const zk_pacer *p, int64_t *target_ns) {
    if (!p->paced || !p->started) return 0;
    *target_ns = p->t0 + (int64_t)ceil((double)p->next * p->period_ns);
    return 1;
}

void zk_pacer_start(zk_pacer *p, int64_t now) {
    if (!p->paced) {
        if (!p->started) { p->last_end = now; p->started = 1; }
        return;
    }
    if (!p->started) {
        p->t0 = now;
        p->started = 1;
    }
    /* Woken (or called) after a later vsync already passed: the frame starts on that one. */
    int64_t k = (int64_t)floor((double)(now - p->t0) / p->period_ns);
    p->start = k > p->next ? k : p->next;
}

double zk_pacer_end(zk_pacer *p, int64_t now) {
    if (!p->paced) {
        double interval = (double)(now - p->last_end) / 1e6;
        p->last_end = now;
        return interval;
    }
    int64_t present = (int64_t)ceil((double)(now - p->t0) / p->period_ns);
    if (present < p->start + 1) present = p->start + 1;
    double interval = (double)(present - p->last_present) * p->period_ms;
    p->last_present = p->next = present;
    return interval;
}

static int64_t pacer_begin(zk_pacer *p) {
    int64_t now = zk_now_ns(), target;
    if (zk_pacer_wait_until(p, &target) && now < target) {
        zkp_sleep_until(target);
        now = zk_now_ns();
    }
    zk_pacer_start(p, now);
    return now;
}

const char *zk_phase(int frame, int warmup) { return frame < warmup ? "warmup" : "measure"; }

/* ----------------------------------------------------------------------------------------- frame rows */

typedef struct {
    int state; /* 0 none, 1 waiting for its GPU sample, 2 complete */
    int64_t t_start;
    double cpu_ms, stolen_ms, interval_ms, complexity;
    int has_complexity;
    int64_t draw_calls, upload_bytes, vertices;
    long minor_faults, preemptions;
    int gl_error;
    zk_sample gpu;
} row;

static const char HEADER[] =
    "frame,phase,t_start_ns,cpu_ms,gpu_ms,gpu_source,present_interval_ms,complexity,draw_calls,"
    "texture_upload_bytes,disjoint,gl_error,stolen_ms,minor_faults,preemptions,vertices\n";

static void write_row(FILE *f, int frame, const row *r, int warmup, const char *source) {
    char gpu[32] = "", cx[32] = "", stolen[32] = "", vertices[32] = "";
    const char *disjoint = r->gpu.disjoint < 0 ? "" : r->gpu.disjoint ? "1" : "0";
    if (r->gpu.has_value) snprintf(gpu, sizeof gpu, "%.5f", r->gpu.gpu_ms);
    if (r->has_complexity) snprintf(cx, sizeof cx, "%.17g", r->complexity);
    if (r->stolen_ms >= 0) snprintf(stolen, sizeof stolen, "%.5f", r->stolen_ms);
    if (r->vertices >= 0) snprintf(vertices, sizeof vertices, "%lld", (long long)r->vertices);
    fprintf(f, "%d,%s,%lld,%.5f,%s,%s,%.5f,%s,%lld,%lld,%s,%d,%s,%ld,%ld,%s\n", frame,
            zk_phase(frame, warmup), (long long)r->t_start, r->cpu_ms, gpu, source, r->interval_ms, cx,
            (long long)r->draw_calls, (long long)r->upload_bytes, disjoint, r->gl_error, stolen, r->minor_faults,
            r->preemptions, vertices);
    fflush(f); /* a runner stopped mid-run leaves the frames it rendered */
}

/* ------------------------------------------------------------------------------------------------ run */

static void on_signal(int signum) { g_stop = signum; }

int zk_stopping(void) { return g_stop != 0; }

/* The platform's reading of the process's start, or this kit's main when there is none or it is implausible. */
static int64_t process_start_ns(const char **source) {
    int64_t start = zkp_process_start_ns(source);
    if (start <= 0 || start < g_main_ns - MAX_STARTUP_NS || start > g_main_ns) {
        *source = "runner_main";
        return g_main_ns;
    }
    return start;
}

static double rusage_cpu_ms(const struct rusage *ru) {
    return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e3 +
           (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e3;
}

/* result.json `host_load`: what other tasks ran on the device while the runner ran (docs/runner-protocol.md).
 * The busy time of every CPU (on Linux, /proc/stat's aggregate `cpu` line: all but idle and iowait) and this
 * process's own CPU time, sampled when the run starts and when it writes its result: the whole run, because
 * /proc/stat counts in clock ticks that a small scene's measured frames cannot resolve. Another task on another
 * core slows a frame without taking its CPU, so stolen_ms cannot show it; the busy-host guard reads this
 * (docs/regression.md, "A busy host"). */
typedef struct {
    int ok;
    int64_t wall_ns, busy_ns, own_cpu_ns;
    int cpus;
    const char *source;
} host_sample;

static host_sample host_now(void) {
    host_sample h = {0};
    struct rusage ru;
    if (zkp_cpu_busy(&h.busy_ns, &h.cpus, &h.source) != 0 || getrusage(RUSAGE_SELF, &ru) != 0) return h;
    h.wall_ns = zk_now_ns();
    h.own_cpu_ns = (int64_t)(rusage_cpu_ms(&ru) * 1e6);
    h.ok = 1;
    return h;
}

static void host_load_json(zk_buf *b, const host_sample *start) {
    host_sample end = host_now();
    if (!start->ok || !end.ok || end.wall_ns <= start->wall_ns || end.cpus != start->cpus) {
        zk_buf_add(b, "null"); /* the platform does not say, or a CPU came or went: the window is not comparable */
        return;
    }
    int64_t busy = end.busy_ns - start->busy_ns, own = end.own_cpu_ns - start->own_cpu_ns;
    zk_buf_add(b, "{\"source\": ");
    zk_buf_str(b, start->source);
    zk_buf_add(b, ", \"wall_ms\": %.3f, \"busy_ms\": %.3f, \"own_cpu_ms\": %.3f, \"cpus\": %d}",
               (double)(end.wall_ns - start->wall_ns) / 1e6, busy > 0 ? (double)busy / 1e6 : 0.0,
               own > 0 ? (double)own / 1e6 : 0.0, start->cpus);
}

/* One side's sample: the kit's readings, then the engine's own members (once it is open). */
static void sample_conditions(zk_engine *e, int opened, zk_buf *out) {
    zk_conditions(out);
    if (opened && e->conditions) {
        zk_buf own = {0};
        e->conditions(e->self, &own);
        buf_join(out, out->len ? ", " : "", &own);
        zk_buf_free(&own);
    }
}

typedef struct {
    zk_engine *e;
    int opened; /* the engine's open succeeded: its callbacks may be asked */
    zk_buf conditions_start;
    zk_job job;
    const char *outdir;
    zk_gpu *gpu;
    issues issues;
    int frames_rendered;
    int ended_at_duration;
    /* result.json `activity`: getrusage and the clock at the start of the first measured frame and after the
     * last (docs/runner-protocol.md; the idle scene's wake-ups and CPU time per second). */
    int activity_state; /* 0 none, 1 started, 2 complete */
    struct rusage activity_start, activity_end;
    int64_t activity_t0, activity_t1;
    host_sample host_at_start; /* result.json `host_load`: from the run's start to its result */
} run_state;

static void activity_json(zk_buf *b, const run_state *s) {
    if (s->activity_state != 2 || s->activity_t1 <= s->activity_t0) { zk_buf_add(b, "null"); return; }
    double cpu = rusage_cpu_ms(&s->activity_end) - rusage_cpu_ms(&s->activity_start);
    long vol = s->activity_end.ru_nvcsw - s->activity_start.ru_nvcsw;
    long invol = s->activity_end.ru_nivcsw - s->activity_start.ru_nivcsw;
    zk_buf_add(b, "{\"source\": \"getrusage\", \"wall_ms\": %.3f, \"cpu_ms\": %.3f, \"voluntary_switches\": %ld, "
                  "\"involuntary_switches\": %ld}", (double)(s->activity_t1 - s->activity_t0) / 1e6,
               cpu > 0 ? cpu : 0.0, vol > 0 ? vol : 0L, invol > 0 ? invol : 0L);
}

static void out_path(char *buf, size_t n, const char *outdir, const char *name) { snprintf(buf, n, "%s/%s", outdir, name); }

/* result.json. The engine's and the kit's parts are composed in memory, the issues are written straight to the
 * file: when memory runs out, what could not be composed is left out, an `error` issue says so, and 1 is
 * returned (the run then exits 1); nothing measured that was held is lost. `oom_detail`: an out-of-memory
 * error of the caller's own, or NULL. */
static int write_result(run_state *s, const char *oom_detail) {
    zk_engine *e = s->e;
    zk_buf gpu = {0}, tail = {0};
    if (s->opened) {
        e->gpu_info(e->self, &gpu);
        if (s->gpu && s->gpu->stats) {
            zk_buf stats = {0};
            s->gpu->stats(s->gpu, &stats);
            if (stats.oom) gpu.oom = 1;
            else if (stats.len) zk_buf_add(&gpu, "%s\"timer_stats\": {%s}", gpu.len ? ", " : "", stats.data);
            zk_buf_free(&stats);
        }
    }
    const char *start_source;
    int64_t started = process_start_ns(&start_source);
    long rss = zkp_peak_rss_kb();
    zk_buf_add(&tail, ", \"wall_ms\": %.3f, \"frames_rendered\": %d, \"process_start_ns\": %lld, "
                      "\"process_start_source\": \"%s\", \"peak_rss_kb\": ",
               (double)(zk_now_ns() - g_main_ns) / 1e6, s->frames_rendered, (long long)started, start_source);
    if (rss >= 0) zk_buf_add(&tail, "%ld", rss);
    else zk_buf_add(&tail, "null");
    zk_buf_add(&tail, ", \"activity\": ");
    activity_json(&tail, s);
    zk_buf_add(&tail, ", \"host_load\": ");
    host_load_json(&tail, &s->host_at_start);
    if (e->build_id) { zk_buf_add(&tail, ", \"build\": "); build_json(&tail, e); }
    zk_buf end = {0};
    sample_conditions(e, s->opened, &end);
    zk_buf_add(&tail, ", \"conditions\": {\"start\": {");
    buf_join(&tail, "", &s->conditions_start);
    zk_buf_add(&tail, "}, \"end\": {");
    buf_join(&tail, "", &end);
    zk_buf_add(&tail, "}}");
    zk_buf_free(&end);

    int oom = oom_detail || gpu.oom || tail.oom || s->issues.lost;
    char path[4096];
    out_path(path, sizeof path, s->outdir, "result.json");
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "run: cannot write %s: %s\n", path, strerror(errno));
    } else {
        fprintf(f, "{\"protocol\": %d, \"backend\": ", ZK_PROTOCOL);
        fput_json_str(f, e->backend);
        fputs(", \"timer_source\": ", f);
        fput_json_str(f, s->gpu ? s->gpu->source : "none");
        fprintf(f, ", \"present_source\": \"%s\", \"gpu\": {%s}, \"issues\": [",
                s->job.paced ? "simulated_vsync" : "frame_delta", gpu.oom || !gpu.len ? "" : gpu.data);
        for (size_t i = 0; i < s->issues.n; i++) {
            const issue *it = &s->issues.items[i];
            if (it->frame >= 0) fprintf(f, "%s{\"frame\": %d, \"kind\": ", i ? ", " : "", it->frame);
            else fprintf(f, "%s{\"frame\": null, \"kind\": ", i ? ", " : "");
            fput_json_str(f, it->kind);
            fputs(", \"detail\": ", f);
            fput_json_str(f, it->detail);
            fputs("}", f);
        }
        if (oom) {
            fprintf(f, "%s{\"frame\": null, \"kind\": \"error\", \"detail\": \"", s->issues.n ? ", " : "");
            fput_json_chars(f, oom_detail ? oom_detail : "out of memory");
            if (s->issues.lost) fputs("; issues were lost", f);
            if (gpu.oom) fputs("; the gpu keys were left out", f);
            if (tail.oom) fputs("; the timings, activity and conditions were left out", f);
            fputs("\"}", f);
        }
        fprintf(f, "]%s}\n", tail.oom ? "" : tail.data);
        if (ferror(f) | fclose(f)) fprintf(stderr, "run: cannot write %s: %s\n", path, strerror(errno));
    }
    if (oom) fprintf(stderr, "run: %s\n", oom_detail ? oom_detail : "out of memory: result.json is incomplete");
    zk_buf_free(&gpu);
    zk_buf_free(&tail);
    return oom;
}

double zk_complexity_at(const zk_job *job, int frame) {
    if (!job->complexity || job->n_complexity == 0) return -1.0;
    return (size_t)frame < job->n_complexity ? job->complexity[frame] : job->complexity[job->n_complexity - 1];
}

static void take_sample(run_state *s, row *rows, const zk_sample *smp) {
    if (smp->ordinal < 0 || smp->ordinal >= s->job.total_frames || rows[smp->ordinal].state != 1) return;
    row *r = &rows[smp->ordinal];
    r->gpu = *smp;
    r->state = 2;
    if (smp->invalid[0]) add_issue(&s->issues, smp->ordinal, "timer_invalid", "%s", smp->invalid);
}

static int flush_rows(run_state *s, FILE *csv, row *rows, int *next, int final) {
    while (*next < s->job.total_frames && rows[*next].state) {
        row *r = &rows[*next];
        if (r->state == 1 && !final) break;
        write_row(csv, *next, r, s->job.warmup_frames, s->gpu ? s->gpu->source : "none");
        (*next)++;
    }
    return 0;
}

static int frame_loop(run_state *s) {
    zk_engine *e = s->e;
    zk_job *job = &s->job;
    char path[4096], err[512];
    out_path(path, sizeof path, s->outdir, "frames.csv");
    FILE *csv = fopen(path, "w");
    if (!csv) {
        add_issue(&s->issues, -1, "error", "cannot write %s: %s", path, strerror(errno));
        return ZK_EXIT_FAILED;
    }
    fputs(HEADER, csv);
    fflush(csv);
    row *rows = calloc((size_t)job->total_frames, sizeof *rows);
    if (!rows) {
        fclose(csv);
        fprintf(stderr, "run: out of memory for %d rows\n", job->total_frames);
        add_issue(&s->issues, -1, "error", "out of memory for %d rows", job->total_frames);
        return ZK_EXIT_FAILED;
    }
    zk_pacer p = {0};
    p.paced = job->paced;
    p.period_ns = 1e9 / job->refresh_hz;
    p.period_ms = 1e3 / job->refresh_hz;
    int64_t duration_ns = job->duration_s > 0 ? (int64_t)llround(job->duration_s * 1e9) : 0, measure_start = -1;
    int64_t last_progress = 0;
    int next = 0, code = ZK_EXIT_OK;
    zk_sample samples[64];
    const char *source = s->gpu ? s->gpu->source : "none";
    for (int f = 0; f < job->total_frames; f++) {
        if (g_stop) break;
        double cx = zk_complexity_at(job, f);
        /* Outside the frame's clocks: a pacing sleep is a voluntary switch, not a preemption, and touches no page. */
        struct rusage before, after;
        int have_usage = getrusage(RUSAGE_SELF, &before) == 0;
        if (f == job->warmup_frames && have_usage) {
            s->activity_start = before;
            s->activity_t0 = zk_now_ns();
            s->activity_state = 1;
        }
        int64_t t_start = pacer_begin(&p);
        if (g_stop) break;
        if (duration_ns && f >= job->warmup_frames) {
            if (measure_start < 0) measure_start = t_start;
            if (t_start - measure_start >= duration_ns) { s->ended_at_duration = 1; break; }
        }
        int64_t cpu0 = zk_thread_cpu_ns();
        zk_counts counts = {0, 0, -1};
        if (s->gpu) s->gpu->begin(s->gpu, f);
        int failed = e->draw(e->self, f, cx, &counts, err, sizeof err);
        if (s->gpu) s->gpu->before_submit(s->gpu);
        e->submit(e->self);
        if (failed && g_stop) break; /* the engine left the frame for SIGTERM: no row for it */
        int64_t t_submit = zk_now_ns(), cpu1 = zk_thread_cpu_ns();
        row *r = &rows[f];
        r->t_start = t_start;
        r->cpu_ms = (double)(t_submit - t_start) / 1e6;
        /* stolen_ms: the frame's wall time less its thread's CPU time over the same interval. */
        r->stolen_ms = cpu0 >= 0 && cpu1 >= 0 ? (double)((t_submit - t_start) - (cpu1 - cpu0)) / 1e6 : -1;
        if (r->stolen_ms < 0 && r->stolen_ms > -0.01) r->stolen_ms = 0; /* the two clocks' granularity */
        r->gpu.ordinal = f;
        r->gpu.disjoint = -1;
        r->state = 2;
        if (s->gpu && !s->gpu->deferred) {
            zk_sample smp;
            memset(&smp, 0, sizeof smp);
            smp.disjoint = -1;
            if (s->gpu->after_submit(s->gpu, f, t_start, &smp)) r->gpu = smp;
        } else if (s->gpu && s->gpu->deferred) {
            r->state = 1;
        }
        r->interval_ms = zk_pacer_end(&p, zk_now_ns());
        int have_after = have_usage && getrusage(RUSAGE_SELF, &after) == 0;
        r->minor_faults = have_after ? after.ru_minflt - before.ru_minflt : 0;
        r->preemptions = have_after ? after.ru_nivcsw - before.ru_nivcsw : 0;
        r->has_complexity = cx >= 0;
        r->complexity = cx;
        r->draw_calls = counts.draw_calls;
        r->upload_bytes = counts.upload_bytes;
        r->vertices = counts.vertices;
        char detail[256];
        if (e->api_error(e->self, detail, sizeof detail)) {
            r->gl_error = 1;
            add_issue(&s->issues, f, "gl_error", "%s", detail);
        }
        const char *kind;
        for (int k = 0; e->frame_issue && k < 8 && (kind = e->frame_issue(e->self, detail, sizeof detail)); k++)
            add_issue(&s->issues, f, kind, "%s", detail);
        s->frames_rendered = f + 1;
        if (failed) {
            add_issue(&s->issues, f, "error", "%s", err);
            fprintf(stderr, "run: frame %d: %s\n", f, err);
            code = ZK_EXIT_FAILED;
            break;
        }
        if (s->gpu && s->gpu->deferred) {
            int got = s->gpu->poll(s->gpu, samples, 64, 0);
            for (int i = 0; i < got; i++) take_sample(s, rows, &samples[i]);
        }
        flush_rows(s, csv, rows, &next, 0);
        int64_t now = zk_now_ns();
        if (now - last_progress >= PROGRESS_EVERY_NS || f + 1 == job->total_frames) {
            last_progress = now;
            printf("{\"frame\": %d, \"of\": %d}\n", f + 1, job->total_frames);
            fflush(stdout);
        }
    }
    if (s->activity_state == 1 && getrusage(RUSAGE_SELF, &s->activity_end) == 0) {
        s->activity_t1 = zk_now_ns();
        s->activity_state = 2;
    }
    /* After the last frame, on SIGTERM and after a frame that failed: wait for the timings still outstanding,
     * so that every rendered frame's row is written (docs/gpu-timing.md). */
    if (s->gpu && s->gpu->deferred) {
        int got;
        while ((got = s->gpu->poll(s->gpu, samples, 64, 1)) > 0)
            for (int i = 0; i < got; i++) take_sample(s, rows, &samples[i]);
    }
    flush_rows(s, csv, rows, &next, 1);
    (void)source;
    free(rows);
    if (fclose(csv) != 0) add_issue(&s->issues, -1, "error", "writing %s: %s", path, strerror(errno));
    return code;
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

static int captures(run_state *s) {
    zk_engine *e = s->e;
    zk_job *job = &s->job;
    if (!job->n_capture) return 0;
    qsort(job->capture, job->n_capture, sizeof *job->capture, cmp_int);
    unsigned char *rgba = malloc((size_t)job->width * (size_t)job->height * 4);
    if (!rgba) { add_issue(&s->issues, -1, "error", "out of memory for a %dx%d capture", job->width, job->height); return -1; }
    char err[512], name[64], path[4096];
    for (size_t i = 0; i < job->n_capture; i++) {
        int frame = job->capture[i];
        if (g_stop) break;
        if (i && frame == job->capture[i - 1]) continue;
        zk_counts counts = {0, 0, -1};
        if (e->draw(e->self, frame, zk_complexity_at(job, frame), &counts, err, sizeof err) != 0 ||
            (e->submit(e->self), e->read_rgba(e->self, rgba, err, sizeof err) != 0)) {
            if (g_stop) break; /* left for SIGTERM: the partial issue says so */
            add_issue(&s->issues, frame, "error", "capture of frame %d: %s", frame, err);
            free(rgba);
            return -1;
        }
        snprintf(name, sizeof name, "capture-%d.png", frame);
        out_path(path, sizeof path, s->outdir, name);
        if (zk_png_write(path, rgba, job->width, job->height, err, sizeof err) != 0) {
            add_issue(&s->issues, frame, "error", "%s", err);
            free(rgba);
            return -1;
        }
    }
    free(rgba);
    return 0;
}

int zk_run(zk_engine *e, const char *job_path, const char *outdir) {
    char err[1024];
    struct stat st;
    if (stat(outdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "run: output directory %s does not exist\n", outdir);
        return ZK_EXIT_USAGE;
    }
    run_state s;
    memset(&s, 0, sizeof s);
    s.host_at_start = host_now();
    s.e = e;
    s.outdir = outdir;
    int loaded = job_load(&s.job, job_path, err, sizeof err);
    if (loaded == ZK_JOB_OUT_OF_MEMORY) {
        write_result(&s, err);
        zk_job_free(&s.job);
        return ZK_EXIT_FAILED;
    }
    if (loaded != 0) {
        fprintf(stderr, "run: bad job %s: %s\n", job_path, err);
        zk_job_free(&s.job);
        return ZK_EXIT_USAGE;
    }
    if (strcmp(s.job.backend, e->backend) != 0) {
        fprintf(stderr, "run: bad job %s: key 'backend': \"%s\" is not one of [\"%s\"]\n", job_path, s.job.backend, e->backend);
        zk_job_free(&s.job);
        return ZK_EXIT_USAGE;
    }
    if (e->open(e->self, err, sizeof err) != 0) {
        fprintf(stderr, "run: backend '%s' cannot start: %s\n", e->backend, err);
        zk_job_free(&s.job);
        return ZK_EXIT_FAILED;
    }
    const char *forced = s.job.gpu_timer ? s.job.gpu_timer : forced_timer();
    s.gpu = e->open_timer(e->self, forced, err, sizeof err);
    if (!s.gpu) {
        fprintf(stderr, "run: backend '%s': %s\n", e->backend, err);
        if (e->close) e->close(e->self);
        zk_job_free(&s.job);
        return ZK_EXIT_FAILED;
    }
    s.opened = 1;
    sample_conditions(e, 1, &s.conditions_start); /* before the first frame */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a pacing sleep returns at once */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    int code = ZK_EXIT_OK;
    /* Declared features first, then every op name: a scene needing anything else is skipped, not drawn. */
    const char *missing = NULL;
    for (const zj_value *f = zj_get(s.job.scene, "features")->first; f && !missing; f = f->next)
        if (!has_feature(e, f->string)) missing = f->string;
    if (!missing) missing = missing_op(e, s.job.ops, 0);
    int prepared = missing ? ZK_EXIT_SKIPPED : e->prepare(e->self, &s.job, err, sizeof err);
    if (prepared == ZK_EXIT_SKIPPED) {
        if (!missing) missing = err;
        fprintf(stderr, "run: skipped: backend '%s' lacks feature(s) %s\n", e->backend, missing);
        add_issue(&s.issues, -1, "feature_skipped", "backend '%s' lacks feature(s) %s", e->backend, missing);
        code = write_result(&s, NULL) ? ZK_EXIT_FAILED : ZK_EXIT_SKIPPED;
    } else if (prepared != 0) {
        fprintf(stderr, "run: bad job %s: %s\n", job_path, err);
        code = ZK_EXIT_USAGE;
    } else {
        code = frame_loop(&s);
        if (code == ZK_EXIT_OK && !g_stop && captures(&s) != 0) code = ZK_EXIT_FAILED;
        if (g_stop) {
            const char *name = g_stop == SIGTERM ? "SIGTERM" : g_stop == SIGINT ? "SIGINT" : "a signal";
            if (s.frames_rendered == s.job.total_frames)
                add_issue(&s.issues, s.frames_rendered, "partial", "stopped by %s after every frame, before all captures were written", name);
            else
                add_issue(&s.issues, s.frames_rendered, "partial", "stopped by %s after %d of %d frames", name,
                          s.frames_rendered, s.job.total_frames);
            code = 128 + g_stop;
        } else if (code == ZK_EXIT_OK && s.frames_rendered < s.job.total_frames && !s.ended_at_duration) {
            code = ZK_EXIT_FAILED;
        }
        if (write_result(&s, NULL) && code == ZK_EXIT_OK) code = ZK_EXIT_FAILED;
    }
    if (s.gpu) s.gpu->destroy(s.gpu);
    if (e->close) e->close(e->self);
    for (size_t i = 0; i < s.issues.n; i++) free(s.issues.items[i].detail);
    free(s.issues.items);
    zk_buf_free(&s.conditions_start);
    zk_job_free(&s.job);
    return code;
}

int zk_main(int argc, char **argv, zk_engine *e) {
    g_main_ns = zk_now_ns();
    const char *usage = "usage: %s probe | %s run JOB OUTDIR  (docs/runner-protocol.md)\n";
    if (argc == 2 && strcmp(argv[1], "probe") == 0) return probe(e);
    if (argc == 4 && strcmp(argv[1], "run") == 0) return zk_run(e, argv[2], argv[3]);
    fprintf(stderr, usage, argv[0], argv[0]);
    return ZK_EXIT_USAGE;
}
