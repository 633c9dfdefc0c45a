"""A convolutional network in the paper's prose: its layers, the sides of their outputs and the
residual connections, in words (the methods of a paper whose network is convolutional). Pure
Python: the config's layers as :mod:`bnstudy.base.convlayers` reads them (the blocks the
network's spec and the cost model read), no arithmetic that could depend on the CPU."""

from __future__ import annotations

from bnstudy.base.convlayers import Block
from bnstudy.paper.latex import words

NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def number_word(n: int) -> str:
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def ordinal(i: int) -> str:
    """``first``, ``second``, ... for the convolution of index ``i`` (from 0); ``convolution 12``'s
    ``12th`` beyond the tenth."""
    return ORDINALS[i] if i < len(ORDINALS) else f"{i + 1}th"


def _square(side: int) -> str:
    return f"${side}\\times{side}$"


def layer_list(blocks: tuple[Block, ...]) -> str:
    """The convolutions in prose, for the paper: each one's output channels, stride and the side of
    its output, and the residual connections (layer ``l`` adds layer ``skip``'s output, after its
    ReLU, to its own normaliser's output before its ReLU); ``blocks`` placed on the images' side
    (:func:`bnstudy.base.convlayers.parse`)."""
    parts = []
    for i, b in enumerate(blocks):
        before, after = b.in_side, b.out_side
        shape = f"{_square(before)} positions to {_square(after)}" if after != before else f"{_square(after)} positions"
        text = f"{'a convolution' if i == 0 else 'one'} to {b.channels} channels with stride {b.stride} ({shape})"
        if b.skip >= 0:
            text += (
                f", adding the {ordinal(b.skip)} convolution's output (after its ReLU) to its normaliser's "
                "output before its own ReLU (a residual connection)"
            )
        parts.append(text)
    return words(parts) if len(parts) < 3 else "; ".join(parts[:-1]) + "; and " + parts[-1]
