"""Breaks job.runs: exits 1 after rendering a job completely."""
from _base import main, rect_runner

run = rect_runner.run


def failing_run(job_path, outdir):
    code = run(job_path, outdir)
    return 1 if code == 0 else code


rect_runner.run = failing_run
main()
