"""The data of the study: the digits split and the enumerated synthetic population."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from .runtime import STREAM_POPULATION, derive_seed


@dataclass(frozen=True)
class Split:
    """Standardised halves of the digits data.

    ``mean`` and ``scale`` are the training half's per-feature mean and standard
    deviation (population form, ddof 0); a constant feature keeps scale 1.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    train_index: np.ndarray
    test_index: np.ndarray
    mean: np.ndarray
    scale: np.ndarray


def split_digits(seed: int, test_size: int = 899) -> Split:
    """Stratified halves of scikit-learn's digits (898 train / 899 test rows)."""
    from sklearn.datasets import load_digits  # imported here: only the split needs it
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = digits.data.astype(np.float64)
    y = digits.target.astype(np.int64)
    index = np.arange(len(y))
    train_index, test_index = train_test_split(
        index, test_size=test_size, stratify=y, random_state=seed, shuffle=True
    )
    train_index = np.sort(train_index)
    test_index = np.sort(test_index)
    mean = x[train_index].mean(axis=0)
    scale = x[train_index].std(axis=0)
    scale[scale == 0] = 1.0
    standardise = lambda rows: ((x[rows] - mean) / scale).astype(np.float32)  # noqa: E731
    return Split(
        x_train=standardise(train_index),
        y_train=y[train_index],
        x_test=standardise(test_index),
        y_test=y[test_index],
        train_index=train_index,
        test_index=test_index,
        mean=mean,
        scale=scale,
    )


def synthetic_population(seed: int, rows: int = 512, features: int = 16) -> np.ndarray:
    """An enumerated population whose statistics sit far from 0 and 1.

    Feature means are spread over [-4, 4]; variances are drawn log-uniformly so
    some sit near 0.1 and others in 5-10, and the first few features are pinned at
    the extremes (0.1, 0.15, 5, 7.5, 10) so every seed covers both ends. Rows are
    Gaussian, then each feature is shifted and scaled so that its population mean
    and variance (ddof 0) are exactly the chosen ones.
    """
    rng = np.random.default_rng(derive_seed(seed, STREAM_POPULATION))
    means = rng.uniform(-4.0, 4.0, size=features)
    variances = np.exp(rng.uniform(np.log(0.1), np.log(10.0), size=features))
    pinned = np.array([10.0, 0.1, 7.5, 0.15, 5.0])[: features]
    variances[: len(pinned)] = pinned
    z = rng.standard_normal((rows, features))
    z = (z - z.mean(axis=0)) / z.std(axis=0)
    return (means + z * np.sqrt(variances)).astype(np.float64)
