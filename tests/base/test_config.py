"""Bad configs fail before any job runs, fast, with one line naming the key."""

import copy
import re

import pytest
import yaml

from bnstudy.base.config import (
    DIGITS_CLASS_COUNTS,
    ConfigError,
    check_cross_fields,
    load_schema,
    split_class_counts,
    validate,
)
from conftest import ROOT, snakemake


def mutate(cfg, path, value):
    cfg = copy.deepcopy(cfg)
    *parents, last = path
    node = cfg
    for p in parents:
        node = node[p]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return cfg


DELETE = object()
# network.kind conv: every study trains this network (two convolutions, the second adding the first's output)
CONV_NETWORK = {
    "kind": "conv",
    "layers": [{"channels": 8, "stride": 2}, {"channels": 8, "skip": 0}],
    "groups": 4,
    "eps": 1.0e-5,
    "momentum": 0.1,
}

BAD = {
    "unknown normaliser": (["normalisers"], ["none", "batchnorn"], "normalisers[1]"),
    "batch size below 2": (["grid", "batch_sizes"], [1, 16], "grid.batch_sizes[0]"),
    "groups do not divide width": (["network", "groups"], 5, "network.groups"),
    "one feature per group": (["network", "groups"], 128, "network.groups"),
    "epochs below 1": (["grid", "epochs"], 0, "grid.epochs"),
    "duplicate seeds": (["grid", "seeds"], [0, 1, 1], "grid.seeds"),
    "one seed: no interval over networks": (["grid", "seeds"], [0], "grid.seeds"),
    "missing key": (["grid", "lr"], DELETE, "grid.lr"),
    "misspelled key": (["grid", "seedz"], [0], "grid"),
    "wrong type": (["grid", "epochs"], "twenty", "grid.epochs"),
    "wrong type of a list item": (["grid", "seeds"], [0, "one"], "grid.seeds[1]"),
    "momentum out of range": (["network", "momentum"], 1.5, "network.momentum"),
    "test half too small for one-class batches": (["split", "test_size"], 100, "companions.one_class_batch_size"),
    "examples per class beyond a test class": (
        ["companions", "examples_per_class"],
        88,
        "companions.examples_per_class",
    ),
    "grid batch beyond the training rows": (["grid", "batch_sizes"], [4, 899], "grid.batch_sizes[1]"),
    "dependence batch beyond the training rows": (["dependence", "batch_size"], 899, "dependence.batch_size"),
    "sorted batch beyond the training rows": (
        ["sorted_training", "batch_sizes"],
        [899],
        "sorted_training.batch_sizes[0]",
    ),
    "companion batch beyond the test half": (["companions", "batch_sizes"], [2, 900], "companions.batch_sizes"),
    "running-stats batch beyond its rows": (["running_stats", "batch_sizes"], [8, 513], "running_stats.batch_sizes"),
    "sort feature beyond the features": (["running_stats", "sort_feature"], 16, "running_stats.sort_feature"),
}


@pytest.fixture(scope="module")
def schema():
    return load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def validation_error(cfg, schema):
    try:
        validate(cfg, schema)
    except ConfigError as e:
        return str(e)
    return None


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_value_is_rejected_with_one_line_naming_the_key(case, test_config, schema):
    """Every bad value, through the workflow's own check (bnstudy.base.config.validate)."""
    path, value, key = BAD[case]
    assert validation_error(test_config, schema) is None
    message = validation_error(mutate(test_config, path, value), schema)
    assert message is not None, f"{case} passed"
    assert message.startswith(f"config error: {key}"), message
    assert "\n" not in message


# One case per kind of check (schema, cross-field), end to end: Snakemake stops
# before any job with the validator's line as its last word.
END_TO_END = ["misspelled key", "wrong type of a list item", "grid batch beyond the training rows"]


@pytest.mark.slow
@pytest.mark.parametrize("case", END_TO_END)
def test_bad_config_fails_fast_with_one_line_naming_the_key(case, test_config, schema, tmp_path):
    path, value, key = BAD[case]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(mutate(test_config, path, value)))
    result = snakemake("-n", "--configfile", str(bad), timeout=120)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("config error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0] == result.stderr.strip().splitlines()[-1], "the error line is the last word"
    assert errors[0] == f"{validation_error(mutate(test_config, path, value), schema)} [{bad}]"
    assert errors[0].startswith(f"config error: {key}"), errors[0]
    assert "Traceback" not in result.stderr
    assert result.cpu_seconds < 10, f"took {result.cpu_seconds:.1f} CPU s"  # planning only, no job


def test_every_bad_case_names_a_key_of_the_config(test_config):
    """The BAD table itself: each case changes a key the test config has (or deletes one)."""
    for case, (path, _, _) in BAD.items():
        node = test_config
        for p in path[:-1]:
            node = node[p]
        assert path[-1] in node or case == "misspelled key", case


@pytest.mark.slow
def test_good_test_config_plans_without_error():
    result = snakemake("-n", "--configfile", "config/test.yaml", timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_paper_config_plans_every_grid_training_and_the_dependence_network():
    """720 grid networks (6 normalisers x 6 batch sizes x 20 seeds, one block of 5 seeds per
    file) + study 1's networks, one per seed, in one file."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    result = snakemake("-n", "--forceall", "--quiet", "rules", "--summary", timeout=120)
    planned = [line.split("\t")[0] for line in result.stdout.splitlines()]
    grid = [p for p in planned if p.startswith("results/runs/grid/") and p.endswith(".safetensors")]
    dependence = [p for p in planned if p.startswith("results/runs/dependence/") and p.endswith(".safetensors")]
    expected = len(cfg["normalisers"]) * len(cfg["grid"]["batch_sizes"]) * len(cfg["grid"]["seeds"])
    assert expected == 720
    seeds = [re.search(r"/seeds(\d+)-(\d+)\.safetensors$", p).groups() for p in grid]
    assert sum(min(int(hi), max(cfg["grid"]["seeds"])) - int(lo) + 1 for lo, hi in seeds) == expected
    assert dependence == ["results/runs/dependence/networks.safetensors"]
    assert len(cfg["dependence"]["seeds"]) >= 5
    # the follow-up studies take the blocks of grid.follow_up_seeds only (seeds 0-4), the batch-size
    # study's remedies every block
    follow = cfg["grid"]["follow_up_seeds"]
    probes = [p for p in planned if p.startswith("results/companions/grid/")]
    keep = [p for p in planned if p.startswith("results/runs/keep/") and p.endswith(".safetensors")]
    remedy_files = [p for p in planned if p.startswith("results/batch_size/remedies/")]
    remedies = {re.search(r"_seeds(\d+-\d+)", p).group(1) for p in remedy_files}
    assert probes and all(p.endswith(f"_seeds{min(follow)}-{max(follow)}.csv") for p in probes), probes
    assert keep and all(p.endswith(f"/seeds{min(follow)}-{max(follow)}.safetensors") for p in keep), keep
    assert len(remedies) == len(cfg["grid"]["seeds"]) // cfg["grid"]["seed_block"] > 1


@pytest.mark.parametrize(
    "follow_up, message",
    [
        ([0, 1, 2, 3, 4], None),
        ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], None),
        ([0, 1, 2], "grid.follow_up_seeds: takes part of the seed block 0-4 (grid.seed_block 5): add seeds [3, 4]"),
        ([0, 1, 2, 3, 4, 99], "grid.follow_up_seeds[5]: 99 is not one of grid.seeds"),
    ],
)
def test_follow_up_seeds_are_whole_seed_blocks_of_the_grid(follow_up, message):
    from bnstudy.base.config import ConfigError

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["grid"] |= {"seeds": list(range(20)), "seed_block": 5, "follow_up_seeds": follow_up}
    if message is None:
        check_cross_fields(cfg)
        return
    with pytest.raises(ConfigError) as err:
        check_cross_fields(cfg)
    assert str(err.value).startswith(f"config error: {message}") and "\n" not in str(err.value)


# ---- cross-field checks: every one, at its boundary ----------------------------
# Each case is (path, value that just passes, value that just fails, key named).
# The test config: hidden [128, 128], 899 test rows (smallest test class: digit 8,
# 87 rows), 898 training rows, running_stats rows 512 and 16 features.

BOUNDARIES = {
    "groups divide every width": (["network", "groups"], 64, 5, "network.groups"),
    "two features per group": (["network", "groups"], 64, 128, "network.groups"),
    "sort feature within features": (["running_stats", "sort_feature"], 15, 16, "running_stats.sort_feature"),
    "running-stats batch within rows": (
        ["running_stats", "batch_sizes"],
        [8, 512],
        [8, 513],
        "running_stats.batch_sizes",
    ),
    "companion batch within the test half": (
        ["companions", "batch_sizes"],
        [2, 899],
        [2, 900],
        "companions.batch_sizes",
    ),
    "examples per class within the smallest test class": (
        ["companions", "examples_per_class"],
        87,
        88,
        "companions.examples_per_class",
    ),
    "one-class batch within the smallest test class": (
        ["companions", "one_class_batch_size"],
        87,
        88,
        "companions.one_class_batch_size",
    ),
    "grid batch within the training rows": (
        ["grid", "batch_sizes"],
        [4, 16, 898],
        [4, 16, 899],
        "grid.batch_sizes[2]",
    ),
    "dependence batch within the training rows": (["dependence", "batch_size"], 898, 899, "dependence.batch_size"),
    "sorted-training batch within the training rows": (
        ["sorted_training", "batch_sizes"],
        [16, 898],
        [16, 899],
        "sorted_training.batch_sizes[1]",
    ),
}


def cross_field_error(cfg):
    try:
        check_cross_fields(cfg)
    except ConfigError as e:
        return str(e)
    return None


@pytest.mark.parametrize("case", sorted(BOUNDARIES))
def test_cross_field_check_accepts_its_boundary_and_rejects_one_past_it(case, test_config):
    path, ok, bad, key = BOUNDARIES[case]
    assert cross_field_error(test_config) is None
    assert cross_field_error(mutate(test_config, path, ok)) is None, f"{case}: {ok} must pass"
    message = cross_field_error(mutate(test_config, path, bad))
    assert message is not None, f"{case}: {bad} must fail"
    assert message.startswith(f"config error: {key}: "), message
    assert "\n" not in message


def test_cross_field_messages_name_the_values():
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    assert cross_field_error(mutate(cfg, ["network", "groups"], 5)) == (
        "config error: network.groups: 5 groups do not divide the hidden width 128"
    )
    assert cross_field_error(mutate(cfg, ["running_stats", "sort_feature"], 16)) == (
        "config error: running_stats.sort_feature: 16 >= features 16"
    )
    assert cross_field_error(mutate(cfg, ["running_stats", "batch_sizes"], [513])) == (
        "config error: running_stats.batch_sizes: 513 exceeds rows 512"
    )
    assert cross_field_error(mutate(cfg, ["companions", "batch_sizes"], [900, 2])) == (
        "config error: companions.batch_sizes: 900 is larger than the test half (split.test_size 899)"
    )
    assert cross_field_error(mutate(cfg, ["companions", "one_class_batch_size"], 88)) == (
        "config error: companions.one_class_batch_size: 88 exceeds the 87 test rows of the smallest "
        "class (digit 8) at split.test_size 899"
    )
    assert cross_field_error(mutate(cfg, ["companions", "grid_batches_per_example"], 11)) == (
        "config error: companions.grid_batches_per_example: 11 exceeds companions.batches_per_example (10): "
        "the grid's networks are probed with the first of the batches drawn"
    )
    assert cross_field_error(mutate(cfg, ["dependence", "batch_size"], 899)) == (
        "config error: dependence.batch_size: 899 exceeds the 898 training rows (1797 - split.test_size 899)"
    )


def test_group_checks_apply_to_every_width_and_only_with_group_norm(test_config):
    cfg = mutate(test_config, ["network", "hidden"], [128, 96])
    assert cross_field_error(mutate(cfg, ["network", "groups"], 32)) is None  # 4 and 3 per group
    assert cross_field_error(mutate(cfg, ["network", "groups"], 64)) == (
        "config error: network.groups: 64 groups do not divide the hidden width 96"
    )
    assert cross_field_error(mutate(mutate(cfg, ["network", "hidden"], [128, 64]), ["network", "groups"], 64)) == (
        "config error: network.groups: 64 groups leave one feature per group in width 64; "
        "group norm would output a constant"
    )
    no_gn = mutate(test_config, ["normalisers"], ["none", "batchnorm", "batchrenorm"])  # renorm_ramp pairs these
    assert cross_field_error(mutate(no_gn, ["network", "groups"], 5)) is None
    assert cross_field_error(mutate(no_gn, ["network", "groups"], 128)) is None


def test_every_list_entry_is_checked_not_only_the_first(test_config):
    for path, key in [
        (["running_stats", "batch_sizes"], "running_stats.batch_sizes"),
        (["companions", "batch_sizes"], "companions.batch_sizes"),
        (["grid", "batch_sizes"], "grid.batch_sizes[2]"),
        (["sorted_training", "batch_sizes"], "sorted_training.batch_sizes[2]"),
    ]:
        message = cross_field_error(mutate(test_config, path, [2, 4, 5000]))
        assert message is not None and message.startswith(f"config error: {key}"), (path, message)


@pytest.mark.parametrize("test_size,seed", [(100, 0), (899, 0), (899, 3), (1000, 1), (1697, 2), (555, 7)])
def test_split_class_counts_are_those_of_the_real_stratified_split(test_size, seed):
    """The config check's class counts equal the split job's (scikit-learn) for the digits."""
    import numpy as np
    from sklearn.model_selection import train_test_split

    y = np.repeat(np.arange(10), DIGITS_CLASS_COUNTS)
    train, test = train_test_split(np.arange(len(y)), test_size=test_size, stratify=y, random_state=seed, shuffle=True)
    expected = (np.bincount(y[train], minlength=10).tolist(), np.bincount(y[test], minlength=10).tolist())
    assert split_class_counts(test_size, seed) == expected
    assert sum(expected[1]) == test_size


def test_digits_class_counts_are_those_of_scikit_learn():
    import numpy as np
    from sklearn.datasets import load_digits

    assert tuple(np.bincount(load_digits().target).tolist()) == DIGITS_CLASS_COUNTS


def test_split_class_counts_by_hand():
    # 100 test rows: 10 per class (each class's share 100 * c / 1797 rounds to 10)
    assert split_class_counts(100, 0)[1] == [10] * 10
    assert split_class_counts(100, 0)[0] == [c - 10 for c in DIGITS_CLASS_COUNTS]
    # 899 test rows (the configs' split): digit 8 (174 rows) keeps 87 of them for the test half
    assert split_class_counts(899, 0)[1] == [89, 91, 88, 92, 91, 91, 91, 89, 87, 90]


@pytest.mark.slow
def test_test_size_100_is_rejected_before_any_job_with_one_line(test_config, tmp_path):
    """100 test rows pass the schema but leave 10 rows per class: the one-class batches of 16 cannot be drawn."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(mutate(test_config, ["split", "test_size"], 100)))
    result = snakemake("-n", "--configfile", str(bad), timeout=60)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("config error:")]
    assert errors == [
        (
            "config error: companions.one_class_batch_size: 16 exceeds the 10 test rows of the smallest class "
            f"(digit 0) at split.test_size 100 [{bad}]"
        )
    ], result.stderr
    assert "Traceback" not in result.stderr


# ---- one-line messages, by value ------------------------------------------------


@pytest.mark.parametrize(
    "parts, text",
    [
        (["grid", "seeds", 2], "grid.seeds[2]"),
        (["grid"], "grid"),
        ([0, "a"], "[0].a"),
        (["a", 1, 2, "b"], "a[1][2].b"),
        ([], "(top level)"),
    ],
)
def test_key_path_by_hand(parts, text):
    from bnstudy.base.config import key_path

    assert key_path(parts) == text


def schema_error(schema, instance):
    import jsonschema

    return jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(instance))


def test_describe_schema_error_one_line_per_kind():
    from bnstudy.base.config import describe_schema_error

    obj = {
        "type": "object",
        "properties": {
            "grid": {
                "type": "object",
                "required": ["lr"],
                "additionalProperties": False,
                "properties": {
                    "lr": {"type": "number"},
                    "seeds": {"type": "array", "uniqueItems": True, "items": {"type": "integer", "minimum": 0}},
                },
            }
        },
    }
    assert describe_schema_error(schema_error(obj, {"grid": {}})) == ("config error: grid.lr: required key is missing")
    assert describe_schema_error(schema_error(obj, {"grid": {"lr": 1, "seedz": [0]}})) == (
        "config error: grid: Additional properties are not allowed ('seedz' was unexpected) (misspelled key?)"
    )
    assert describe_schema_error(schema_error(obj, {"grid": {"lr": 1, "seeds": [0, 1, 1]}})) == (
        "config error: grid.seeds: duplicate values in [0, 1, 1]"
    )
    assert describe_schema_error(schema_error(obj, {"grid": {"lr": 1, "seeds": [0, -1]}})) == (
        "config error: grid.seeds[1]: -1 is less than the minimum of 0"
    )
    assert describe_schema_error(schema_error(obj, {"grid": {"lr": "x"}})) == (
        "config error: grid.lr: 'x' is not of type 'number'"
    )


def test_describe_schema_error_without_a_quoted_key():
    """A required-key message without quotes is used whole."""
    from types import SimpleNamespace

    from bnstudy.base.config import describe_schema_error

    error = SimpleNamespace(absolute_path=["grid"], validator="required", message="lr missing")
    assert describe_schema_error(error) == "config error: grid.lr missing: required key is missing"
    error = SimpleNamespace(absolute_path=[], validator="required", message="'a' is a required property")
    assert describe_schema_error(error) == "config error: a: required key is missing"


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("test_size", [102, 104, 112, 114, 333])
def test_split_class_counts_tie_breaks_follow_the_split_seed(test_size, seed):
    """Sizes whose allocation has tied remainders: the seed decides, as in the real split."""
    test_split_class_counts_are_those_of_the_real_stratified_split(test_size, seed)


def test_split_class_counts_depend_on_the_seed_where_remainders_tie():
    assert len({tuple(split_class_counts(102, seed)[1]) for seed in range(4)}) > 1


def test_approximate_mode_is_scikit_learns_on_any_counts():
    """Called twice on one generator (train share, then test share), as the split does."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from sklearn.utils.extmath import _approximate_mode as sk_mode

    from bnstudy.base.config import _approximate_mode

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.integers(2, 40), min_size=2, max_size=8), st.floats(0.05, 0.95), st.integers(0, 2**31))
    def check(counts, share, seed):
        import numpy as np

        counts = np.array(counts)
        n = max(1, min(int(share * counts.sum()), counts.sum() - 1))
        ours_rng, sk_rng = np.random.RandomState(seed), np.random.RandomState(seed)
        a = _approximate_mode(counts, n, ours_rng)
        assert a.tolist() == sk_mode(counts, n, sk_rng).tolist()
        assert a.sum() == n
        m = int(counts.sum() - n) // 2 + 1
        assert _approximate_mode(counts, m, ours_rng).tolist() == sk_mode(counts, m, sk_rng).tolist()

    check()


def test_approximate_mode_draws_nothing_when_the_shares_are_whole():
    """No tie to break: the generator is left as it was for the next allocation."""
    import numpy as np
    from sklearn.utils.extmath import _approximate_mode as sk_mode

    from bnstudy.base.config import _approximate_mode

    for seed in range(20):
        ours_rng, sk_rng = np.random.RandomState(seed), np.random.RandomState(seed)
        assert _approximate_mode(np.array([2, 2]), 2, ours_rng).tolist() == [1, 1]
        sk_mode(np.array([2, 2]), 2, sk_rng)
        ours = _approximate_mode(np.array([1, 1, 1, 1, 1]), 2, ours_rng)
        assert ours.tolist() == sk_mode(np.array([1, 1, 1, 1, 1]), 2, sk_rng).tolist()


def test_accumulation_sizes_are_grid_batch_sizes_and_micro_batches_divide_the_step(test_config):
    assert cross_field_error(test_config) is None
    assert cross_field_error(mutate(test_config, ["accumulation", "micro_batches"], [4, 8])) == (
        "config error: accumulation.micro_batches[1]: 8 is not one of grid.batch_sizes"
    )
    assert cross_field_error(mutate(test_config, ["accumulation", "batch_size"], 8)) == (
        "config error: accumulation.batch_size: 8 is not one of grid.batch_sizes"
    )
    wide = mutate(test_config, ["grid", "batch_sizes"], [4, 6, 12, 16])
    assert cross_field_error(mutate(wide, ["accumulation", "micro_batches"], [4])) is None
    assert cross_field_error(mutate(wide, ["accumulation", "micro_batches"], [4, 6])) == (
        "config error: accumulation.micro_batches[1]: 6 does not divide accumulation.batch_size 16 "
        "into two or more micro-batches"
    )
    assert cross_field_error(mutate(wide, ["accumulation", "micro_batches"], [16])).startswith(
        "config error: accumulation.micro_batches[0]: 16 does not divide"
    )
    for name in ("ghostbatchnorm", "batchrenorm", "groupnorm"):  # in the test grid, but not batch norm
        message = cross_field_error(mutate(test_config, ["accumulation", "normaliser"], name))
        assert message == f"config error: accumulation.normaliser: {name} is not a grid normaliser computing batch norm"
    from bnstudy.base.config import parts
    from bnstudy.studies.accumulation.checks import check  # batch norm not trained by the grid (others fire first)

    with pytest.raises(ConfigError, match="accumulation.normaliser: batchnorm is not a grid normaliser"):
        check(mutate(test_config, ["normalisers"], ["none", "layernorm"]), parts(test_config))


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("source_batch_size", 8, "config error: finetune.source_batch_size: 8 is not one of grid.batch_sizes"),
        ("batch_size", 899, "config error: finetune.batch_size: 899 is larger than the training half (898 rows)"),
        ("every", 21, "config error: finetune.every: 21 is more than finetune.steps 20"),
        ("normalisers", ["none", "layernorm"], "config error: finetune: batchnorm (the fine-tuned networks) is not"),
    ],
)
def test_finetune_config_cross_checks(test_config, key, value, message):
    from bnstudy.base.config import ConfigError, check_cross_fields

    check_cross_fields(test_config)
    test_config["finetune"]["batch_size"] = 898  # the whole training half is one batch: allowed
    test_config["finetune"]["every"] = test_config["finetune"]["steps"]  # measured once, at the end: allowed
    check_cross_fields(test_config)
    if key == "normalisers":  # lr_sweep needs batch norm too and is checked first: this check alone
        from bnstudy.base.config import parts
        from bnstudy.studies.finetune.checks import check

        def check_cross_fields(config):
            check(config, parts(config))

        test_config["normalisers"] = value
    else:
        test_config["finetune"][key] = value
    with pytest.raises(ConfigError) as e:
        check_cross_fields(test_config)
    assert str(e.value).startswith(message), str(e.value)


def _conv_config(test_config, **network):
    """The test config with every study on the convolutional network: no normaliser without a 2-d form."""
    cfg = copy.deepcopy(test_config)
    cfg["normalisers"] = [n for n in cfg["normalisers"] if n != "rmsnorm"]
    cfg["network"] = copy.deepcopy(CONV_NETWORK) | network
    return cfg


CONV_BAD = {
    "hidden widths given to the convolutional network": ({"hidden": [16, 16]}, "network.hidden: not allowed here"),
    "no layers": ({"layers": DELETE}, "network.layers: required key is missing"),
    "a skip to a later layer": (
        {"layers": [{"channels": 8}, {"channels": 8, "skip": 1}]},
        "network.layers[1].skip: 1 is not an earlier layer",
    ),
    "a skip across a stride": (
        {"layers": [{"channels": 8}, {"channels": 8, "stride": 2, "skip": 0}]},
        "network.layers[1].skip: layer 0's output has another shape",
    ),
    "groups that do not divide the channels": ({"groups": 3}, "network.groups: 3 groups do not divide the channel"),
    "a stride of 3": ({"layers": [{"channels": 8, "stride": 3}]}, "network.layers[0].stride"),
}


def test_the_convolutional_network_as_the_studys_network_is_checked_like_the_mlp(test_config, schema):
    """network.kind conv: the config is valid as given; each bad value is refused in one line naming
    its key; a normaliser without a 2-d form, and the MLP's keys on it (or its keys on the MLP), too."""
    assert validation_error(_conv_config(test_config), schema) is None
    for case, (network, want) in CONV_BAD.items():
        cfg = _conv_config(test_config)
        for key, value in network.items():
            if value is DELETE:
                del cfg["network"][key]
            else:
                cfg["network"][key] = value
        message = validation_error(cfg, schema)
        assert message is not None and message.startswith(f"config error: {want}"), (case, message)
        assert "\n" not in message
    cfg = _conv_config(test_config)
    cfg["normalisers"].append("rmsnorm")
    assert validation_error(cfg, schema).startswith("config error: normalisers: ['rmsnorm'] have no form")
    mlp = copy.deepcopy(test_config)
    mlp["network"]["layers"] = CONV_NETWORK["layers"]
    assert validation_error(mlp, schema).startswith("config error: network.layers: not allowed here (the MLP")


def test_the_check_command_in_process(tmp_path, capsys):
    """``python -m bnstudy.base.config check``'s main, called in this process (the command-line tests
    start a process): each valid file is said valid on stdout, the first bad one stops with status 1
    and one line on stderr naming it once, and the default schema is the workflow's."""
    from bnstudy.base import config as cfg

    good = ROOT / "config" / "test.yaml"
    assert cfg.main(["check", str(good)]) == 0  # the default --schema: workflow/schemas/config.schema.yaml
    out, err = capsys.readouterr()
    assert out == f"{good}: valid\n" and err == ""
    bad = tmp_path / "bad.yaml"
    text = good.read_text().replace("epochs:", "epochs: -3 #", 1)
    bad.write_text(text)
    assert cfg.main(["check", str(good), str(bad), str(good)]) == 1
    out, err = capsys.readouterr()
    assert out == f"{good}: valid\n"  # the third file is not reached
    assert err.count("\n") == 1 and err.endswith(f"[{bad}]\n") and err.count(str(bad)) == 1
    assert "is less than the minimum of 1" in err
    twice = tmp_path / "twice.yaml"
    twice.write_text(good.read_text() + "compute_threads: 1\n")
    assert cfg.main(["check", str(twice)]) == 1
    _, err = capsys.readouterr()
    assert err.count(str(twice)) == 1 and "given twice" in err  # the file is in the message: not appended again


def test_the_check_command_says_what_it_does_in_its_help(capsys):
    """``python -m bnstudy.base.config --help`` prints its usage with the command's description."""
    from bnstudy.base import config as config_module

    with pytest.raises(SystemExit) as stop:
        config_module.main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m bnstudy.base.config")
    assert "each file read strictly" in " ".join(out.split())  # argparse wraps the description
