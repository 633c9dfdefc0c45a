"""A convolutional network in the paper's prose: its layers, the sides of their outputs and the
residual connections, in words (the methods of a paper whose network is convolutional). Pure
Python: reading a config's layers, no arithmetic that could depend on the CPU."""

from __future__ import annotations

import math

from bnstudy.paper.latex import words

NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def square_side(pixels: int) -> int:
    """The side of the square one-channel images of ``pixels`` pixels (a row of the data)."""
    side = math.isqrt(int(pixels))
    if side * side != int(pixels):
        raise ValueError(f"{pixels} pixels are not a square image")
    return side


def layers(design: dict) -> list[dict]:
    """The convolutions of ``design`` (the config's ``conv.channels`` or ``conv.layers``), each
    ``{channels, stride, skip}`` (stride 1 and skip -1, none, where not given)."""
    if "layers" in design:
        return [
            {"channels": int(x["channels"]), "stride": int(x.get("stride", 1)), "skip": int(x.get("skip", -1))}
            for x in design["layers"]
        ]
    return [{"channels": int(c), "stride": 1, "skip": -1} for c in design["channels"]]


def layer_sides(side: int, strides) -> list[int]:
    """The output side of each 3x3 convolution with padding 1 on a ``side x side`` input, in turn:
    ``(side - 1) // stride + 1`` (:func:`bnstudy.compiled.conv.out_side`, which a test holds it to)."""
    out = []
    for stride in strides:
        side = (side - 1) // int(stride) + 1
        out.append(side)
    return out


def number_word(n: int) -> str:
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def ordinal(i: int) -> str:
    """``first``, ``second``, ... for the convolution of index ``i`` (from 0); ``convolution 12``'s
    ``12th`` beyond the tenth."""
    return ORDINALS[i] if i < len(ORDINALS) else f"{i + 1}th"


def _square(side: int) -> str:
    return f"${side}\\times{side}$"


def layer_list(design: dict, side: int) -> str:
    """The convolutions in prose, for the paper: each one's output channels, stride and the side of
    its output, and the residual connections (layer ``l`` adds layer ``skip``'s output, after its
    ReLU, to its own normaliser's output before its ReLU)."""
    spec = layers(design)
    sides = layer_sides(side, [x["stride"] for x in spec])
    parts, before = [], side
    for i, (x, after) in enumerate(zip(spec, sides, strict=True)):
        shape = f"{_square(before)} positions to {_square(after)}" if after != before else f"{_square(after)} positions"
        text = f"{'a convolution' if i == 0 else 'one'} to {x['channels']} channels with stride {x['stride']} ({shape})"
        if x["skip"] >= 0:
            text += (
                f", adding the {ordinal(x['skip'])} convolution's output (after its ReLU) to its normaliser's "
                "output before its own ReLU (a residual connection)"
            )
        parts.append(text)
        before = after
    return words(parts) if len(parts) < 3 else "; ".join(parts[:-1]) + "; and " + parts[-1]
