"""The registry of normalisers: every kind has every part, and runs through the study's code.

Adding a normaliser to bnstudy.base.normalisers.REGISTRY makes every test here run for it.
"""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
import yaml

from bnstudy.base import normalisers
from bnstudy.base.config import load_schema
from bnstudy.compiled import backprop, kernels, optimisers
from bnstudy.nets import conv_train, model, norms, train
from bnstudy.nets.recipe import Recipe
from bnstudy.paper import figures
from conftest import ROOT

KINDS = normalisers.NAMES


def test_names_are_unique_and_listed_once():
    assert len(set(KINDS)) == len(KINDS) == len(normalisers.REGISTRY)
    # the schema lists no names of its own: they come from the registry
    files = [ROOT / "workflow/schemas/config.schema.yaml", *(ROOT / "src/bnstudy/studies").glob("*/schema.yaml")]
    schema = "".join(p.read_text() for p in files)
    enums = " ".join(re.findall(r"enum:.*", schema))
    for name in KINDS:
        assert not re.search(rf"\b{name}\b", enums), f"{name} typed into the schema"


def test_colours_are_colour_blind_safe_one_per_normaliser_never_reused():
    colours = [n.colour for n in normalisers.REGISTRY]
    assert len(set(colours)) == len(colours), "two normalisers share a colour"
    # colour-blind-safe palettes: Okabe--Ito's, then Paul Tol's "muted" scheme
    assert set(colours) <= set(normalisers.OKABE_ITO.values()) | set(normalisers.TOL_MUTED.values())
    assert not set(colours) & set(normalisers.OTHER_COLOURS.values()), "a normaliser's colour means something else"
    assert len({n.marker for n in normalisers.REGISTRY}) == len(KINDS), "two normalisers share a marker"


def test_kernel_codes_come_from_the_registry():
    assert kernels.KIND == normalisers.kernel_codes()
    # a kind may share an existing code when its arithmetic is that kernel's; every code is one the kernels know
    assert set(kernels.KIND.values()) <= set(normalisers.CODES)
    assert len(set(normalisers.CODES)) == len(normalisers.CODES) and normaliser_codes_are_constants()
    # a kind with a setting names a field of both networks' specs that it reads, or none
    for entry in normalisers.REGISTRY:
        assert not entry.conv or not entry.setting or hasattr(conv_train.ConvSpec(entry.name), entry.setting)


def normaliser_codes_are_constants():
    """Each code in CODES is one of the module's upper-case integer constants."""
    constants = {v for k, v in vars(normalisers).items() if k.isupper() and isinstance(v, int)}
    return set(normalisers.CODES) <= constants


def test_the_convolutional_network_builds_its_normalisers_from_the_registry():
    from bnstudy.nets import conv_torch

    for entry in normalisers.REGISTRY:
        spec = conv_train.ConvSpec(entry.name)
        if not entry.conv:
            with pytest.raises(ValueError, match=entry.name):
                conv_torch.build_module(spec)
            continue
        net = conv_torch.build_module(spec, seed=0)  # the initial state loads: the keys agree
        assert set(net.state_dict()) == set(conv_train.initial_state(spec, 0))


def test_consumers_read_the_registry():
    assert norms.NORMALISERS == KINDS
    assert norms.BATCH_NORMALISERS == normalisers.BATCH_NAMES
    assert model.BATCH_KINDS == normalisers.BATCH_NAMES
    assert model.AFFINE_KINDS == normalisers.AFFINE_NAMES
    for table in (figures.COLOURS, figures.LABELS, figures.MARKERS, figures.LINESTYLES):
        assert tuple(table) == KINDS
    schema = load_schema(ROOT / "workflow/schemas/config.schema.yaml")
    assert schema["definitions"]["normaliser"]["enum"] == list(KINDS)
    assert schema["definitions"]["batch_normaliser"]["enum"] == list(normalisers.BATCH_NAMES)


def test_the_test_config_studies_every_registered_normaliser_and_the_paper_config_some():
    test = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    assert tuple(test["normalisers"]) == KINDS
    paper = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert [n for n in KINDS if n in paper["normalisers"]] == paper["normalisers"]  # registry order


def test_the_methods_name_the_configs_normalisers_from_the_registry():
    from bnstudy.paper import design

    for config_file in ("config.yaml", "test.yaml"):
        config = yaml.safe_load((ROOT / "config" / config_file).read_text())
        names = config["normalisers"]
        text = normalisers.methods_list(names)
        assert design.design_macros(config, 10, 10)["normaliserList"] == text
        positions = [text.index(normalisers.get(n).methods or normalisers.get(n).label) for n in names]
        assert positions == sorted(positions), "in the config's order"
        assert text.count(" and ") >= 1 and text.endswith(normalisers.get(names[-1]).methods or names[-1])
    assert normalisers.methods_list(["layernorm"]) == "layer normalisation"
    assert normalisers.methods_list(["none", "layernorm"]) == "none and layer normalisation"


def test_own_settings_come_from_the_kinds_config_section_and_only_its_weights_record_them():
    cfg = {"ghostbatchnorm": {"virtual_batch": 7}}
    assert normalisers.spec_settings("ghostbatchnorm", cfg) == {"virtual_batch": 7}
    assert normalisers.spec_settings("batchnorm", cfg) == {}  # other kinds' parameters stay as they were
    for entry in normalisers.REGISTRY:
        assert not entry.setting or hasattr(model.NetSpec(entry.name), entry.setting)
        for config_file in ("config.yaml", "test.yaml"):
            config = yaml.safe_load((ROOT / "config" / config_file).read_text())
            for key in entry.own_settings:  # each in the kind's own section of every config
                assert isinstance(config[entry.name][key], int), (config_file, entry.name, key)
    net = {"normaliser": "ghostbatchnorm", "hidden": [12, 10], "groups": 2, "eps": 1e-5, "momentum": 0.1}
    spec = model.spec_from_params(net | {"virtual_batch": 7}, inputs=64)
    assert spec.virtual_batch == 7 and model.spec_from_metadata(spec.metadata()) == spec
    with pytest.raises(ValueError, match="virtual_batch"):
        model.spec_from_params(net, inputs=64)
    bn = model.spec_from_params(net | {"normaliser": "batchnorm"}, inputs=64)
    assert "virtual_batch" not in bn.metadata() and model.spec_from_metadata(bn.metadata()) == bn
    assert list(bn.metadata()) == ["normaliser", "widths", "groups", "eps", "momentum"]  # weights files unchanged


def test_the_schema_requires_ghost_batch_norms_section_and_virtual_batches_of_two_rows_or_more():
    import jsonschema

    schema = load_schema(ROOT / "workflow/schemas/config.schema.yaml")
    validator = jsonschema.Draft202012Validator(schema)
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    assert not list(validator.iter_errors(config))
    for bad in (1, 2.5, None):
        config["ghostbatchnorm"]["virtual_batch"] = bad
        assert list(validator.iter_errors(config)), bad
    config["ghostbatchnorm"]["virtual_batch"] = 2
    assert not list(validator.iter_errors(config))
    del config["ghostbatchnorm"]
    assert list(validator.iter_errors(config))


@pytest.mark.slow
def test_registry_does_not_import_torch():
    code = "import sys; import bnstudy.base.normalisers, bnstudy.compiled.kernels, bnstudy.nets.model; "
    code += "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(0)
    x = (rng.random((32, 64)) * 2 - 1).astype(np.float32)
    y = np.arange(32, dtype=np.int64) % 10
    return x, y


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_every_part_and_runs_through_the_pipeline(kind, tiny):
    import torch

    entry = normalisers.get(kind)
    for field in ("label", "colour", "marker", "linestyle", "module", "functional"):
        assert getattr(entry, field), f"{kind}: no {field}"
    assert isinstance(entry.batch_statistics, bool) and isinstance(entry.kernel, int)
    assert not entry.batch_statistics or entry.affine, "batch statistics come with running statistics and gamma/beta"
    spec = model.NetSpec(kind, virtual_batch=3)  # ghost batch norm: batches of 8 in virtual batches of 3 and 5
    x, y = tiny

    # a tiny training run (the compiled loop), then the kernels' forward in both modes
    stacked, log = train.train_models(spec, Recipe(batch_size=8, epochs=1), [0], x, y)
    assert len(log) == 1 and np.isfinite(log[0]["loss"])
    inference = kernels.logits(stacked, spec, x)
    training = kernels.logits(stacked, spec, x, train=True, batch=8)
    assert inference.shape == training.shape == (1, 32, 10)
    assert np.isfinite(inference).all() and np.isfinite(training).all()
    if not entry.batch_statistics:  # no batch statistics: both modes are one function
        np.testing.assert_array_equal(inference, training)

    # the user's module: the trained weights load into it, and it agrees with the kernels
    net = model.build_module(spec)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in model.unstack(stacked)[0].items()})
    net.eval()
    with torch.no_grad():
        out = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(out, inference[0], rtol=1e-4, atol=1e-4)
    # and in training mode, batch by batch of 8 rows (a copy: PyTorch moves its buffers)
    import copy

    for start in range(0, 32, 8):
        live = copy.deepcopy(net).train()
        with torch.no_grad():
            out = live(torch.from_numpy(x[start : start + 8])).numpy()
        np.testing.assert_allclose(out, training[0, start : start + 8], rtol=1e-4, atol=1e-4)

    # the functional form (norms.normalise) agrees with the module on the first normaliser
    h = net[0](torch.from_numpy(x)).detach()
    p = {k: torch.from_numpy(v) for k, v in model.norm_params(stacked, "1").items()}
    with torch.no_grad():
        got = norms.normalise(kind, h.unsqueeze(0), p, train=False, eps=spec.eps, groups=spec.groups)
        want = net[1](h)
    np.testing.assert_allclose(got.squeeze(0).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    # and in training mode, on a batch of 8 rows, running statistics moved alike
    live = copy.deepcopy(net).train()
    p = {k: torch.from_numpy(v.copy()) for k, v in model.norm_params(stacked, "1").items()}
    settings = dict(eps=spec.eps, momentum=spec.momentum, groups=spec.groups, virtual_batch=spec.virtual_batch)
    with torch.no_grad():
        got = norms.normalise(kind, h[None, :8], p, train=True, update=entry.batch_statistics, **settings)
        want = live[1](h[:8])
    np.testing.assert_allclose(got.squeeze(0).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    for name, buffer in live[1].named_buffers():
        np.testing.assert_allclose(p[name].squeeze(0).numpy(), buffer.numpy(), rtol=1e-6, atol=1e-6, err_msg=name)

    # backward: the compiled loop's first gradient equals autograd's through the user's module
    # (all 32 rows, ghost batch norm in virtual batches of 8: fewer rows make float32 rounding
    # differences between the two orders grow past the tolerance, as batch norm's own do)
    spec = model.NetSpec(kind, virtual_batch=8)
    state, grad = _first_gradient(spec, x, y)
    net = model.build_module(spec)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    net.train()
    torch.nn.functional.cross_entropy(net(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    theirs = dict(net.named_parameters())
    offset = 0
    for key, shape in optimisers.layout(spec.widths):
        size = int(np.prod(shape))
        ours = grad[offset : offset + size].reshape(shape)
        offset += size
        if key not in theirs:  # a parameter the kind does not have (none: gamma, beta; no shift: beta)
            assert key.split(".")[1] not in entry.parameters and not ours.any(), key
            continue
        want = theirs[key].grad.numpy()
        # lr 1: p0 - p1 recovers g to within a rounding of p0 (|p| < 1.2, so about 1e-7)
        np.testing.assert_allclose(ours, want, atol=2e-7 + 1e-4 * max(float(np.abs(want).max()), 1e-3), err_msg=key)


def _first_gradient(spec, x, y):
    """The compiled loop's gradient of one step on all of ``x`` from the initial weights of seed 3
    (SGD, lr 1, no momentum: p1 = p0 - g) and those weights."""
    state = model.initial_state(spec, 3)
    flat = train.buffers(spec, state)[0]
    before = flat.copy()
    running = np.zeros((4, max(spec.widths[1:3])), np.float32)
    running[1] = running[3] = 1.0
    backprop.train_run(
        backprop.mlp_arch(spec.widths), backprop.State(flat, running), backprop.Data(x, y),
        backprop.schedule(np.arange(len(y))[None, :], [len(y)]), kernels.norm_settings(spec),
        backprop.optimiser(backprop.SGD, 1.0), 0, backprop.new_log(1),
    )  # fmt: skip
    return state, before - flat
