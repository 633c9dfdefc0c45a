"""The registry of normalisers: every kind the study knows, declared once.

Each :class:`Normaliser` names everything the rest of the code asks about a kind:

- ``name``: the key in the config (``normalisers:``), in file paths and tables;
- ``label``, ``colour``, ``marker``, ``linestyle``: how every figure draws it
  (colours from the Okabe--Ito colour-blind-safe palette, one per normaliser and
  used for nothing else, see :data:`OTHER_COLOURS` for other meanings);
- ``batch_statistics``: whether training mode normalises with the statistics of
  the batch (and so keeps running statistics for inference mode);
- ``affine``: whether it has a learned per-feature scale (gamma), and ``shift``
  whether also a learned shift (beta; PyTorch's ``bias``): the parameters of its
  module, of its weights files and of the training loop;
- ``kernel``: its code, on which :mod:`bnstudy.compiled.normkernels` (the one place of every
  kind's compiled arithmetic, used by training, evaluation, the probes and both
  networks) dispatches;
- ``setting``: the :class:`bnstudy.nets.model.NetSpec` field (and, for a kind of the
  convolutional network, :class:`bnstudy.nets.conv_train.ConvSpec` field) holding the one
  integer the compiled kernels receive besides the code (group norm's ``groups``, ghost
  batch norm's ``virtual_batch``: rows, or in the convolutional network examples, per
  virtual batch), or empty (the kernels then get 1);
- ``own_settings``: the ``NetSpec`` (and ``ConvSpec``) fields the kind alone reads, from
  its own section of the config (``config[name]``, :func:`spec_settings`); only its
  weights files record them;
- ``module``: ``"module:function"`` of its ``torch.nn.Module`` factory for users,
  ``factory(spec, features)`` (:func:`bnstudy.nets.model.build_module` calls it);
- ``functional``: ``"module:function"`` of its PyTorch function of a stack of
  models, ``f(h, p, *, train, update, eps, momentum, groups, limits, virtual_batch)``
  (:func:`bnstudy.nets.norms.normalise` calls it; the tests' reference);
- ``conv_module``: ``"module:function"`` of its ``torch.nn.Module`` factory in the
  convolutional network, ``factory(spec, channels)`` (:mod:`bnstudy.nets.conv_torch`), or
  empty for a kind the convolutional network does not have;
- ``methods``: how the paper's Methods names it (LaTeX, may quote the design macros
  of :mod:`bnstudy.paper.design`); :func:`methods_list` joins a config's kinds into the
  ``\normaliserList`` macro.

The factories and functions are named, not imported, so that this module (read by
the Snakefile, the schema check and the figures) never imports PyTorch: they are
resolved on first use (:meth:`Normaliser.module_factory`,
:meth:`Normaliser.functional_form`).

Adding a normaliser (three files and the config):

1. here: a kernel code (with the others below, and in :data:`CODES`) and its entry in
   :data:`REGISTRY`;
2. :mod:`bnstudy.compiled.normkernels`: its compiled arithmetic (forward in both modes,
   backward; a kind that normalises each row by itself needs only a branch in
   ``row_forward`` and ``row_backward``) and the branches on its code;
3. :mod:`bnstudy.nets.norms`: its PyTorch functional form and module factory;
4. the config's ``normalisers`` list (with its own config section and schema entry
   if it has ``own_settings``).

Then ``tests/base/test_normalisers.py`` takes every registered kind through every part
(its module against the kernels forward and backward, its functional form against
its module) and through a tiny training run.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

# Kernel codes: the compiled kernels (bnstudy.compiled.normkernels) branch on these integers.
NONE, BATCH, RENORM, LAYER, GROUP, GHOST, RMS = 0, 1, 2, 3, 4, 5, 6
CODES = (NONE, BATCH, RENORM, LAYER, GROUP, GHOST, RMS)

# Okabe & Ito (2008), "Color Universal Design": eight colours told apart with any
# colour-vision deficiency. Six go to the normalisers below; the rest, with
# greys, are for other meanings (:data:`OTHER_COLOURS`).
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
}


# Paul Tol's colour-blind-safe "muted" scheme (Tol 2021, "Colour Schemes"), for normalisers
# beyond the Okabe--Ito colours: one per normaliser still, never reused.
TOL_MUTED = {
    "olive": "#999933",
    "wine": "#882255",
    "teal": "#44AA99",
    "sand": "#DDCC77",
}


@dataclass(frozen=True)
class Normaliser:
    name: str
    label: str
    colour: str
    marker: str
    linestyle: str | tuple
    batch_statistics: bool
    affine: bool
    kernel: int
    module: str
    functional: str
    setting: str = ""
    own_settings: tuple[str, ...] = ()
    conv_module: str = ""  # its form in the convolutional network (bnstudy.compiled.conv, conv_train, conv_torch)
    shift: bool = True  # an affine kind's beta besides its gamma
    methods: str = ""  # the Methods' name for it (LaTeX); the label if empty
    conv_methods: str = ""  # the Methods' name for it in the convolutional network (LaTeX); methods if empty

    @property
    def conv(self) -> bool:
        """Whether the convolutional network has this kind."""
        return bool(self.conv_module)

    @property
    def parameters(self) -> tuple[str, ...]:
        """Its learned parameters' names in its module (``weight``: gamma, ``bias``: beta)."""
        return (("weight", "bias") if self.shift else ("weight",)) if self.affine else ()

    def module_factory(self):
        """``factory(spec, features) -> torch.nn.Module`` (imports PyTorch)."""
        return _resolve(self.module)

    def functional_form(self):
        """The PyTorch function of a stack of models (imports PyTorch)."""
        return _resolve(self.functional)

    def conv_module_factory(self):
        """``factory(spec, channels) -> torch.nn.Module`` of the convolutional network (imports PyTorch)."""
        if not self.conv_module:
            raise ValueError(f"the convolutional network has no {self.name}")
        return _resolve(self.conv_module)


def _resolve(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


REGISTRY: tuple[Normaliser, ...] = (
    Normaliser(
        "none",
        "none",
        OKABE_ITO["black"],
        "o",
        "-",  # solid
        batch_statistics=False,
        affine=False,
        kernel=NONE,
        module="bnstudy.nets.norms:identity_module",
        functional="bnstudy.nets.norms:identity",
        conv_module="bnstudy.nets.norms:identity_module",
    ),
    Normaliser(
        "batchnorm",
        "batch norm",
        OKABE_ITO["vermillion"],
        "s",
        "--",  # dashed
        batch_statistics=True,
        affine=True,
        kernel=BATCH,
        module="bnstudy.nets.norms:batch_norm_module",
        functional="bnstudy.nets.norms:batch_norm",
        methods=(
            r"batch normalisation (the function of PyTorch's \texttt{BatchNorm1d}, $\epsilon=\netEps$,"
            r" momentum \netMomentum, i.e.\ keep-factor \netKeep)"
        ),
        conv_methods=(
            r"batch normalisation (the function of PyTorch's \texttt{BatchNorm2d}: per channel over the"
            r" examples and positions of the batch, $\epsilon=\netEps$, momentum \netMomentum,"
            r" i.e.\ keep-factor \netKeep)"
        ),
        conv_module="bnstudy.nets.norms:batch_norm2d_module",
    ),
    Normaliser(
        "batchrenorm",
        "batch renorm",
        OKABE_ITO["orange"],
        "D",
        "-.",  # dash-dot
        batch_statistics=True,
        affine=True,
        kernel=RENORM,
        module="bnstudy.nets.norms:batch_renorm_module",
        functional="bnstudy.nets.norms:batch_renorm",
        methods="batch renormalisation",
        conv_methods="batch renormalisation (per channel over the examples and positions, as batch normalisation)",
        conv_module="bnstudy.nets.norms:batch_renorm2d_module",
    ),
    Normaliser(
        "layernorm",
        "layer norm",
        OKABE_ITO["blue"],
        "^",
        ":",  # dotted
        batch_statistics=False,
        affine=True,
        kernel=LAYER,
        module="bnstudy.nets.norms:layer_norm_module",
        functional="bnstudy.nets.norms:layer_norm",
        methods="layer normalisation",
        conv_methods="layer normalisation (over all channels and positions of one example)",
        conv_module="bnstudy.nets.norms:layer_norm2d_module",
    ),
    Normaliser(
        "groupnorm",
        "group norm",
        OKABE_ITO["bluish green"],
        "v",
        (0, (5, 1.5, 1, 1.5, 1, 1.5)),  # dash-dot-dot
        batch_statistics=False,
        affine=True,
        kernel=GROUP,
        module="bnstudy.nets.norms:group_norm_module",
        functional="bnstudy.nets.norms:group_norm",
        methods=r"group normalisation with \netGroups{} groups of \groupWidth{} features",
        conv_methods=(
            r"group normalisation with \netGroups{} groups of consecutive channels per convolution (each"
            r" group normalised over its channels and positions of one example)"
        ),
        conv_module="bnstudy.nets.norms:group_norm2d_module",
        setting="groups",
    ),
    Normaliser(
        "ghostbatchnorm",
        "ghost batch norm",
        OKABE_ITO["reddish purple"],  # not yellow: too pale on white for a line or a marker
        "P",
        (0, (8, 2)),  # long dashes
        batch_statistics=True,
        affine=True,
        kernel=GHOST,
        module="bnstudy.nets.norms:ghost_batch_norm_module",
        functional="bnstudy.nets.norms:ghost_batch_norm",
        methods="ghost batch normalisation (batch normalisation within consecutive virtual batches of each batch)",
        conv_methods=(
            "ghost batch normalisation (batch normalisation, per channel over examples and positions, within"
            " consecutive virtual batches of each batch)"
        ),
        setting="virtual_batch",
        own_settings=("virtual_batch",),
        conv_module="bnstudy.nets.norms:ghost_batch_norm2d_module",
    ),
    Normaliser(  # Zhang & Sennrich (2019): each row scaled by its root mean square, no centring
        "rmsnorm",
        "RMS norm",
        TOL_MUTED["olive"],
        "p",  # pentagon
        (0, (3, 1, 1, 1, 1, 1, 1, 1)),  # dash-dot-dot-dot
        batch_statistics=False,
        affine=True,
        shift=False,
        kernel=RMS,
        methods="RMS normalisation (each row divided by its root mean square, without centring, then a learned scale)",
        module="bnstudy.nets.norms:rms_norm_module",
        functional="bnstudy.nets.norms:rms_norm",
    ),
)

# Colours for meanings other than a normaliser (never a normaliser's colour). Okabe-Ito's
# yellow is left unused (too pale on white); the highlight is Paul Tol's indigo, from his
# colour-blind-safe "muted" scheme, dark enough to be shaded lighter (figures.shade).
OTHER_COLOURS = {
    "highlight": "#332288",
    "contrast": OKABE_ITO["sky blue"],
    "grey": "#7f7f7f",
    "dark grey": "#4d4d4d",
}

BY_NAME = {n.name: n for n in REGISTRY}
NAMES = tuple(BY_NAME)
BATCH_NAMES = tuple(n.name for n in REGISTRY if n.batch_statistics)
CONV_NAMES = tuple(n.name for n in REGISTRY if n.conv)
AFFINE_NAMES = tuple(n.name for n in REGISTRY if n.affine)


def get(name: str) -> Normaliser:
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown normaliser {name!r}; expected one of {NAMES}") from None


def kernel_codes() -> dict[str, int]:
    """``{name: kernel code}`` (:data:`bnstudy.compiled.kernels.KIND`)."""
    return {n.name: n.kernel for n in REGISTRY}


def spec_settings(name: str, config: dict) -> dict:
    """The ``NetSpec`` settings kind ``name`` reads from its own config section
    (``config[name]``): what the rules add to its network parameters; ``{}`` for the
    kinds without one, whose parameters then stay as they were."""
    return {key: config[name][key] for key in get(name).own_settings}


def methods_list(names, conv: bool = False) -> str:
    """The Methods' phrase naming the kinds ``names`` (a config's ``normalisers``, in its
    order): each kind's ``methods`` (its label if empty; ``conv``: its ``conv_methods`` first,
    the convolutional network's form), ``"A, B and C"``."""
    words = [(conv and get(n).conv_methods) or get(n).methods or get(n).label for n in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def colours() -> dict[str, str]:
    return {n.name: n.colour for n in REGISTRY}


def labels() -> dict[str, str]:
    return {n.name: n.label for n in REGISTRY}


def markers() -> dict[str, str]:
    return {n.name: n.marker for n in REGISTRY}


def linestyles() -> dict[str, str]:
    return {n.name: n.linestyle for n in REGISTRY}


def fill_schema(schema: dict) -> dict:
    """The config schema with its normaliser lists filled from the registry.

    ``definitions.normaliser`` (any registered kind) and
    ``definitions.batch_normaliser`` (kinds that use batch statistics) get their ``enum`` here;
    the schema file does not list names (a convolutional network's normalisers, those with a form
    there, are checked with the config's other cross-field rules).
    """
    defs = schema.setdefault("definitions", {})
    defs.setdefault("normaliser", {"type": "string"})["enum"] = list(NAMES)
    defs.setdefault("batch_normaliser", {"type": "string"})["enum"] = list(BATCH_NAMES)
    return schema
