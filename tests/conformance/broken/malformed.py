"""Breaks job.malformed: a job with an unknown mode runs (as uncapped) instead of being refused."""
from _base import main, rect_runner

problem = rect_runner.job_problem
rect_runner.job_problem = lambda job: None if isinstance(job, dict) and job.get("mode") == "turbo" else problem(job)
main()
