"""The convolutional network's layers as blocks: the config's ``network.layers`` read once.

A convolutional network (``network.kind: conv``) is a list of blocks, each a 3x3 convolution
with padding 1 to ``channels`` output channels with ``stride`` (1 or 2), its normaliser, and, when
``skip`` names an earlier block, the addition of that block's output before its ReLU. A
:class:`Block` also carries what follows from the blocks before it: its input channels (the
previous block's output channels; 1, the grey image, for the first) and, once the network meets
images of a side, its input side and so its output side (:func:`out_side`). Every reader of the
layers reads this one form: the network's spec (:class:`bnstudy.nets.conv_train.ConvSpec`, whose
:meth:`~bnstudy.nets.conv_train.ConvSpec.blocks` the compiled loop's geometry is built from,
:func:`bnstudy.compiled.conv.geometry`), the cost model (:mod:`bnstudy.pipeline.plan`) and the paper's
prose (:mod:`bnstudy.paper.network_prose`). Pure Python, no arithmetic that could depend on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


def out_side(side: int, stride: int) -> int:
    """The output side of a 3x3 convolution with padding 1 and ``stride`` on a ``side``-wide image
    (``ceil(side / stride)``): the one place the formula is written."""
    return (int(side) - 1) // int(stride) + 1


def square_side(pixels: int) -> int:
    """The side of the square one-channel images of ``pixels`` pixels (a row of the data)."""
    side = math.isqrt(int(pixels))
    if side * side != int(pixels):
        raise ValueError(f"{pixels} pixels are not a square image")
    return side


@dataclass(frozen=True)
class Block:
    """One convolution of the network: output ``channels``, ``stride``, the earlier block whose
    output it adds (``skip``, -1: none), its ``in_channels`` and, placed on images (:func:`on`),
    its ``in_side`` (0 before)."""

    channels: int
    stride: int = 1
    skip: int = -1
    in_channels: int = 1
    in_side: int = 0

    @property
    def out_side(self) -> int:
        """The side of the block's output (:func:`out_side` of its input side)."""
        return out_side(self.in_side, self.stride)

    @property
    def in_positions(self) -> int:
        return self.in_side * self.in_side

    @property
    def positions(self) -> int:
        """Output positions: ``out_side ** 2``."""
        return self.out_side * self.out_side


def chain(channels, strides=(), skips=(), side: int = 0, in_channels: int = 1) -> tuple[Block, ...]:
    """The blocks of convolutions to ``channels`` with ``strides`` and ``skips`` (empty: 1 and -1
    everywhere), each taking the one before's output channels, the first ``in_channels``; with
    ``side``, placed on ``side x side`` images (:func:`on`)."""
    out, c_in = [], int(in_channels)
    for i, c in enumerate(int(v) for v in channels):
        stride = int(strides[i]) if len(strides) else 1
        skip = int(skips[i]) if len(skips) else -1
        out.append(Block(c, stride, skip, c_in))
        c_in = c
    return on(out, side) if side else tuple(out)


def on(blocks, side: int) -> tuple[Block, ...]:
    """``blocks`` placed on ``side x side`` images: each block's input side the output side of the
    block before (the first's ``side``)."""
    out = []
    for block in blocks:
        block = replace(block, in_side=int(side))
        out.append(block)
        side = block.out_side
    return tuple(out)


def given_layers(net: dict) -> bool:
    """Whether the network section lists its ``layers`` (else only ``channels``, stride 1 and no
    residual connection in every layer)."""
    return bool(net.get("layers"))


def parse(net: dict, side: int = 0) -> tuple[Block, ...]:
    """The blocks of a config's ``network`` section (``kind: conv``): its ``layers``, each
    ``{channels, stride, skip}`` (stride 1 and skip -1 where not given), or else its ``channels``;
    with ``side``, placed on ``side x side`` images."""
    if given_layers(net):
        layers = list(net["layers"])
        return chain(
            [x["channels"] for x in layers],
            [x.get("stride", 1) for x in layers],
            [x.get("skip", -1) for x in layers],
            side,
        )
    return chain(net["channels"], side=side)
