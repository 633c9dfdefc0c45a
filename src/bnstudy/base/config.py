"""Configuration checks, with one-line messages: :func:`validate` runs them all.

A config passes, in this order: every number finite (JSON Schema accepts NaN and
infinities), the schema (``workflow/schemas/config.schema.yaml``, its normaliser
lists filled from the registry by :func:`load_schema`), then the rules between keys
that JSON Schema cannot express (:func:`check_cross_fields`). The workflow calls
:func:`validate` on each ``--configfile`` and on the merged config before any job.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bnstudy.base import normalisers
from bnstudy.base.datasets import DIGITS_CLASS_COUNTS, FASHION, FASHION_TEST_CLASS_ROWS, SHAPES, data_config


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
    if error.validator == "not" and list(error.validator_value) == ["required"]:  # a key this variant forbids
        why = error.schema.get("description")
        return f"config error: {key_path(path + [error.validator_value['required'][0]])}: not allowed here" + (
            f" ({why})" if why else ""
        )
    if error.validator == "uniqueItems":
        return f"config error: {key_path(path)}: duplicate values in {error.instance}"
    return f"config error: {key_path(path)}: {error.message}"


def non_finite(node, path=()):
    """The key path (a tuple) of the first NaN or infinite number in ``node``, or None."""
    if isinstance(node, float) and not math.isfinite(node):
        return path
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        found = non_finite(value, path + (key,))
        if found is not None:
            return found
    return None


def load_schema(path: str | Path) -> dict:
    """The config schema: the base file at ``path`` (the sections every study shares) with each
    study's section from its folder (``studies/<name>/schema.yaml``, :func:`bnstudy.base.catalogue.with_study_schemas`),
    its normaliser lists filled from the registry. The catalogue is looked up by name, as in
    :func:`study_checks`: no rule script that reads a config through this module takes it among its
    code inputs, so adding a study re-runs none of them (an import statement here re-ran the data
    split, and with it every job, until 2026-12-05)."""
    from bnstudy.base.normalisers import fill_schema

    catalogue = importlib.import_module("bnstudy.base.catalogue")
    return fill_schema(catalogue.with_study_schemas(catalogue.read_schema_file(Path(path))))


def validate(config: dict, schema: dict) -> None:
    """Every check a config must pass before any job; raises :class:`ConfigError` with one line
    (``config error: <key>: ...``) for the first failure."""
    import jsonschema

    bad = non_finite(config)
    if bad is not None:
        value = config
        for key in bad:
            value = value[key]
        raise ConfigError(f"config error: {key_path(bad)}: {value} is not a finite number")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is not None:
        raise ConfigError(describe_schema_error(error))
    check_cross_fields(config)


def _approximate_mode(class_counts: np.ndarray, n_draws: int, rng: np.random.RandomState) -> np.ndarray:
    """scikit-learn's stratified allocation (``sklearn.utils.extmath._approximate_mode``):
    the floors of the proportional shares, then one more row for the largest
    remainders, ties broken by ``rng``."""
    continuous = class_counts / class_counts.sum() * n_draws
    floored = np.floor(continuous)
    need_to_add = int(n_draws - floored.sum())
    if need_to_add > 0:
        remainder = continuous - floored
        for value in np.sort(np.unique(remainder))[::-1]:
            (inds,) = np.where(remainder == value)
            add_now = min(len(inds), need_to_add)
            floored[rng.choice(inds, size=add_now, replace=False)] += 1
            need_to_add -= add_now
            if need_to_add == 0:
                break
    return floored.astype(int)


def split_class_counts(test_size: int, seed: int) -> tuple[list[int], list[int]]:
    """Rows per class of the training and the test half of the digits split.

    The same allocation as the split job's stratified ``train_test_split`` (train
    share first, then the test share of what is left, both from
    ``RandomState(seed)``), computed without importing scikit-learn (2.6 s at
    every Snakemake start); ``tests/base/test_config.py`` checks it against the real
    split.
    """
    counts = np.array(DIGITS_CLASS_COUNTS)
    n_train = int(counts.sum()) - test_size
    rng = np.random.RandomState(seed)
    train = _approximate_mode(counts, n_train, rng)
    test = _approximate_mode(counts - train, test_size, rng)
    return train.tolist(), test.tolist()


@dataclass(frozen=True)
class Parts:
    """The sizes of a config's training and test parts, known without reading the data:
    ``train_rows``, ``test_class_rows`` (per class), and how messages name their source."""

    train_rows: int
    test_class_rows: tuple[int, ...]
    test_source: str  # e.g. "split.test_size 899"
    train_source: str  # e.g. "1797 - split.test_size 899"
    class_word: str = "digit"  # how a message names a class: "digit 8", "class 8"

    @property
    def test_rows(self) -> int:
        return sum(self.test_class_rows)


def parts(config: dict) -> Parts:
    """:class:`Parts` of the config's data set; raises :class:`ConfigError` for ``split`` and ``data``
    keys that do not fit it (the digits need ``split.test_size``; Fashion-MNIST's test part is
    fixed, and its training subset and validation split must fit in its 60,000 training images)."""
    data = data_config(config)
    if data["name"] == FASHION:
        if "test_size" in config["split"]:
            raise ConfigError(
                "config error: split.test_size: Fashion-MNIST's test part is its 10,000 test images; "
                "leave test_size out (data.train_size sets the training rows, data.test_size a test subset)"
            )
        total = SHAPES[FASHION].train_rows
        if data["train_size"] + data["validation_size"] > total:
            raise ConfigError(
                f"config error: data.validation_size: {data['validation_size']} + data.train_size "
                f"{data['train_size']} exceed the {total} training images"
            )
        classes = SHAPES[FASHION].classes
        test = int(data.get("test_size", FASHION_TEST_CLASS_ROWS * classes))  # the schema: a multiple of 10
        return Parts(
            data["train_size"],
            (test // classes,) * classes,
            "Fashion-MNIST's test set" if "test_size" not in data else "data.test_size",
            "data.train_size",
            "class",
        )
    if "test_size" not in config["split"]:
        raise ConfigError("config error: split.test_size: required key is missing (the digits' test half)")
    test_size = config["split"]["test_size"]
    _, test_counts = split_class_counts(test_size, config["split"]["seed"])
    return Parts(
        sum(DIGITS_CLASS_COUNTS) - test_size,
        tuple(test_counts),
        f"split.test_size {test_size}",
        f"{sum(DIGITS_CLASS_COUNTS)} - split.test_size {test_size}",
    )


def _check_network(config: dict) -> None:
    """Group norm's groups against the widths (or channels), and the convolutional network's kinds,
    residual connections and images."""
    net = config["network"]
    groups = net["groups"]
    conv = net.get("kind", "mlp") == "conv"
    widths = [layer["channels"] for layer in net["layers"]] if conv else net["hidden"]
    what = "channel count" if conv else "hidden width"
    if "groupnorm" in config["normalisers"]:
        for width in widths:
            if width % groups:
                raise ConfigError(f"config error: network.groups: {groups} groups do not divide the {what} {width}")
            if not conv and width // groups < 2:
                raise ConfigError(
                    f"config error: network.groups: {groups} groups leave one feature per group "
                    f"in width {width}; group norm would output a constant"
                )
    if not conv:
        return
    missing = [n for n in config["normalisers"] if n not in normalisers.CONV_NAMES]
    if missing:
        raise ConfigError(
            f"config error: normalisers: {missing} have no form in the convolutional network (network.kind conv)"
        )
    check_skips(net["layers"], "network.layers")


def check_skips(layers: list, where: str) -> None:
    """A convolution's skip names an earlier layer of the same shape: same channels, every stride
    between them 1 (``where``: the layers' config key, for the error line)."""
    for i, layer in enumerate(layers):
        k = layer.get("skip")
        if k is None:
            continue
        if k >= i:
            raise ConfigError(f"config error: {where}[{i}].skip: {k} is not an earlier layer")
        if layers[k]["channels"] != layer["channels"] or any(x.get("stride", 1) != 1 for x in layers[k + 1 : i + 1]):
            raise ConfigError(f"config error: {where}[{i}].skip: layer {k}'s output has another shape")


def check_cross_fields(config: dict) -> None:
    """Rules between keys: the network's and the training batches', then each study's
    (:func:`study_checks`); raises :class:`ConfigError`."""
    part = parts(config)
    _check_network(config)
    # A training batch must fit in the training half.
    n_train = part.train_rows
    training = [(f"grid.batch_sizes[{i}]", b) for i, b in enumerate(config["grid"]["batch_sizes"])]
    training.append(("dependence.batch_size", config["dependence"]["batch_size"]))
    training += [
        (f"sorted_training.batch_sizes[{i}]", b) for i, b in enumerate(config["sorted_training"]["batch_sizes"])
    ]
    for key, b in training:
        if b > n_train:
            raise ConfigError(f"config error: {key}: {b} exceeds the {n_train} training rows ({part.train_source})")
    _check_rates(config["grid"])
    _check_steps(config["grid"], n_train)
    _check_follow_up(config["grid"])
    for check in study_checks(config):
        check(config, part)
    # last: a study's own message names the cause (serving.normaliser: batchrenorm is not one of
    # normalisers) where the families would only see a family no study forms
    importlib.import_module("bnstudy.base.familycheck").check_families(config)


def _check_rates(grid: dict) -> None:
    """Each ``grid.lr_by_batch_size`` and ``grid.epochs_by_batch_size`` entry names a grid batch size,
    and each batch size at most once in each."""
    for key, what in (("lr_by_batch_size", "a rate"), ("epochs_by_batch_size", "its epochs")):
        seen: set[int] = set()
        for i, row in enumerate(grid.get(key, [])):
            b = row["batch_size"]
            if b not in grid["batch_sizes"]:
                raise ConfigError(
                    f"config error: grid.{key}[{i}].batch_size: {b} is not one of "
                    f"grid.batch_sizes {grid['batch_sizes']}"
                )
            if b in seen:
                raise ConfigError(f"config error: grid.{key}[{i}].batch_size: {b} is given {what} twice")
            seen.add(b)


def _check_follow_up(grid: dict) -> None:
    """``grid.follow_up_seeds`` names grid seeds, and whole seed blocks of them (a follow-up study's
    job takes a block's networks together, so part of a block cannot be left out)."""
    follow_up = grid.get("follow_up_seeds")
    if follow_up is None:
        return
    for i, s in enumerate(follow_up):
        if s not in grid["seeds"]:
            raise ConfigError(f"config error: grid.follow_up_seeds[{i}]: {s} is not one of grid.seeds")
    size = grid["seed_block"]  # block k holds the seeds k*size .. k*size + size - 1 (nets.weights.blocks)
    for k in sorted({s // size for s in follow_up}):
        block = {s for s in grid["seeds"] if s // size == k}
        if not block <= set(follow_up):
            raise ConfigError(
                f"config error: grid.follow_up_seeds: takes part of the seed block {k * size}-{k * size + size - 1} "
                f"(grid.seed_block {size}): add seeds {sorted(block - set(follow_up))} or leave the block out"
            )


def _check_steps(grid: dict, n_train: int) -> None:
    """With ``grid.epochs_by_batch_size``, a smaller batch still takes more optimiser steps than a larger
    one (the paper reads the batch size's effect as that of more and noisier steps)."""
    if not grid.get("epochs_by_batch_size"):
        return
    epochs = {int(r["batch_size"]): int(r["epochs"]) for r in grid["epochs_by_batch_size"]}
    steps = [(b, epochs.get(b, grid["epochs"]) * (n_train // b)) for b in sorted(grid["batch_sizes"])]
    for (b, s), (b2, s2) in zip(steps, steps[1:]):
        if s <= s2:
            raise ConfigError(
                f"config error: grid.epochs_by_batch_size: batch {b} takes {s} steps, not more than batch {b2}'s {s2}"
            )


def study_checks(config: dict) -> list:
    """The checks of the studies ``config`` runs (:mod:`bnstudy.base.catalogue`: each study's
    ``bnstudy.studies.<name>.checks.check(config, part)``), in the paper's order.

    Looked up by name: the config checks change no output, so no rule whose script reads a
    config through this module takes the catalogue or a study's checks among its code inputs
    (``bnstudy.pipeline.codedeps`` follows import statements), and adding a study re-runs none of them.
    """
    return importlib.import_module("bnstudy.base.catalogue").checks(config)


# ---- reading a config file ------------------------------------------------------


def load_file(path: str | Path) -> dict:
    """The mapping in the YAML (or JSON) file at ``path``, read strictly.

    Refused with a one-line :class:`ConfigError` naming the file and line: a YAML
    syntax error, an empty file or one whose top level is not a mapping, and a key
    given twice in one mapping (PyYAML, and so Snakemake, silently keep the later
    value). Snakemake itself reads ``--configfile`` files before the Snakefile runs
    and reports a syntax error without file or line; ``python -m bnstudy.base.config
    check FILE`` (run by ``make plan`` and ``make paper CONFIG=FILE``) says where.
    """
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConfigError(
                    f"config error: {path}:{key_node.start_mark.line + 1}: key '{key}' is given twice "
                    f"(first on line {seen[key] + 1}); YAML keeps only the later value"
                )
            seen[key] = key_node.start_mark.line
        return loader.construct_mapping(node, deep=deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"config error: {path}: cannot be read ({e.__class__.__name__}: {e})") from None
    try:
        data = yaml.load(text, Loader=StrictLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = " ".join(str(e.problem or e.context or "not valid YAML").split())
        raise ConfigError(f"config error: {where}: YAML syntax error: {problem}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"config error: {path}: not valid YAML ({' '.join(str(e).split())})") from None
    if data is None:
        raise ConfigError(f"config error: {path}: the file is empty; a config is a YAML mapping of keys")
    if not isinstance(data, dict):
        raise ConfigError(f"config error: {path}:1: the top level is a {type(data).__name__}, not a mapping of keys")
    return data


def main(argv=None) -> int:
    """``python -m bnstudy.base.config check FILE...``: each file read strictly and checked against the schema."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m bnstudy.base.config", description=main.__doc__)
    parser.add_argument("command", choices=["check"])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument(
        "--schema", type=Path, default=Path(__file__).resolve().parents[3] / "workflow/schemas/config.schema.yaml"
    )
    args = parser.parse_args(argv)
    schema = load_schema(args.schema)
    for path in args.files:
        try:
            validate(load_file(path), schema)
        except ConfigError as e:
            message = str(e)
            print(message if str(path) in message else f"{message} [{path}]", file=sys.stderr)
            return 1
        print(f"{path}: valid")
    return 0


if __name__ == "__main__":
    # run as the package's module, not as __main__: the studies' checks raise
    # bnstudy.base.config.ConfigError, which a __main__ copy of this module would not catch
    from bnstudy.base.config import main as package_main

    raise SystemExit(package_main())
