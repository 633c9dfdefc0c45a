"""Common start of every rule script: log to the rule's log file, fix compute settings."""

import logging
import sys
from pathlib import Path


def start(snakemake, torch: bool = True):
    """Route logging to ``log[0]``, import the package from ``src/``, fix threads to the rule's ``threads:``.

    ``torch=False``: the job does not use PyTorch, which is then not imported.
    """
    # scriptdir is workflow/rules/../scripts: resolve before going up, or the package would be
    # imported from wherever the environment installed it instead of this clone's src/.
    root = Path(snakemake.scriptdir).resolve().parents[1]
    sys.path.insert(0, str(root / "src"))
    Path(snakemake.log[0]).parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=snakemake.log[0],
        filemode="w",
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
    )
    from bnstudy.base import runtime

    runtime.configure(snakemake.threads, torch=torch)
    log = logging.getLogger(snakemake.rule)
    log.info("rule %s wildcards %s", snakemake.rule, dict(snakemake.wildcards))
    return log
