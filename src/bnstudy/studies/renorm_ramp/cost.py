"""The ramp study in the cost model (bnstudy.pipeline.plan): its training jobs, one per batch size, priced
as every rule that trains is (one fit per network family, step-equivalents x the network): the grid's
networks of that batch size and seeds, once per schedule variant."""

from __future__ import annotations

from bnstudy.pipeline.plan import TRAIN_UNIT, TRAINING, Work, network_family, train_work


def _job(p, wc, config):
    # each variant: the grid's networks of the job's batch size for the study's seeds (train.py's work)
    return len(p["schedules"]) * train_work(p, wc, config)


WORK = {
    "train_renorm_ramp": Work(
        TRAIN_UNIT,
        _job,
        ("renorm_ramp.seeds", "renorm_ramp.schedules", "renorm_ramp.batch_sizes", "grid.epochs", "split.test_size"),
        group=TRAINING,
        variant=network_family,
    ),
}
# Rows of the cost table (workflow/resources/cpu_seconds.tsv) that no calibration has measured yet: such a
# job costs the table's '*' row until `python -m bnstudy.pipeline.plan calibrate` from a build that ran it.
UNMEASURED = {"train_renorm_ramp:mlp", "train_renorm_ramp:conv"}
