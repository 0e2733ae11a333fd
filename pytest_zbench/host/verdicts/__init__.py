"""Every verdict of a run: the perf gate, the golden test, the isolation checks and the differential pairs.
Each takes plain facts; the statistics they call are in regression/ and the image metrics in golden/
(docs/architecture.md)."""
