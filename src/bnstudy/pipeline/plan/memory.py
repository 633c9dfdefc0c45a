"""The memory of a job and of a local build, in MB: what a job asks that computes the exact
statistics of every training row at once (:func:`exact_statistics_mb`), and what this machine may
give a local build's jobs (:func:`available_memory_mb`); workflow/rules/common.smk reads both."""

from __future__ import annotations

import math

from bnstudy.pipeline.plan.work import row_activations, train_rows

# Peak memory of a job computing exact statistics over the training rows, in float32 copies of
# every row's activations: an evaluate_remedies job of config/fashion-cluster.yaml (40,000 rows x 25,088
# floats, 4.0 GB a copy) peaked at 11.4 GB, a fine-tuning job at 7.6 GB (docs/cluster.md)
EXACT_STATISTICS_COPIES = 3.5


def exact_statistics_mb(config) -> int:
    """MB a job needs that computes the exact statistics of every training row at once: the rows'
    activations, :data:`EXACT_STATISTICS_COPIES` times, plus 500 MB for the interpreter and its
    libraries (the rules ask for at least this: ``job_size_with_rows`` in workflow/rules/common.smk)."""
    floats = train_rows(config) * row_activations(config)
    return math.ceil(EXACT_STATISTICS_COPIES * 4 * floats / 1e6) + 500


def available_memory_mb(meminfo="/proc/meminfo") -> int | None:
    """The memory a local build may give its jobs, in MB: the kernel's ``MemAvailable`` (memory that
    can be used without swapping) less 1,000 MB for Snakemake, the job server and the page cache;
    None where the file or the field is missing (not Linux): then no limit is set."""
    try:
        with open(meminfo) as f:
            for line in f:
                name, _, value = line.partition(":")
                if name == "MemAvailable":
                    kb = int(value.split()[0])
                    return max(1000, kb * 1024 // 1_000_000 - 1000)
    except OSError:
        return None
    return None
