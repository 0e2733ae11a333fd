"""Breaks signal.sigterm: on SIGTERM the runner keeps rows 0..N in order but drops the newer half of those it
had written (and reported in its progress lines): whole frames, in order, yet fewer than it rendered."""
from _base import main, rect_runner

open_frames = rect_runner.frames_file


class Truncating:
    def __init__(self, outdir):
        self.path = f"{outdir}/frames.csv"
        self.handle = open_frames(outdir)

    def write(self, text):
        return self.handle.write(text)

    def flush(self):
        self.handle.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()
        if rect_runner.STOP:
            with open(self.path) as f:
                lines = f.readlines()
            header, rows = lines[0], lines[1:]
            with open(self.path, "w") as f:
                f.writelines([header, *rows[: len(rows) // 2]])


rect_runner.frames_file = Truncating
main()
