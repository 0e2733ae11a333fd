"""Breaks progress: progress lines carry an extra key, so they are not {"frame": N, "of": M}."""
import json

from _base import main, rect_runner

rect_runner.progress = lambda frame, total: print(json.dumps({"frame": frame, "of": total, "fps": 60.0}), flush=True)
main()
