"""Configuration checks that JSON Schema cannot express, with one-line messages."""

from __future__ import annotations


class ConfigError(ValueError):
    """A bad configuration value; the message is one line naming the key."""


def key_path(parts) -> str:
    """``['grid', 'seeds', 2]`` -> ``grid.seeds[2]``."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def describe_schema_error(error) -> str:
    """One line for a ``jsonschema.ValidationError``."""
    path = list(error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"config error: {key_path(path + [missing])}: required key is missing"
    if error.validator == "additionalProperties":
        return f"config error: {key_path(path)}: {error.message} (misspelled key?)"
    if error.validator == "uniqueItems":
        return f"config error: {key_path(path)}: duplicate values in {error.instance}"
    return f"config error: {key_path(path)}: {error.message}"


def check_cross_fields(config: dict) -> None:
    """Rules between keys; raises :class:`ConfigError`."""
    groups = config["network"]["groups"]
    if "groupnorm" in config["normalisers"]:
        for width in config["network"]["hidden"]:
            if width % groups:
                raise ConfigError(
                    f"config error: network.groups: {groups} groups do not divide the hidden width {width}"
                )
            if width // groups < 2:
                raise ConfigError(
                    f"config error: network.groups: {groups} groups leave one feature per group "
                    f"in width {width}; group norm would output a constant"
                )
    rs = config["running_stats"]
    if rs["sort_feature"] >= rs["features"]:
        raise ConfigError(
            f"config error: running_stats.sort_feature: {rs['sort_feature']} >= features {rs['features']}"
        )
    for b in rs["batch_sizes"]:
        if b > rs["rows"]:
            raise ConfigError(f"config error: running_stats.batch_sizes: {b} exceeds rows {rs['rows']}")
    c = config["companions"]
    test_size = config["split"]["test_size"]
    if max(c["batch_sizes"]) > test_size:
        raise ConfigError("config error: companions.batch_sizes: larger than the test half")
