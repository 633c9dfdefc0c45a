"""The data of the study: the split of the configured data set and the enumerated synthetic population.

Every number here that reaches an output is computed in fixed-order arithmetic
(:mod:`bnstudy.compiled.reductions`, :mod:`bnstudy.base.fixedmath`), so it has the same bits on
every CPU; the random draws are integer work or ``Generator.random()`` uniforms
(53 random bits scaled by 2**-53, exact), never NumPy's normal sampler (whose
ziggurat calls libm's ``exp`` and ``log``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bnstudy.base import fixedmath
from bnstudy.base.runtime import STREAM_POPULATION, derive_seed
from bnstudy.compiled.reductions import column_moments

IRWIN_HALL_TERMS = 12  # uniforms summed per value: mean 6, variance 12 * 1/12 = 1
PINNED_VARIANCES = (10.0, 0.1, 7.5, 0.15, 5.0)  # the first features' variances, both extremes


@dataclass(frozen=True)
class Split:
    """The standardised training and test parts of a data set (the digits: its two halves).

    ``mean`` and ``scale`` are the training part's per-feature mean and standard
    deviation (population form, ddof 0); a constant feature keeps scale 1. A data set
    with a validation split (Fashion-MNIST) has it in ``x_validation``, ``y_validation``,
    ``validation_index``; the digits have none (``None``).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    train_index: np.ndarray
    test_index: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    x_validation: np.ndarray | None = None
    y_validation: np.ndarray | None = None
    validation_index: np.ndarray | None = None


def standardisation(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and population standard deviation (ddof 0) of the rows of ``x``;
    a constant feature gets scale 1.

    Fixed order, float64: the sums over rows in row order
    (:func:`bnstudy.compiled.reductions.column_moments`, two passes), then ``sqrt``.
    """
    mean, var = column_moments(x)
    scale = np.sqrt(var)
    scale[scale == 0] = 1.0
    return mean, scale


def split_digits(seed: int, test_size: int = 899) -> Split:
    """Stratified halves of scikit-learn's digits (898 train / 899 test rows).

    The split is scikit-learn's ``train_test_split`` (integer work); both halves are
    standardised with :func:`standardisation` of the training half, its rows in
    ascending order of their index in the digits data: ``(x - mean) / scale`` in
    float64 (elementwise, correctly rounded), then rounded to float32.
    """
    from sklearn.datasets import load_digits  # imported here: only the split needs it
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = digits.data.astype(np.float64)
    y = digits.target.astype(np.int64)
    index = np.arange(len(y))
    train_index, test_index = train_test_split(index, test_size=test_size, stratify=y, random_state=seed, shuffle=True)
    train_index = np.sort(train_index)
    test_index = np.sort(test_index)
    mean, scale = standardisation(x[train_index])
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


def pixel_standardisation(pixels: np.ndarray) -> tuple[float, float]:
    """One mean and one population standard deviation (ddof 0) over every value of ``pixels``
    (unsigned bytes), computed exactly: the sums ``S = sum x`` and ``Q = sum x**2`` are
    integers (NumPy's ``int64`` sums, exact whatever their order), ``mean = S / n`` is one
    correctly rounded division, the variance ``(n Q - S**2) / n**2`` an exact fraction
    rounded once to float64, and ``scale`` its correctly rounded square root. So both are
    the same bits on every CPU."""
    from fractions import Fraction

    values = np.asarray(pixels, np.uint8).reshape(-1).astype(np.int64)
    n, s, q = len(values), int(values.sum()), int((values * values).sum())
    mean = float(Fraction(s, n))
    var = float(Fraction(n * q - s * s, n * n))
    scale = float(np.sqrt(var)) if var > 0 else 1.0
    return mean, scale


def stratified_subset(index: np.ndarray, labels: np.ndarray, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``size`` of the rows ``index`` drawn without replacement, stratified by ``labels`` (scikit-
    learn's ``train_test_split``, integer work, ``random_state=seed``), and the rest; both sorted.
    ``size == len(index)`` takes every row."""
    from sklearn.model_selection import train_test_split

    if size == len(index):
        return np.sort(index), np.array([], np.int64)
    chosen, rest = train_test_split(index, train_size=size, stratify=labels, random_state=seed, shuffle=True)
    return np.sort(chosen), np.sort(rest)


def split_fashion(data: dict, seed: int) -> Split:
    """Fashion-MNIST's official parts, read from the idx files (:func:`bnstudy.base.datasets.load_fashion`,
    which checks each file's sha256 against ``data["sha256"]``).

    - training part: ``data["train_size"]`` of the 60,000 training images, a seeded stratified
      subset (:func:`stratified_subset` with ``seed``); every image when it is 60,000;
    - validation part: ``data["validation_size"]`` of the training images outside it, seeded
      and stratified likewise (``seed``), for any tuning;
    - test part: all 10,000 official test images, in file order; with ``data["test_size"]``, a
      seeded stratified subset of them (:func:`stratified_subset` with ``seed``, the same number of
      each class), for a small config whose evaluations would otherwise dominate its cost.

    Rows of each part in ascending order of their row in their file. Every pixel is
    standardised with one mean and one standard deviation over all pixels of the training
    part (:func:`pixel_standardisation`, exact): ``(x - mean) / scale`` in float64
    (elementwise, correctly rounded), then rounded to float32. One mean and scale for all
    pixels, not one per pixel: a border pixel that is (almost) always 0 in the training part
    would otherwise scale a rare non-zero test value to hundreds of standard deviations.
    ``mean`` and ``scale`` hold that pair once per feature.
    """
    from bnstudy.base.datasets import load_fashion

    x_all, y_all, x_test, y_test = load_fashion(data)
    index = np.arange(len(y_all))
    train_index, rest = stratified_subset(index, y_all, int(data["train_size"]), seed)
    validation_index, _ = stratified_subset(rest, y_all[rest], int(data["validation_size"]), seed)
    test_index = np.arange(len(y_test))
    if "test_size" in data:
        test_index, _ = stratified_subset(test_index, y_test, int(data["test_size"]), seed)
    mean, scale = pixel_standardisation(x_all[train_index])
    standardise = lambda x: ((x.astype(np.float64) - mean) / scale).astype(np.float32)  # noqa: E731
    features = x_all.shape[1]
    return Split(
        x_train=standardise(x_all[train_index]),
        y_train=y_all[train_index],
        x_test=standardise(x_test[test_index]),
        y_test=y_test[test_index],
        train_index=train_index,
        test_index=test_index,
        mean=np.full(features, mean),
        scale=np.full(features, scale),
        x_validation=standardise(x_all[validation_index]),
        y_validation=y_all[validation_index],
        validation_index=validation_index,
    )


def split(config: dict) -> Split:
    """The split of the config's data set (``data.name``; the digits when it names none)."""
    from bnstudy.base.datasets import DIGITS, data_config

    data = data_config(config)
    if data["name"] == DIGITS:
        return split_digits(config["split"]["seed"], config["split"]["test_size"])
    return split_fashion(data, config["split"]["seed"])


def log_uniform(u: np.ndarray, low: float, high: float) -> np.ndarray:
    """``exp(log(low) + u * (log(high) - log(low)))`` elementwise, with :mod:`bnstudy.base.fixedmath`'s
    ``exp`` and ``log``: uniforms ``u`` in [0, 1) to log-uniform values in [low, high)."""
    a, b = fixedmath.log(low), fixedmath.log(high)
    return fixedmath.exp_array(a + np.asarray(u, np.float64) * (b - a))


def irwin_hall(uniforms: np.ndarray) -> np.ndarray:
    """``u[..., 0] + u[..., 1] + ... + u[..., K-1] - K / 2``: the sum of the last axis's
    ``K`` uniforms, added left to right (one correctly rounded addition at a time),
    centred. For ``K = 12`` its variance is 1 and its shape close to a standard normal
    (bounded by +-6)."""
    total = uniforms[..., 0].astype(np.float64)
    for k in range(1, uniforms.shape[-1]):
        total = total + uniforms[..., k]
    return total - uniforms.shape[-1] / 2


def synthetic_population(seed: int, rows: int = 512, features: int = 16) -> np.ndarray:
    """An enumerated population whose statistics sit far from 0 and 1.

    One generator, ``Generator(PCG64)`` seeded from the stream ``(seed,
    STREAM_POPULATION)``, drawn in this order, only ``random()`` uniforms ``u`` in
    [0, 1):

    1. ``features`` uniforms: feature means ``-4 + 8 u``, spread over [-4, 4];
    2. ``features`` uniforms: variances log-uniform over [0.1, 10],
       ``exp(log 0.1 + u (log 10 - log 0.1))`` with :func:`bnstudy.base.fixedmath.exp` and
       :func:`~bnstudy.base.fixedmath.log`; then the first features are pinned at the
       extremes 10, 0.1, 7.5, 0.15, 5, so every seed covers both ends;
    3. ``rows x features x 12`` uniforms (C order): each value's shape is Irwin-Hall,
       the sum of its 12 uniforms added in draw order, minus 6 (:func:`irwin_hall`:
       mean 0, variance 1, close to Gaussian, bounded by +-6).

    Then each feature is centred and scaled to mean 0 and ddof-0 variance 1 with its
    own statistics (:func:`bnstudy.compiled.reductions.column_moments`: sums over rows in row
    order), and mapped to ``mean + z * sqrt(variance)``, so its population mean and
    variance are the chosen ones up to rounding (about 1e-15 relative).
    """
    rng = np.random.default_rng(derive_seed(seed, STREAM_POPULATION))
    means, variances = _parameters(rng, features)
    z = irwin_hall(rng.random((rows, features, IRWIN_HALL_TERMS)))
    m, v = column_moments(z)
    z = (z - m) / np.sqrt(v)
    return (means + z * np.sqrt(variances)).astype(np.float64)


def _parameters(rng: np.random.Generator, features: int) -> tuple[np.ndarray, np.ndarray]:
    means = -4.0 + 8.0 * rng.random(features)
    variances = log_uniform(rng.random(features), 0.1, 10.0)
    pinned = np.array(PINNED_VARIANCES)[:features]
    variances[: len(pinned)] = pinned
    return means, variances


def population_parameters(seed: int, features: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """The per-feature means and variances :func:`synthetic_population` chooses for ``seed``
    (its first draws, without the rows)."""
    return _parameters(np.random.default_rng(derive_seed(seed, STREAM_POPULATION)), features)
