"""Breaks outdir.confined: a scratch file is written beside the job file, outside OUTDIR."""
import os

from _base import main, rect_runner

write = rect_runner.write_result


def write_result(outdir, job, issues):
    write(outdir, job, issues)
    with open(os.path.join(outdir, "..", "scratch.txt"), "w") as handle:
        handle.write("temporary")


rect_runner.write_result = write_result
main()
