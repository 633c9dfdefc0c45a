"""Study 3's config section: the sorted feature is one of the features, each batch fits in the
rows (bnstudy.base.catalogue runs it with the config checks)."""

from __future__ import annotations

from bnstudy.base.config import ConfigError, Parts


def check(config: dict, part: Parts) -> None:
    rs = config["running_stats"]
    if rs["sort_feature"] >= rs["features"]:
        raise ConfigError(
            f"config error: running_stats.sort_feature: {rs['sort_feature']} >= features {rs['features']}"
        )
    for b in rs["batch_sizes"]:
        if b > rs["rows"]:
            raise ConfigError(f"config error: running_stats.batch_sizes: {b} exceeds rows {rs['rows']}")
