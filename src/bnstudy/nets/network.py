"""Which network a config or a weights file names: the map from a network's name to its kind.

A network is an object, its *spec* (:class:`bnstudy.nets.spec.Network`): :class:`bnstudy.nets.model.NetSpec`
for the MLP or :class:`bnstudy.nets.conv_train.ConvSpec` for the convolutional network. A study
calls the spec's methods (train, logits, labels, layout, normaliser layers, ...), which each kind
implements; this module only turns a rule's network parameters (:func:`spec_from_params`) or a
weights file's metadata (:func:`spec_from_metadata`) into the spec of the kind they name
(:data:`KINDS`). Adding a kind adds its class here and nowhere else outside its own module
(``docs/extending.md``).
"""

from __future__ import annotations

from bnstudy.nets.conv_train import ConvSpec
from bnstudy.nets.model import NetSpec
from bnstudy.nets.model import spec_from_params as mlp_spec
from bnstudy.nets.spec import Network

KINDS = {"mlp": NetSpec, "conv": ConvSpec}  # a config's network.kind (absent: mlp) and its spec's type


def spec_from_params(net: dict, inputs: int) -> Network:
    """The spec of a rule's network parameters: ``kind`` (``mlp`` when absent, as in every
    config before the convolutional network could be chosen), the normaliser and its settings.
    The MLP takes ``hidden`` and the data's ``inputs`` features; the convolutional network takes
    ``layers`` (each ``{channels, stride, skip}``) on square images of ``inputs`` pixels."""
    which = net.get("kind", "mlp")
    if which == "mlp":
        return mlp_spec({k: v for k, v in net.items() if k != "kind"}, inputs)
    if which == "conv":
        return ConvSpec.from_params(net["normaliser"], net)
    raise ValueError(f"network kind {which!r} is not one of {', '.join(KINDS)}")


def spec_from_metadata(meta: dict[str, str]) -> Network:
    """The spec a weights file's metadata records (the spec's ``metadata``; no ``kind``: the MLP,
    whose files are as they were before the convolutional network)."""
    which = meta.get("kind", "mlp")
    if which not in KINDS:
        raise ValueError(f"network kind {which!r} is not one of {', '.join(KINDS)}")
    return KINDS[which].from_metadata(meta)
