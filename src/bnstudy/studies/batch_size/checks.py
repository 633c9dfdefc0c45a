"""Study 2's config against its declared families of comparisons: its check, run with the config
checks (``bnstudy.base.catalogue``)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts
from bnstudy.studies.batch_size.design import CONTROLS


def check(config: dict, part: Parts) -> None:
    """A grid with a normaliser without batch statistics (a control: layer, group or RMS
    normalisation) tests it for equivalence to no normaliser against the family ``normalisers``'s
    smallest effect, so that family declares one."""
    controls = [n for n in config["normalisers"] if n in CONTROLS]
    normalisers = config["families"].get("normalisers", {})
    if controls and normalisers.get("smallest_effect") is None:
        raise ConfigError(
            "config error: families.normalisers.smallest_effect: null, but the equivalence of "
            f"{', '.join(controls)} to no normaliser is tested against it (declare the margin, a share)"
        )
