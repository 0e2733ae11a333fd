/* The runner kit's own tests, in C99 with nothing beyond libc, so that the same binary is built for this machine
 * and cross-built (statically) for armhf and aarch64, where it runs under qemu-user: the kit's arithmetic is
 * checked on the architectures it ships to (native/kit/tests/Makefile, `make -C native check`).
 *
 *   zbench-kit-tests [PNG_DIR]
 *
 * Checks the JSON writer's escaping, the zjson reader (numbers, strings, nesting and its depth limit, malformed
 * input), the job reader's messages, the frame loop's vsync schedule and phases, the PNG writer (read back here;
 * with PNG_DIR, the files are also left there for tests/native/test_kit_tests.py to open with Pillow) and the
 * unpremultiply's rounding. Prints one line per failed check and a summary; exits 1 when anything failed. */
#include "zbench_kit.h"
#include "zbench_kit_internal.h"
#include "zjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_checks, g_failed;

static int check(int ok, const char *what, const char *file, int line) {
    g_checks++;
    if (!ok) {
        g_failed++;
        printf("FAIL %s:%d: %s\n", file, line, what);
    }
    return ok;
}
#define CHECK(cond) check((cond) != 0, #cond, __FILE__, __LINE__)
/* Strings compared with both shown when they differ. */
#define CHECK_STR(got, want) check_str((got), (want), #got, __FILE__, __LINE__)
static void check_str(const char *got, const char *want, const char *what, const char *file, int line) {
    if (!check(got && strcmp(got, want) == 0, what, file, line)) printf("     got  %s\n     want %s\n", got ? got : "(null)", want);
}
#define CHECK_NEAR(got, want) check(fabs((got) - (want)) < 1e-9, #got " == " #want, __FILE__, __LINE__)

/* ------------------------------------------------------------------------------------- JSON writer */

static void writes(const char *s, const char *want, const char *file, int line) {
    zk_buf b = {0};
    zk_buf_str(&b, s);
    check_str(b.data, want, "zk_buf_str", file, line);
    /* What the kit writes, the kit reads back to the same bytes. */
    if (s) {
        char err[200];
        zj_value *v = zj_parse(b.data, b.len, err, sizeof err);
        check(v && v->type == ZJ_STRING && v->len == strlen(s) && memcmp(v->string, s, v->len) == 0,
              "the written string reads back the same", file, line);
        zj_free(v);
    }
    zk_buf_free(&b);
}
#define WRITES(s, want) writes((s), (want), __FILE__, __LINE__)

static void test_json_writer(void) {
    WRITES("plain", "\"plain\"");
    WRITES("", "\"\"");
    WRITES(NULL, "null");
    WRITES("a\"b", "\"a\\\"b\"");
    WRITES("back\\slash", "\"back\\\\slash\"");
    WRITES("\\\"", "\"\\\\\\\"\"");
    WRITES("line\nbreak", "\"line\\nbreak\"");
    /* Every other control character as \u00XX (valid JSON, whatever the reader's short forms). */
    WRITES("\t\r\b\f", "\"\\u0009\\u000d\\u0008\\u000c\"");
    WRITES("\x01\x1f", "\"\\u0001\\u001f\"");
    /* DEL, a slash and UTF-8 (2, 3 and 4 bytes) are written as they are: JSON needs no escape for them. */
    WRITES("\x7f/", "\"\x7f/\"");
    WRITES("\xc3\xa9 \xe2\x86\x92 \xf0\x9d\x84\x9e", "\"\xc3\xa9 \xe2\x86\x92 \xf0\x9d\x84\x9e\"");
    char out[8];
    CHECK_STR(zk_json_char(' ', out), " ");
    CHECK_STR(zk_json_char(0x1f, out), "\\u001f");
    CHECK_STR(zk_json_char(0x20, out), " ");
    CHECK_STR(zk_json_char(0xff, out), "\xff");
    /* A buffer that grows past its first allocation keeps every byte. */
    zk_buf b = {0};
    for (int i = 0; i < 1000; i++) zk_buf_add(&b, "%d,", i % 10);
    CHECK(b.len == 2000 && !b.oom && b.data[1998] == '9' && b.data[2000] == 0);
    zk_buf_free(&b);
}

/* ------------------------------------------------------------------------------------- JSON reader */

static zj_value *parse(const char *text, char *err, size_t errlen) { return zj_parse(text, strlen(text), err, errlen); }

static void rejects(const char *text, const char *reason, const char *file, int line) {
    char err[300] = "";
    zj_value *v = parse(text, err, sizeof err);
    check(v == NULL, text, file, line);
    if (!check(strstr(err, reason) != NULL, reason, file, line)) printf("     message: %s\n", err);
    zj_free(v);
}
#define REJECTS(text, reason) rejects((text), (reason), __FILE__, __LINE__)

static void test_json_numbers(void) {
    char err[300];
    struct { const char *text; double number; int is_integer; long long integer; } cases[] = {
        {"0", 0, 1, 0},
        {"-0", 0, 1, 0},
        {"42", 42, 1, 42},
        {"-17", -17, 1, -17},
        {"1.5", 1.5, 0, 0},
        {"1e3", 1000, 0, 0},
        {"2.5E-1", 0.25, 0, 0},
        {"1e+2", 100, 0, 0},
        {"9223372036854775807", 9223372036854775807.0, 1, 9223372036854775807LL},
        {"-9223372036854775808", -9223372036854775808.0, 1, -9223372036854775807LL - 1},
        /* Past int64: still a number, no longer an integer (a frame count there is refused, not wrapped). */
        {"9223372036854775808", 9223372036854775808.0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        zj_value *v = parse(cases[i].text, err, sizeof err);
        if (!CHECK(v && v->type == ZJ_NUMBER)) { printf("     %s: %s\n", cases[i].text, err); zj_free(v); continue; }
        CHECK(v->number == cases[i].number);
        CHECK(v->is_integer == cases[i].is_integer);
        if (cases[i].is_integer) CHECK(v->integer == cases[i].integer);
        zj_free(v);
    }
    /* RFC 8259's grammar, strictly: what Python's json would read is not enough (NaN, Infinity). */
    REJECTS("01", "extra data");
    REJECTS("1.", "digit after '.'");
    REJECTS(".5", "expected a value");
    REJECTS("+1", "expected a value");
    REJECTS("-", "expected a digit");
    REJECTS("1e", "exponent");
    REJECTS("1e+", "exponent");
    REJECTS("NaN", "expected a value");
    REJECTS("Infinity", "expected a value");
    REJECTS("-Infinity", "expected a value");
    REJECTS("1e999", "out of range");
    REJECTS("0x10", "extra data");
}

static void test_json_strings_and_structure(void) {
    char err[300];
    zj_value *v = parse("\"\\u00e9\\u2192\\ud834\\udd1e\\\"\\\\\\/\\b\\f\\n\\r\\t\"", err, sizeof err);
    if (CHECK(v && v->type == ZJ_STRING)) {
        const char want[] = "\xc3\xa9\xe2\x86\x92\xf0\x9d\x84\x9e\"\\/\b\f\n\r\t";
        CHECK(v->len == sizeof want - 1 && memcmp(v->string, want, v->len) == 0);
    }
    zj_free(v);
    /* \u0000 is kept, and len counts past it. */
    v = parse("\"a\\u0000b\"", err, sizeof err);
    CHECK(v && v->len == 3 && v->string[1] == 0 && v->string[2] == 'b');
    zj_free(v);

    v = parse(" {\"a\": [1, true, false, null, {\"b\": \"c\"}], \"a\": 2, \"d\": {}} ", err, sizeof err);
    if (CHECK(v && v->type == ZJ_OBJECT && v->len == 3)) {
        /* The last duplicate wins, as in Python's json. */
        const zj_value *a = zj_get(v, "a");
        CHECK(a && a->type == ZJ_NUMBER && a->integer == 2);
        const zj_value *first = v->first;
        CHECK(first->type == ZJ_ARRAY && first->len == 5);
        CHECK(zj_at(first, 1)->type == ZJ_BOOL && zj_at(first, 1)->boolean == 1);
        CHECK(zj_at(first, 2)->type == ZJ_BOOL && zj_at(first, 2)->boolean == 0);
        CHECK(zj_at(first, 3)->type == ZJ_NULL);
        CHECK_STR(zj_get(zj_at(first, 4), "b")->string, "c");
        CHECK(zj_at(first, 5) == NULL);
        CHECK(zj_get(v, "missing") == NULL && zj_get(first, "a") == NULL && zj_at(v, 0) == NULL);
        CHECK(zj_get(v, "d")->type == ZJ_OBJECT && zj_get(v, "d")->len == 0);
    }
    zj_free(v);
    /* A UTF-8 byte order mark is skipped. */
    v = parse("\xef\xbb\xbf[]", err, sizeof err);
    CHECK(v && v->type == ZJ_ARRAY && v->len == 0);
    zj_free(v);

    REJECTS("", "unexpected end of input");
    REJECTS("   ", "unexpected end of input");
    REJECTS("[1,]", "expected a value");
    REJECTS("[1 2]", "expected ',' or ']'");
    REJECTS("{\"a\":1,}", "member name in quotes");
    REJECTS("{\"a\" 1}", "expected ':'");
    REJECTS("{a:1}", "member name in quotes");
    REJECTS("{\"a\":1", "expected ',' or '}'");
    REJECTS("[", "unexpected end of input");
    REJECTS("\"abc", "unterminated string");
    REJECTS("\"abc\\", "unterminated string");
    REJECTS("\"tab\there\"", "control character");
    REJECTS("\"\\x41\"", "bad escape");
    REJECTS("\"\\u12\"", "short \\u escape");
    REJECTS("\"\\u12zz\"", "bad hex digit");
    REJECTS("\"\\u12", "unterminated string");
    REJECTS("\"\\ud834\"", "lone surrogate");
    REJECTS("\"\\udd1e\"", "lone surrogate");
    REJECTS("\"\\ud834\\u0041\"", "bad low surrogate");
    REJECTS("tru", "expected a value");
    REJECTS("nul", "expected a value");
    REJECTS("[] []", "extra data");
    REJECTS("'a'", "expected a value");
    /* The message says where: line 2, byte 7. */
    char where[300];
    CHECK(parse("[1,\n 2,]", where, sizeof where) == NULL);
    CHECK_STR(where, "not valid JSON at line 2 (byte 7): expected a value");
    /* A NUL byte inside the document (not a C string's end: the length says where it ends). */
    CHECK(zj_parse("[1]\0", 4, err, sizeof err) == NULL);
    v = zj_parse("[1]\0", 3, err, sizeof err);
    CHECK(v && v->len == 1);
    zj_free(v);
}

/* `depth` arrays nested around a 0 (innermost value at depth `depth`), or around nothing. */
static char *nested(int depth, int with_value) {
    char *s = malloc((size_t)depth * 2 + 2), *o = s;
    for (int i = 0; i < depth; i++) *o++ = '[';
    if (with_value) *o++ = '0';
    for (int i = 0; i < depth; i++) *o++ = ']';
    *o = 0;
    return s;
}

static void test_json_depth(void) {
    char err[300];
    char *ok = nested(ZJ_MAX_DEPTH, 1), *deep = nested(ZJ_MAX_DEPTH + 1, 1), *huge = nested(100000, 0);
    zj_value *v = parse(ok, err, sizeof err);
    CHECK(v != NULL);
    zj_free(v);
    v = parse(deep, err, sizeof err);
    CHECK(v == NULL && strstr(err, "nested deeper than 256"));
    /* Far past the limit: refused without recursing that deep (no stack overflow). */
    v = parse(huge, err, sizeof err);
    CHECK(v == NULL && strstr(err, "nested deeper than 256"));
    free(ok);
    free(deep);
    free(huge);
    /* Objects count as levels too. */
    zk_buf b = {0};
    for (int i = 0; i <= ZJ_MAX_DEPTH; i++) zk_buf_add(&b, "{\"k\":");
    zk_buf_add(&b, "0");
    for (int i = 0; i <= ZJ_MAX_DEPTH; i++) zk_buf_add(&b, "}");
    v = zj_parse(b.data, b.len, err, sizeof err);
    CHECK(v == NULL && strstr(err, "nested deeper"));
    zk_buf_free(&b);
}

/* --------------------------------------------------------------------------------------- job reader */

static const char JOB[] =
    "{\"protocol\": 1, \"backend\": \"gles2\", \"mode\": \"paced\", \"refresh_hz\": 60.0, \"warmup_frames\": 2,"
    " \"frames\": 3, \"capture\": [4], \"seed\": -7, \"complexity\": [0, 0.5, 1, 2, 3], \"duration_s\": null,"
    " \"gpu_timer\": \"none\", \"scene\": {\"id\": \"s\", \"params\": {}, \"width\": %s, \"height\": 8,"
    " \"features\": [\"rect\"], \"ops\": []}}";

static int job_with_width(const char *width, zk_job *job, char *err, size_t n) {
    char text[sizeof JOB + 32];
    snprintf(text, sizeof text, JOB, width);
    memset(job, 0, sizeof *job);
    return zk_job_parse(job, text, strlen(text), err, n);
}

static void test_job_reader(void) {
    zk_job job;
    char err[512];
    if (CHECK(job_with_width("16", &job, err, sizeof err) == 0)) {
        CHECK(job.paced && job.refresh_hz == 60.0 && job.warmup_frames == 2 && job.frames == 3 && job.total_frames == 5);
        CHECK(job.n_capture == 1 && job.capture[0] == 4 && job.seed == -7 && job.width == 16 && job.height == 8);
        CHECK(job.n_complexity == 5 && job.complexity[4] == 3.0 && job.duration_s == 0);
        CHECK_STR(job.gpu_timer, "none");
        CHECK_STR(job.scene_id, "s");
    } else {
        printf("     %s\n", err);
    }
    zk_job_free(&job);
    /* The scene's size out of range: the message names the key once (it was formatted from itself, and came out
     * as "scene scene scene ..."). */
    CHECK(job_with_width("0", &job, err, sizeof err) == -1);
    CHECK_STR(err, "scene key 'width' must be an integer in 1..16384");
    zk_job_free(&job);
    CHECK(job_with_width("16385", &job, err, sizeof err) == -1);
    CHECK_STR(err, "scene key 'width' must be an integer in 1..16384");
    zk_job_free(&job);
    CHECK(job_with_width("1.0", &job, err, sizeof err) == -1);
    CHECK_STR(err, "scene key 'width' must be an integer in 1..16384");
    zk_job_free(&job);
    memset(&job, 0, sizeof job);
    CHECK(zk_job_parse(&job, "[1]", 3, err, sizeof err) == -1);
    CHECK_STR(err, "the job is an array, not an object");
    zk_job_free(&job);
    memset(&job, 0, sizeof job);
    CHECK(zk_job_parse(&job, "{\"protocol\": 1", 14, err, sizeof err) == -1);
    CHECK(strstr(err, "not valid JSON at line 1") != NULL);
    zk_job_free(&job);
}

/* ---------------------------------------------------------------------------------- frames: phases */

static void test_phases_and_complexity(void) {
    CHECK_STR(zk_phase(0, 2), "warmup");
    CHECK_STR(zk_phase(1, 2), "warmup");
    CHECK_STR(zk_phase(2, 2), "measure");
    CHECK_STR(zk_phase(0, 0), "measure");
    double cx[] = {0.25, 0.5, 1.0};
    zk_job job;
    memset(&job, 0, sizeof job);
    CHECK(zk_complexity_at(&job, 0) == -1.0);
    job.complexity = cx;
    job.n_complexity = 3;
    CHECK(zk_complexity_at(&job, 0) == 0.25 && zk_complexity_at(&job, 2) == 1.0);
    /* Past the list (a sustained run's frames beyond the job's count): its last value is held. */
    CHECK(zk_complexity_at(&job, 3) == 1.0 && zk_complexity_at(&job, 1000) == 1.0);
}

/* A 50 Hz display: a period of exactly 20 ms, so that a frame ending on a vsync is a true tie. */
#define MS 1000000LL

static void test_pacer_paced(void) {
    zk_pacer p = {0};
    p.paced = 1;
    p.period_ns = 1e9 / 50;
    p.period_ms = 1e3 / 50;
    int64_t t0 = 5 * MS, target;
    CHECK(zk_pacer_wait_until(&p, &target) == 0); /* the first frame starts at once: it is vsync 0 */
    zk_pacer_start(&p, t0);
    CHECK(p.t0 == t0 && p.start == 0);
    /* Done within its period: presented on the next vsync, one period after the last. */
    CHECK_NEAR(zk_pacer_end(&p, t0 + 3 * MS), 20.0);
    CHECK(zk_pacer_wait_until(&p, &target) == 1 && target == t0 + 20 * MS);
    zk_pacer_start(&p, target);
    CHECK(p.start == 1);
    /* Overran into the third period: presented on vsync 3, two periods after vsync 1 (one missed). */
    CHECK_NEAR(zk_pacer_end(&p, t0 + 45 * MS), 40.0);
    CHECK(zk_pacer_wait_until(&p, &target) == 1 && target == t0 + 60 * MS);
    /* Woken late, after vsync 4 had passed: the frame starts on vsync 4 and presents on 5 at the earliest. */
    zk_pacer_start(&p, t0 + 85 * MS);
    CHECK(p.start == 4);
    CHECK_NEAR(zk_pacer_end(&p, t0 + 86 * MS), 40.0);
    /* Ending exactly on a vsync presents on that vsync (ceil), never before start + 1. */
    zk_pacer_start(&p, t0 + 100 * MS);
    CHECK(p.start == 5);
    CHECK_NEAR(zk_pacer_end(&p, t0 + 120 * MS), 20.0);
    zk_pacer_start(&p, t0 + 120 * MS);
    CHECK_NEAR(zk_pacer_end(&p, t0 + 140 * MS + 1), 40.0); /* 1 ns past vsync 7: vsync 8 */

    /* 60 Hz, whose period is no whole number of nanoseconds: the wait rounds up, never starting early. */
    zk_pacer q = {0};
    q.paced = 1;
    q.period_ns = 1e9 / 60;
    q.period_ms = 1e3 / 60;
    zk_pacer_start(&q, 0);
    CHECK_NEAR(zk_pacer_end(&q, 1), 1e3 / 60);
    CHECK(zk_pacer_wait_until(&q, &target) == 1 && target == 16666667);
    zk_pacer_start(&q, target);
    CHECK(q.start == 1);
    /* Many frames later the schedule has not drifted: vsync 600 is 10 s after t0, to the nanosecond. */
    for (int k = 2; k <= 600; k++) {
        zk_pacer_end(&q, (int64_t)((k - 1) * (1e9 / 60)) + 1000);
        zk_pacer_wait_until(&q, &target);
        zk_pacer_start(&q, target);
    }
    CHECK(q.start == 600 && target == 10000000000LL);
}

static void test_pacer_uncapped(void) {
    zk_pacer p = {0};
    p.period_ns = 1e9 / 60;
    p.period_ms = 1e3 / 60;
    int64_t target;
    zk_pacer_start(&p, 1000);
    CHECK(zk_pacer_wait_until(&p, &target) == 0);
    /* The time between frame ends; the first from the first frame's start. */
    CHECK_NEAR(zk_pacer_end(&p, 1000 + 3 * MS), 3.0);
    zk_pacer_start(&p, 1000 + 3 * MS);
    CHECK(zk_pacer_wait_until(&p, &target) == 0);
    CHECK_NEAR(zk_pacer_end(&p, 1000 + 5 * MS + 500), 2.0005);
}

/* ---------------------------------------------------------------------------------------------- PNG */

/* A pattern whose every byte differs from its neighbours', alpha included. */
static unsigned char *pattern(int w, int h) {
    unsigned char *rgba = malloc((size_t)w * h * 4);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            unsigned char *px = rgba + ((size_t)y * w + x) * 4;
            px[0] = (unsigned char)(x * 7 + y);
            px[1] = (unsigned char)(y * 13 + x * 3);
            px[2] = (unsigned char)(x ^ y);
            px[3] = (unsigned char)(255 - (x + y) % 256);
        }
    return rgba;
}

static void png_round_trip(int w, int h, const char *dir, const char *file, int line) {
    unsigned char *rgba = pattern(w, h);
    size_t len = 0;
    unsigned char *png = zk_png_encode(rgba, w, h, &len);
    int dw = 0, dh = 0;
    unsigned char *back = png ? zk_png_decode_stored(png, len, &dw, &dh) : NULL;
    check(back && dw == w && dh == h && memcmp(back, rgba, (size_t)w * h * 4) == 0, "the PNG decodes to its pixels",
          file, line);
    /* The signature, IHDR (8-bit RGBA) and IEND, where a PNG reader looks for them. */
    check(png && len > 57 && memcmp(png, "\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16) == 0 && png[24] == 8 && png[25] == 6,
          "PNG header", file, line);
    check(png && memcmp(png + len - 12, "\0\0\0\0IEND\xae\x42\x60\x82", 12) == 0, "PNG IEND", file, line);
    /* One corrupted byte of a stored block's length is refused, not read past. */
    if (png && len > 45) {
        png[8 + 25 + 8 + 2 + 1] ^= 0x01;
        unsigned char *bad = zk_png_decode_stored(png, len, &dw, &dh);
        check(bad == NULL, "a corrupted block length is refused", file, line);
        free(bad);
    }
    if (dir) {
        char path[4096], err[512];
        snprintf(path, sizeof path, "%s/pattern-%dx%d.png", dir, w, h);
        check(zk_png_write(path, rgba, w, h, err, sizeof err) == 0, err, file, line);
    }
    free(rgba);
    free(png);
    free(back);
}

static void test_png(const char *dir) {
    png_round_trip(1, 1, dir, __FILE__, __LINE__);
    png_round_trip(5, 3, dir, __FILE__, __LINE__);
    /* 257-byte scanlines times 255 rows: exactly one full stored block (65535 bytes), the edge of the split. */
    png_round_trip(64, 255, dir, __FILE__, __LINE__);
    png_round_trip(64, 256, dir, __FILE__, __LINE__);
    /* Several blocks. */
    png_round_trip(300, 200, dir, __FILE__, __LINE__);
    char err[512];
    unsigned char px[4] = {1, 2, 3, 4};
    CHECK(zk_png_write("/nonexistent-folder/x.png", px, 1, 1, err, sizeof err) == -1);
    CHECK(strstr(err, "/nonexistent-folder/x.png: ") == err);
    /* Not a PNG of the kit's: refused. */
    int w, h;
    CHECK(zk_png_decode_stored((const unsigned char *)"GIF89a", 6, &w, &h) == NULL);
}

/* ------------------------------------------------------------------------------------- unpremultiply */

static void test_unpremultiply(void) {
    /* {premultiplied r, alpha, expected straight r}: round(r * 255 / a), ties up. The cases where truncation
     * would give one less are marked: a capture that truncates is one level dark there. */
    static const int cases[][3] = {
        {0, 0, 0},     /* transparent: colour 0 */
        {7, 0, 0},     /* transparent with colour left over (not premultiplied): still 0 */
        {0, 1, 0},
        {1, 1, 255},
        {1, 2, 128},   /* 127.5: truncation 127 */
        {1, 3, 85},
        {2, 3, 170},
        {1, 127, 2},   /* 2.008 */
        {63, 127, 126}, /* 126.496 */
        {64, 127, 129}, /* 128.504: truncation 128 */
        {127, 127, 255},
        {1, 128, 2},   /* 1.992: truncation 1 */
        {64, 128, 128}, /* 127.5: truncation 127 */
        {128, 128, 255},
        {129, 128, 255}, /* more colour than alpha (not premultiplied): clamped, not wrapped */
        {1, 254, 1},
        {127, 254, 128}, /* 127.5: truncation 127 */
        {253, 254, 254}, /* 253.996: truncation 253 */
        {254, 254, 255},
        {200, 255, 200}, /* opaque: left as it is */
        {0, 255, 0},
        {255, 255, 255},
    };
    size_t n = sizeof cases / sizeof *cases;
    unsigned char *px = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        /* The same value in r, g and b, so that every channel is checked. */
        px[i * 4] = px[i * 4 + 1] = px[i * 4 + 2] = (unsigned char)cases[i][0];
        px[i * 4 + 3] = (unsigned char)cases[i][1];
    }
    zk_unpremultiply(px, n);
    for (size_t i = 0; i < n; i++) {
        int ok = px[i * 4] == cases[i][2] && px[i * 4 + 1] == cases[i][2] && px[i * 4 + 2] == cases[i][2] &&
                 px[i * 4 + 3] == cases[i][1];
        if (!CHECK(ok))
            printf("     premultiplied %d alpha %d: got %d %d %d / %d, want %d\n", cases[i][0], cases[i][1], px[i * 4],
                   px[i * 4 + 1], px[i * 4 + 2], px[i * 4 + 3], cases[i][2]);
    }
    free(px);
    /* Every premultiplied value of every alpha: a straight colour that premultiplies (rounded, as engines do)
     * back to it is the one returned, so a straight colour survives the round trip whenever it can. */
    int worst = 0;
    for (int a = 1; a < 255; a++)
        for (int s = 0; s < 256; s++) {
            unsigned char q[4] = {(unsigned char)((s * a + 127) / 255), 0, 0, (unsigned char)a};
            zk_unpremultiply(q, 1);
            unsigned char again = (unsigned char)((q[0] * a + 127) / 255);
            if (again != (s * a + 127) / 255) worst = 1;
        }
    CHECK(worst == 0);
}

int main(int argc, char **argv) {
    const char *png_dir = argc > 1 ? argv[1] : NULL;
    test_json_writer();
    test_json_numbers();
    test_json_strings_and_structure();
    test_json_depth();
    test_job_reader();
    test_phases_and_complexity();
    test_pacer_paced();
    test_pacer_uncapped();
    test_png(png_dir);
    test_unpremultiply();
    printf("zbench-kit-tests: %d checks, %d failed\n", g_checks, g_failed);
    return g_failed ? 1 : 0;
}
