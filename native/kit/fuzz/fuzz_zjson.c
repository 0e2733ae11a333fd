/* libFuzzer target for the kit's job reader: zjson's parser (zj_parse) and the job validation on top of it
 * (zk_job_parse), given any bytes. ci/fuzz.sh builds it with clang -fsanitize=fuzzer,address,undefined and runs
 * it for a bounded time from the committed corpus (corpus/: jobs as the host writes them, and JSON's awkward
 * corners); a crash, a sanitizer report or a broken invariant below is a failure, and its input becomes a
 * regression case (native/kit/tests/test_kit.c).
 *
 * Beyond "does not crash", the invariants a reader of the tree relies on: counts match the children, strings
 * are NUL-terminated at their length, every member has a key; a string the kit writes (zk_buf_str) parses back
 * to the same bytes; a refusal always comes with a message, and a job that is accepted has the values the
 * frame loop trusts (frames >= 1, a size within ZK_MAX_SIDE, one complexity per frame). */
#include "zbench_kit.h"
#include "zbench_kit_internal.h"
#include "zjson.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE(cond) do { if (!(cond)) __builtin_trap(); } while (0)

static void walk(const zj_value *v, int depth) {
    REQUIRE(depth <= ZJ_MAX_DEPTH);
    switch (v->type) {
    case ZJ_STRING: {
        REQUIRE(v->string && v->string[v->len] == 0);
        /* What the kit writes of a string (up to its first NUL, as a C string) reads back the same. */
        zk_buf b = {0};
        zk_buf_str(&b, v->string);
        if (!b.oom) {
            zj_value *back = zj_parse(b.data, b.len, NULL, 0);
            size_t n = strlen(v->string);
            REQUIRE(back && back->type == ZJ_STRING && back->len == n && memcmp(back->string, v->string, n) == 0);
            zj_free(back);
        }
        zk_buf_free(&b);
        break;
    }
    case ZJ_ARRAY:
    case ZJ_OBJECT: {
        size_t n = 0;
        for (const zj_value *c = v->first; c; c = c->next, n++) {
            REQUIRE((v->type == ZJ_OBJECT) == (c->key != NULL));
            if (c->key) REQUIRE(zj_get(v, c->key) != NULL);
            walk(c, depth + 1);
        }
        REQUIRE(n == v->len);
        if (v->type == ZJ_ARRAY) REQUIRE(zj_at(v, n) == NULL && (n == 0 || zj_at(v, n - 1) != NULL));
        break;
    }
    case ZJ_NUMBER:
        REQUIRE(v->number == v->number); /* never NaN; infinities are refused too */
        if (v->is_integer) REQUIRE((double)v->integer == v->number || v->integer > (1LL << 53) || v->integer < -(1LL << 53));
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[300];
    err[0] = 0;
    zj_value *root = zj_parse((const char *)data, size, err, sizeof err);
    if (root) walk(root, 0);
    else REQUIRE(err[0] != 0);
    zj_free(root);

    zk_job job;
    memset(&job, 0, sizeof job);
    job.path = "job.json";
    char jerr[512];
    jerr[0] = 0;
    int code = zk_job_parse(&job, (const char *)data, size, jerr, sizeof jerr);
    if (code == 0) {
        REQUIRE(job.frames >= 1 && job.warmup_frames >= 0 && job.total_frames == job.warmup_frames + job.frames);
        REQUIRE(job.width >= 1 && job.width <= ZK_MAX_SIDE && job.height >= 1 && job.height <= ZK_MAX_SIDE);
        REQUIRE(job.refresh_hz > 0 && job.backend && job.scene_id && job.ops && job.ops->type == ZJ_ARRAY);
        REQUIRE(!job.complexity || job.n_complexity == (size_t)job.total_frames);
        for (int f = 0; f < job.total_frames && f < 4; f++) (void)zk_complexity_at(&job, f);
    } else {
        REQUIRE(jerr[0] != 0 && strlen(jerr) < sizeof jerr);
    }
    zk_job_free(&job);
    return 0;
}
