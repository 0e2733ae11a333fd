/* GPU time sources for a GLES2 (or desktop GL) engine: docs/gpu-timing.md in C. Needs a current context. */
#ifndef ZBENCH_KIT_GL_H
#define ZBENCH_KIT_GL_H

#include "zbench_kit.h"

/* The sources the current context offers, best first: timer_query (EXT_disjoint_timer_query or
 * ARB_timer_query with a non-zero TIME_ELAPSED counter), finish_bracket, readback, none. Static storage. */
const char *const *zk_gl_timer_sources(void);
/* The timer query's extension name and its counter bits (0 and NULL when absent). */
const char *zk_gl_timer_extension(int *counter_bits);
/* Open a source by name, or the best when `source` is NULL. NULL with err when the context lacks it. */
zk_gpu *zk_gl_timer_open(const char *source, char *err, size_t errlen);

/* The pure rule for one raw TIME_ELAPSED value (pytest_zbench/runner/gl/timer.py judge_elapsed): fills
 * out->has_value/gpu_ms, or out->invalid with the reason. wall_ns < 0: unknown. */
void zk_judge_elapsed(uint64_t raw_ns, int have_raw, int counter_bits, int64_t wall_ns, int disjoint, zk_sample *out);

#endif
