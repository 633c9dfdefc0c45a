"""The config check of the ``families`` section (:mod:`bnstudy.evaluation.families`): it declares
exactly the families of comparisons the config's studies form.

A module of its own, looked up by name from :func:`bnstudy.base.config.check_cross_fields` as the
studies' checks are: the figure scripts load the catalogue (for the printed widths), and a check in
the catalogue that imports the config module would make every figure job depend on it.
"""

from __future__ import annotations

from bnstudy.base import catalogue
from bnstudy.base.config import ConfigError


def check_families(config: dict) -> None:
    """The ``families`` section declares exactly the families of comparisons the config's studies form
    (:func:`bnstudy.base.catalogue.families`): one missing, or one no study of the config forms, is an error."""
    formed = catalogue.families(config)
    declared = config["families"]
    for name, study in formed.items():
        if name not in declared:
            raise ConfigError(
                f"config error: families.{name}: not declared, but the study {study} forms this family "
                "(declare what it compares, over what, its adjustment and smallest effect)"
            )
    for name in declared:
        if name not in formed:
            why = "no study forms it" if name not in catalogue.all_families() else "no study of this config forms it"
            raise ConfigError(
                f"config error: families.{name}: {why} (this config's families: {', '.join(formed) or 'none'})"
            )
