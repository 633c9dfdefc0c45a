"""How often Snakemake's scheduler looks at the ready jobs of a local build.

Why this is here: Snakemake's job rate limiter (``--max-jobs-per-timespan``, default 100 jobs a
second, meant for a cluster's queue) makes each pass of the scheduler start a timer that wakes the
scheduler again a second later, and that pass starts another (Snakemake 9.27:
``JobScheduler._schedule_reevalutation`` at the end of ``schedule``'s loop). So every job that ends
adds one more pass a second for the rest of the build, and each pass reads the size of every ready
job's inputs and, with more ready jobs than cores, solves the job selection again. The paper
config's 267 jobs spent about 180 CPU s in Snakemake's own process that way, on one of two cores
(docs/speed.md); the test config's 83 jobs took 671 passes. Without the limiter a local build takes
one pass when it starts and one each time a job ends. Which jobs run, in what order of priority, and
what each computes are unchanged.
"""

from __future__ import annotations


def no_rate_limit(workflow) -> bool:
    """Switch off the job rate limiter of ``workflow``'s scheduler if its jobs run on this machine
    (a cluster's run keeps it). Called from the workflow's ``onstart``: the scheduler exists then and
    has not yet made its first pass, so its job count is still unlimited, as without a limiter.
    Returns whether it switched one off."""
    scheduler = getattr(workflow, "scheduler", None)
    if not workflow.local_exec or getattr(scheduler, "job_rate_limiter", None) is None:
        return False
    scheduler.job_rate_limiter = None
    return True
