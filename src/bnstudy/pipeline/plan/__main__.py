"""``python -m bnstudy.pipeline.plan``: the command of :mod:`bnstudy.pipeline.plan.cli` (``make plan``)."""

from bnstudy.pipeline.plan.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
