"""The size caps of the runner protocol: how much a job may ask of a runner and how much of what a runner
writes the host reads. A runner that writes more does not make the host run out of memory or write a
45 MB run.json: what is beyond a cap is an issue naming the cap, and is not read (docs/runner-protocol.md,
"Limits"; README, "Reliability").
"""

from __future__ import annotations

# Ops in one job's display list, nested ops and unrolled copies included. Large counts belong in `repeat`,
# which the runner loops; the whole shipped corpus stays under 10 ops per scene.
MAX_OPS = 10_000
# Issues kept per launch (runner and host together); the rest are counted in one last issue.
MAX_ISSUES = 1_000
# Bytes of one file a launch wrote (frames.csv, result.json, a capture); a larger file is not pulled or read.
# A 600-frame frames.csv is about 60 kB and an 8-bit RGBA 4K capture at most 33 MB.
MAX_ARTIFACT_BYTES = 256 * 1024 * 1024
# result.json is parsed whole, so it has a tighter cap (the reference runner's is a few kB; 200,000 issues
# are 17 MB).
MAX_RESULT_JSON_BYTES = 32 * 1024 * 1024
# The largest side of a scene's surface a runner is asked for (the reference runner refuses a larger job, and
# a 100,000-pixel-wide RGBA surface alone is tens of GB): an inventory's `display` stays within it.
MAX_SURFACE_SIDE = 16384
