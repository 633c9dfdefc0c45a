"""Fashion-MNIST as the configured data set: its config checks, the split of the real files,
the one-line refusals at Snakemake's start, and config/fashion-tiny.yaml end to end against
its committed manifest.

The config checks are unit tests; the rest reads Debian's dataset-fashion-mnist (`make test`
installs it: `make dataset CONFIG=config/fashion-tiny.yaml`) and is marked ``pipeline``. The
tiny config is built once per session, locally, in the background from the end of collection
(``tests/conftest.py``'s ``fashion_tiny``); ``tests/workflow/test_slurm.py`` builds part of it
through SLURM.
"""

from __future__ import annotations

import copy
import subprocess

import numpy as np
import pytest
import yaml

from bnstudy.base import datasets
from bnstudy.base.config import ConfigError, load_schema, parts, validate
from bnstudy.paper.design import PUBLISHED_TASK, published_task_macros
from bnstudy.pipeline import manifest
from conftest import ROOT, snakemake, torch_threads

TINY = "config/fashion-tiny.yaml"
EXPECTED = ROOT / "config" / "expected" / "fashion-tiny.manifest.tsv"


@pytest.fixture
def tiny():
    return yaml.safe_load((ROOT / TINY).read_text())


@pytest.fixture(scope="module")
def schema():
    return load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def _refused(config, schema, message):
    with pytest.raises(ConfigError) as e:
        validate(config, schema)
    assert "\n" not in str(e.value) and message in str(e.value), str(e.value)


# ---- the config ---------------------------------------------------------------------------
def test_tiny_config_is_valid_and_its_parts_are_the_data_sets(tiny, schema):
    validate(tiny, schema)
    part = parts(tiny)
    assert part.train_rows == tiny["data"]["train_size"] == 1500
    # a seeded stratified subset of the 10,000 test images, the same number of each class
    assert part.test_rows == tiny["data"]["test_size"] == 1000 and part.test_class_rows == (100,) * 10
    assert part.test_source == "data.test_size"
    whole = copy.deepcopy(tiny)
    del whole["data"]["test_size"]
    validate(whole, schema)
    assert parts(whole).test_rows == 10000 and parts(whole).test_class_rows == (1000,) * 10
    # every study on the convolutional network (28x28 images), the exact design over a sample of the test rows
    assert datasets.shape(tiny).side == 28 and tiny["network"]["kind"] == "conv" and "conv" not in tiny
    assert tiny["companions"]["exact_companions"] < part.test_rows


def test_digits_configs_name_no_data_set_or_the_digits(schema):
    for name in ("config.yaml", "test.yaml"):
        config = yaml.safe_load((ROOT / "config" / name).read_text())
        assert datasets.data_config(config)["name"] == "digits"
        validate(config | {"data": {"name": "digits"}}, schema)
        assert parts(config).test_rows == config["split"]["test_size"]


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda c: c["split"].update(test_size=899), "config error: split.test_size: Fashion-MNIST's test part"),
        (
            lambda c: c["data"].update(validation_size=58501),
            "config error: data.validation_size: 58501 + data.train_size 1500 exceed the 60000 training images",
        ),
        (
            lambda c: c["data"].update(train_size=99),
            "config error: data.train_size: 99 is less than the minimum of 100",
        ),
        (
            lambda c: c["data"]["sha256"].update(test_labels="abc"),
            "config error: data.sha256.test_labels: 'abc' does not match",
        ),
        (
            lambda c: c["data"]["sha256"].pop("train_images"),
            "config error: data.sha256.train_images: required key is missing",
        ),
        (lambda c: c["data"].pop("directory"), "config error: data.directory: required key is missing"),
        (
            lambda c: c["data"].update(name="mnist"),
            "config error: data.name: 'mnist' is not one of ['digits', 'fashion_mnist']",
        ),
        (
            lambda c: c["data"].update(test_size=10),
            "config error: data.test_size: 10 is less than the minimum of 100",
        ),
        (
            lambda c: c["data"].update(test_size=2005),
            "config error: data.test_size: 2005 is not a multiple of 10",
        ),
        (
            lambda c: c["companions"].update(exact_companions=1001),
            "config error: companions.exact_companions: 1001 exceeds the 1000 test rows (data.test_size)",
        ),
        (
            lambda c: (c["data"].pop("test_size"), c["companions"].update(exact_companions=10001)),
            "config error: companions.exact_companions: 10001 exceeds the 10000 test rows (Fashion-MNIST's test set)",
        ),
        (
            lambda c: c["serving"].update(batch_size=1001),
            "config error: serving.batch_size: 1001 is larger than the test half (data.test_size)",
        ),
        (
            lambda c: c["grid"].update(batch_sizes=[8, 1501]),
            "config error: grid.batch_sizes[1]: 1501 exceeds the 1500 training rows (data.train_size)",
        ),
    ],
)
def test_bad_fashion_configs_are_refused_with_one_line(tiny, schema, change, message):
    config = copy.deepcopy(tiny)
    change(config)
    _refused(config, schema, message)


def test_digits_config_without_test_size_or_with_fashion_keys_is_refused(schema):
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    del config["split"]["test_size"]
    _refused(config, schema, "config error: split.test_size: required key is missing (the digits' test half)")
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    _refused(
        config | {"data": {"name": "digits", "train_size": 500}}, schema, "config error: data: Additional properties"
    )


def test_config_digest_leaves_out_only_a_default_data_section():
    from bnstudy.pipeline.provenance import config_digest

    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    assert config_digest(config | {"data": {"name": "digits"}}) == config_digest(config)
    tiny = yaml.safe_load((ROOT / TINY).read_text())
    assert config_digest(tiny) != config_digest({k: v for k, v in tiny.items() if k != "data"})


def test_a_digits_config_with_the_conv_network_reads_8x8_images(schema):
    """network.kind conv on the digits is a valid config, and the split's rows are images of the
    data set's side, 8."""
    from bnstudy.base import normalisers
    from bnstudy.base.config import check_cross_fields
    from bnstudy.nets import conv_train, data

    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    layers = [{"channels": 4, "stride": 1}, {"channels": 8, "stride": 2}]
    config["network"] = {"kind": "conv", "layers": layers, "groups": 2, "eps": 1e-5, "momentum": 0.1}
    config["normalisers"] = [n for n in config["normalisers"] if n in normalisers.CONV_NAMES]
    validate(config, schema)
    check_cross_fields(config)
    split = data.split_digits(config["split"]["seed"], config["split"]["test_size"])
    assert datasets.shape(config).side == 8
    assert conv_train.image_side(split.x_train) == conv_train.image_side(split.x_test) == 8


# ---- the real files ---------------------------------------------------------------------
def _require_files(data):
    missing = datasets.missing_files(data)
    assert not missing, f"{missing[0]} is missing: make dataset CONFIG={TINY} (apt-get install dataset-fashion-mnist)"


@pytest.mark.pipeline
def test_split_of_the_real_files_is_official_stratified_standardised_and_seeded(tiny):
    from bnstudy.nets import data

    _require_files(tiny["data"])
    split = data.split(tiny)
    again = data.split(tiny)
    for name in ("x_train", "y_train", "x_test", "y_test", "x_validation", "y_validation", "train_index"):
        assert getattr(split, name).tobytes() == getattr(again, name).tobytes(), name
    assert split.x_train.shape == (1500, 784) and split.x_test.shape == (1000, 784)
    assert split.x_validation.shape == (500, 784) and split.x_train.dtype == np.float32
    assert np.bincount(split.y_train).tolist() == [150] * 10
    assert np.bincount(split.y_validation).tolist() == [50] * 10
    assert np.bincount(split.y_test).tolist() == [100] * 10
    # the test subset: rows of the official test set, ascending, with their own labels and pixels
    paths = list(datasets.fashion_paths(tiny["data"]).values())
    test_images, test_labels = datasets.read_idx(paths[2]), datasets.read_idx(paths[3])
    assert np.all(np.diff(split.test_index) > 0) and split.test_index[-1] < 10000
    np.testing.assert_array_equal(split.y_test, test_labels[split.test_index])
    test_pixels = test_images.reshape(10000, 784)[split.test_index].astype(np.float64)
    np.testing.assert_array_equal(split.x_test, ((test_pixels - split.mean[0]) / split.scale[0]).astype(np.float32))
    assert set(split.train_index).isdisjoint(split.validation_index)
    # the training part standardised with its own pixels' statistics, the test part with the same
    raw_train, raw_labels = (datasets.read_idx(p) for p in list(datasets.fashion_paths(tiny["data"]).values())[:2])
    pixels = raw_train.reshape(60000, 784)[split.train_index].astype(np.float64)
    np.testing.assert_array_equal(split.y_train, raw_labels[split.train_index])
    mean, scale = pixels.mean(), pixels.std()
    np.testing.assert_allclose([split.mean[0], split.scale[0]], [mean, scale], rtol=1e-13)
    np.testing.assert_array_equal(split.x_train, ((pixels - split.mean[0]) / split.scale[0]).astype(np.float32))
    assert abs(float(split.x_train.astype(np.float64).mean())) < 1e-6
    assert abs(float(split.x_train.astype(np.float64).std()) - 1) < 1e-6
    # the convolutional network reads these rows as 28x28 images (the digits': 8x8)
    from bnstudy.nets import conv_train

    assert conv_train.image_side(split.x_train) == conv_train.image_side(split.x_test) == datasets.shape(tiny).side
    other = data.split(tiny | {"split": {"seed": 1}})
    assert not np.array_equal(other.train_index, split.train_index)
    assert not np.array_equal(other.test_index, split.test_index)
    # without data.test_size, every test image in file order
    whole = data.split(tiny | {"data": {k: v for k, v in tiny["data"].items() if k != "test_size"}})
    np.testing.assert_array_equal(whole.test_index, np.arange(10000))
    np.testing.assert_array_equal(whole.y_test, test_labels)


@pytest.mark.pipeline
@pytest.mark.parametrize("problem", ["hash", "missing"])
def test_snakemake_refuses_a_bad_data_set_before_any_job_with_one_line(tiny, tmp_path, problem):
    _require_files(tiny["data"])
    config = copy.deepcopy(tiny)
    if problem == "hash":
        config["data"]["sha256"]["test_images"] = "0" * 64
        expected = f"bnstudy: {datasets.FASHION_DIRECTORY}/t10k-images-idx3-ubyte.gz: sha256 "
    else:
        config["data"]["directory"] = str(tmp_path / "nowhere")
        expected = f"bnstudy: Fashion-MNIST file {tmp_path}/nowhere/train-images-idx3-ubyte.gz is missing"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    result = snakemake("-n", "--configfile", str(path), "-d", str(tmp_path / "run"), timeout=300)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("bnstudy:")]
    assert len(lines) == 1 and lines[0].startswith(expected), result.stderr[-2000:]
    assert "Traceback" not in result.stderr and not (tmp_path / "run" / "results").exists()


# ---- the tiny config end to end --------------------------------------------------------
@pytest.mark.pipeline
def test_fashion_tiny_config_builds_the_paper_with_the_expected_manifest(tiny, fashion_tiny):
    """The whole DAG on 1,500 Fashion-MNIST training images to the paper, on a simulated machine without
    AVX/FMA (the committed manifest was written on another one): the same bytes. The suite's one
    build of it (conftest's ``fashion_tiny``, started when collection ends, local);
    tests/workflow/test_slurm.py builds part of it through SLURM to the same bytes."""
    _require_files(tiny["data"])
    workdir, seconds = fashion_tiny.workdir, fashion_tiny.seconds
    pdf = workdir / "paper" / "main.pdf"
    assert pdf.read_bytes().startswith(b"%PDF")
    table = manifest.read(workdir / "results" / "manifest.tsv")
    assert {"split", "train_grid", "probe_companions_grid", "serve_stream", "finetune", "paper"} <= set(table.rule)
    assert "results/data/x_validation.npy" in set(table.path)
    design = (workdir / "results" / "paper" / "macros" / "design.tex").read_text()
    for name, value in (("netConv", "conv"), ("netPositions", "49"), ("netDepth", "three")):
        assert f"\\newcommand{{\\{name}}}{{{value}}}" in design, name
    assert "hiddenOne" not in design and "BatchNorm2d" in design
    comp = (workdir / "results" / "paper" / "macros" / "companions.tex").read_text()
    assert f"\\newcommand{{\\compExactPool}}{{{tiny['companions']['exact_companions']}}}" in comp
    assert "\\newcommand{\\dataSetName}{Fashion-MNIST}" in design and "\\newcommand{\\dataFeatures}{784}" in design
    assert "digits" not in design.replace(PUBLISHED_TASK, "")  # the digits only as the published study's task
    identical, lines = manifest.verify(EXPECTED, workdir / "results")
    assert identical, "\n".join(lines) + (
        f"\n(a deliberate change: after a build of {TINY}, python -m bnstudy.pipeline.manifest expected --results "
        f"<its results> --out {EXPECTED.relative_to(ROOT)}; review the diff) [{fashion_tiny.where}, {seconds:.0f} s]"
    )


@pytest.mark.pipeline
def test_the_tiny_build_ran_as_the_simulated_machine_and_its_record_says_so(fashion_tiny):
    """The build's Snakemake and jobs ran with the machine without AVX/FMA's kernel-selection variables
    (bnstudy.pipeline.machines.environments()["generic"]): its build record, which no manifest hashes,
    names each of them, and Numba's target and glibc's masked features followed them."""
    from bnstudy.pipeline.machines import environments
    from bnstudy.pipeline.provenance import KERNEL_VARIABLES

    env = environments()["generic"]
    assert fashion_tiny.env == env and env["ATEN_CPU_CAPABILITY"] == "default"
    record = (fashion_tiny.workdir / "results" / "provenance" / "machine.csv").read_text()
    for name in KERNEL_VARIABLES:
        if name in env:
            assert f"{name}={env[name]}" in record, name
    assert "Numba target,generic (no AVX/FMA)" in record and "masked: AVX FMA AVX2" in record, record
    assert "results/provenance/machine.csv" not in (fashion_tiny.workdir / "results" / "manifest.tsv").read_text()


def test_only_the_published_task_itself_gets_no_other_task_macro():
    """The published episode trained the MLP on the digits: a build of that task compares its numbers
    with the episode's; the digits with the convolutional network, or Fashion-MNIST, is another task."""
    digits = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    fashion = yaml.safe_load((ROOT / TINY).read_text())
    assert published_task_macros(digits) == {}
    assert published_task_macros(fashion) == {"publishedOtherTask": PUBLISHED_TASK}
    conv_digits = copy.deepcopy(digits)
    conv_digits["network"] = fashion["network"]
    assert published_task_macros(conv_digits) == {"publishedOtherTask": PUBLISHED_TASK}


# Sentences that test our numbers against the published episode's: true of a build of its own task only.
AGAINST_PUBLISHED = (
    "lies inside our interval",
    "lies outside our interval",
    "times the published",
    "consistent with the published",
    "of our seed standard deviations",
    "standard errors of the difference between a mean",
    "Against the published flip rates",
)


@pytest.mark.pipeline
def test_the_fashion_paper_prints_the_published_values_for_reference_and_tests_none_against_them(tiny, fashion_tiny):
    """The published values come from the MLP on the digits: the Fashion paper names that task, prints them
    for reference only, and has none of the sentences that set our intervals against them."""
    pdf = fashion_tiny.workdir / "paper" / "main.pdf"
    text = " ".join(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout.split())
    assert "The episode trained a multilayer perceptron on scikit-learn" in text and "another task than ours" in text
    assert text.count("for reference only") >= 5  # introduction, both studies' text, tables and figure
    assert [s for s in AGAINST_PUBLISHED if s in text] == []
    assert "Paired differences." in text and "What the seed spread says" not in text


@pytest.mark.pipeline
def test_the_audit_engine_gives_the_pipelines_exact_flip_counts_on_the_convolutional_networks(tiny, fashion_tiny):
    """Batch norm's convolutional networks of the tiny build (statistics over channels and
    positions), every training batch size and seed, loaded as PyTorch modules
    (``bnstudy.nets.weights.load_module``) and probed by the audit's engine on the pipeline's own
    exact design (each example beside every row of the seeded pool of ``exact_companions`` test
    rows): the inference-mode label of every example and the flip count of every example are the
    pipeline's, but at logit ties (at most ``max_ties`` probes, each with PyTorch's two largest
    logits within ``NEAR_TIE``: float32 in another order can break a tie the other way)."""
    from bnstudy.base import io
    from bnstudy.studies.companions import draws
    from bnstudy.tools.benchmark import NEAR_TIE

    max_ties = 3
    _require_files(tiny["data"])
    root = fashion_tiny.workdir / "results"
    x = io.read_array(root / "data" / "x_test.npy")
    comp = tiny["companions"]
    pool = draws.exact_pool(len(x), comp["exact_companions"], comp["seed"])
    probes = io.read_table(root / "companions" / "grid" / "batchnorm_seeds0-1.csv")
    exact = probes[probes["design"] == "exact"]
    assert len(exact) and set(exact["train_batch_size"]) == set(tiny["grid"]["batch_sizes"])
    ties, checked = [], 0
    with torch_threads(1):
        for (b, seed), theirs in exact.groupby(["train_batch_size", "seed"]):
            path = root / "runs" / "grid" / "batchnorm" / f"b{b}" / "seeds0-1.safetensors"
            checked += _engine_against_pipeline(path, int(seed), x, pool, theirs, ties)
    assert checked > 1000
    assert len(ties) <= max_ties and all(t[-1] < NEAR_TIE for t in ties), ties


def _engine_against_pipeline(path, seed, x, pool, theirs, ties) -> int:
    """One network of the test above (seed ``seed`` of the weights file ``path``; ``theirs``: its
    exact rows of the pipeline's probe table): its inference labels asserted, each probe whose
    label differs from the pipeline's appended to ``ties`` with PyTorch's margin; returns how many
    probes it checked."""
    import copy

    import torch

    from bnstudy.audit.engine import Engine
    from bnstudy.nets import weights
    from bnstudy.nets.conv_torch import images
    from bnstudy.studies.companions import draws
    from bnstudy.studies.companions import science as companions

    net = weights.load_module(path, seed=seed)
    examples = theirs["example"].to_numpy()
    with torch.no_grad():
        inference = net(images(x[examples])).argmax(1).numpy()
    assert (inference == theirs["inference_label"].to_numpy()).all(), (path, seed)
    engine, checked = Engine(net, images(x)), 0
    for e, label, flips, batches in zip(examples, inference, theirs["flips"], theirs["batches"]):
        pairs = draws.exact_pairs(len(x), int(e), pool)
        assert len(pairs) == batches
        got = engine.train_labels(pairs)[:, 0]
        checked += len(pairs)
        if int((got != label).sum()) == flips:
            continue
        # the counts differ: the pipeline's own labels of these probes, and where ours differ
        stacked, spec, metas = weights.read(path)
        i = [int(m["seed"]) for m in metas].index(seed)
        pipeline = companions.batch_predictions({k: v[i : i + 1] for k, v in stacked.items()}, spec, x, pairs)[0]
        assert int((pipeline != label).sum()) == flips
        twin = copy.deepcopy(net).train()  # a training-mode pass moves the copy's statistics only
        for j in np.flatnonzero(got != pipeline):
            with torch.no_grad():
                top = np.sort(twin(images(x[pairs[j]]))[0].numpy())
            ties.append((str(path), seed, int(e), int(pairs[j, 1]), float(top[-1] - top[-2])))
    assert not net.training  # the engine left the module as it found it
    return checked
