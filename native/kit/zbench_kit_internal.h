/* The kit's arithmetic that its own tests (native/kit/tests) check directly: the frame loop's vsync schedule,
 * the warmup/measure phase of a frame, the complexity a frame draws at and the escaping of one byte of a JSON
 * string. Internal to the kit: an engine includes zbench_kit.h only, and nothing here is a stable API. */
#ifndef ZBENCH_KIT_INTERNAL_H
#define ZBENCH_KIT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "zbench_kit.h"

/* docs/runner-protocol.md, "job": paced frames start on a simulated vsync t0 + k * period and present on the
 * first vsync after they end; uncapped never waits and the interval is the time between frame ends. This is
 * the reference runner's schedule (pytest_zbench/runner/pacing.py) in C, with the clock left to the caller:
 * zk_pacer_wait_until says when the next frame may start, zk_pacer_start records a start at `now` (after any
 * wait) and zk_pacer_end a frame's end, returning its present_interval_ms. Start it as {0} with paced,
 * period_ns and period_ms set. */
typedef struct zk_pacer {
    int paced, started;
    double period_ns, period_ms;
    int64_t t0;
    int64_t next, start, last_present; /* vsync indices */
    int64_t last_end;
} zk_pacer;

/* 1 with *target_ns set when the frame must not start before it (paced, after the first frame); 0 otherwise. */
int zk_pacer_wait_until(const zk_pacer *p, int64_t *target_ns);
void zk_pacer_start(zk_pacer *p, int64_t now_ns);
double zk_pacer_end(zk_pacer *p, int64_t now_ns);

/* frames.csv's phase of frame `frame` when the job has `warmup` warmup frames: "warmup" or "measure". */
const char *zk_phase(int frame, int warmup);

/* The complexity frame `frame` draws at: the job's list, its last value held past its end; -1 when none. */
double zk_complexity_at(const zk_job *job, int frame);

/* Validate a job's text as job.schema.json says (docs/runner-protocol.md, "job") into `job`, which holds the parsed
 * tree until zk_job_free: 0, -1 for a bad job (err names the key) or ZK_JOB_OUT_OF_MEMORY. The kit's job reader
 * past reading the file; set job->path first (the caller's). */
#define ZK_JOB_OUT_OF_MEMORY (-2)
int zk_job_parse(zk_job *job, const char *text, size_t len, char *err, size_t errlen);
void zk_job_free(zk_job *job);

/* One byte of a JSON string literal as JSON text, into out (NUL-terminated): the escaping rule of every string
 * the kit writes. */
const char *zk_json_char(unsigned char c, char out[8]);

#endif
