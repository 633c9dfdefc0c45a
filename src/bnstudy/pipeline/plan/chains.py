"""Wall time on many cores, from the jobs' estimated CPU seconds: each job's longest chain of jobs
waiting for it (:func:`chain_lengths`; the build's critical path, :func:`critical_chain`) and a
list schedule of the jobs on any number of cores (:func:`schedule`)."""

from __future__ import annotations

from bnstudy.pipeline.plan.jobs import Job


def _waiting(jobs: list[Job]) -> list[list[int]]:
    """For each job, the indices of the jobs that wait for it (``needs`` turned around)."""
    waiting: list[list[int]] = [[] for _ in jobs]
    for i, job in enumerate(jobs):
        for j in job.needs:
            waiting[j].append(i)
    return waiting


def chain_lengths(jobs: list[Job]) -> list[float]:
    """Each job's estimated CPU seconds plus those of the longest chain of jobs that wait for it
    (the job's priority in :func:`schedule`; the largest is the build's critical path)."""
    waiting = _waiting(jobs)
    length: list[float | None] = [None] * len(jobs)
    for start in range(len(jobs)):  # depth first, without recursion: a DAG can be deep
        stack = [start]
        while stack:
            i = stack[-1]
            if length[i] is not None:
                stack.pop()
                continue
            todo = [k for k in waiting[i] if length[k] is None]
            if todo:
                stack.extend(todo)
                continue
            length[i] = jobs[i].cpu_s + max((length[k] for k in waiting[i]), default=0.0)
            stack.pop()
    return [float(v) for v in length]


def critical_chain(jobs: list[Job]) -> list[int]:
    """The indices of the jobs on the longest chain (:func:`chain_lengths`), first job first: from
    the job with the longest chain behind it, each step to the waiting job whose chain is longest
    (ties by DAG order)."""
    if not jobs:
        return []
    length, waiting = chain_lengths(jobs), _waiting(jobs)
    i = max(range(len(jobs)), key=lambda k: (length[k], -k))
    chain = [i]
    while waiting[i]:
        i = max(waiting[i], key=lambda k: (length[k], -k))
        chain.append(i)
    return chain


def schedule(jobs: list[Job], cores: int) -> float:
    """The wall time of a list schedule of ``jobs`` on ``cores`` cores, one core per job, each
    taking its estimated CPU seconds: whenever a core is free it takes the ready job with the
    longest chain behind it (:func:`chain_lengths`; ties by DAG order). It lies between the lower
    bound max(critical path, CPU time / cores) and, by Graham's bound for list schedules, CPU time /
    cores + critical path: an estimate of what Snakemake's scheduler, or a cluster with that many
    free cores, achieves. Hand-written: an event simulation of a few thousand jobs needs no library."""
    import heapq

    priority = chain_lengths(jobs)
    left = [len(job.needs) for job in jobs]
    waiting = _waiting(jobs)
    ready = [(-priority[i], i) for i, n in enumerate(left) if n == 0]
    heapq.heapify(ready)
    running: list[tuple[float, int]] = []
    now, done = 0.0, 0
    while done < len(jobs):
        while ready and len(running) < cores:
            _, i = heapq.heappop(ready)
            heapq.heappush(running, (now + jobs[i].cpu_s, i))
        now, i = heapq.heappop(running)
        done += 1
        for k in waiting[i]:
            left[k] -= 1
            if left[k] == 0:
                heapq.heappush(ready, (-priority[k], k))
    return now
