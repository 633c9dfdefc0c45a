"""The data: the digits split's fixed-order standardisation, the idx reader and its hash check on
files written here, Fashion-MNIST's exact standardisation and subsets, the enumerated population."""

from __future__ import annotations

import numpy as np
import pytest

from bnstudy.base import datasets
from bnstudy.base.datasets import DataSetError, check_files, read_idx, write_idx
from bnstudy.nets import data
from bnstudy.nets.data import PINNED_VARIANCES, population_parameters, synthetic_population


@pytest.fixture(scope="module")
def split():
    return data.split_digits(0)


# ---- the digits split -----------------------------------------------------------------
def test_split_sizes_and_stratification(split):
    assert len(split.y_train) == 898 and len(split.y_test) == 899
    assert set(split.train_index).isdisjoint(split.test_index)
    counts_train, counts_test = np.bincount(split.y_train), np.bincount(split.y_test)
    assert np.all(np.abs(counts_train - counts_test) <= 1)


def test_standardisation_matches_numpy_mean_and_population_std(split):
    from sklearn.datasets import load_digits

    x = load_digits().data.astype(np.float64)[split.train_index]
    expected_scale = x.std(0)
    constant = expected_scale == 0
    assert constant.any()  # the digits have constant border pixels
    expected_scale[constant] = 1.0
    np.testing.assert_allclose(split.mean, x.mean(0), rtol=1e-14, atol=0)
    np.testing.assert_allclose(split.scale, expected_scale, rtol=1e-13, atol=0)
    np.testing.assert_array_equal(split.scale[constant], 1.0)


def test_standardisation_is_row_order_sums_bit_for_bit(split):
    from sklearn.datasets import load_digits

    x = load_digits().data.astype(np.float64)[split.train_index]
    s = np.zeros(x.shape[1])
    for row in x:
        s = s + row
    mean = s / len(x)
    q = np.zeros(x.shape[1])
    for row in x:
        q = q + (row - mean) * (row - mean)
    scale = np.sqrt(q / len(x))
    scale[scale == 0] = 1.0
    np.testing.assert_array_equal(split.mean, mean)
    np.testing.assert_array_equal(split.scale, scale)
    np.testing.assert_array_equal(split.x_train, ((x - mean) / scale).astype(np.float32))


def test_standardised_training_half_has_mean_zero_and_unit_variance(split):
    x = split.x_train.astype(np.float64)
    varying = split.scale != 1.0
    np.testing.assert_allclose(x.mean(0), 0.0, atol=1e-6)
    np.testing.assert_allclose(x.var(0)[varying], 1.0, rtol=1e-5)


def test_split_gives_the_same_bytes_twice(split):
    again = data.split_digits(0)
    for name in ("x_train", "y_train", "x_test", "y_test", "train_index", "test_index", "mean", "scale"):
        assert getattr(split, name).tobytes() == getattr(again, name).tobytes(), name


# ---- the enumerated population -------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_population_has_exactly_the_chosen_means_and_variances(seed):
    x = synthetic_population(seed, 512, 16)
    means, variances = population_parameters(seed, 16)
    assert x.shape == (512, 16) and x.dtype == np.float64
    # NumPy's own reductions: an independent computation of the population's statistics
    np.testing.assert_allclose(x.mean(0), means, rtol=0, atol=1e-12)
    np.testing.assert_allclose(x.var(0), variances, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(variances[:5], PINNED_VARIANCES)


def test_chosen_statistics_cover_the_design_ranges():
    means, variances = population_parameters(0, 200)
    assert means.min() >= -4 and means.max() <= 4 and means.min() < -3 and means.max() > 3
    assert variances.min() >= 0.1 and variances.max() <= 10
    # log-uniform: about as many below 1 as above
    assert 70 < np.sum(variances < 1.0) < 130


def test_log_uniform_variances_match_numpy_exp_log():
    u = np.random.default_rng(0).random(1000)
    expected = np.exp(np.log(0.1) + u * (np.log(10.0) - np.log(0.1)))
    np.testing.assert_allclose(data.log_uniform(u, 0.1, 10.0), expected, rtol=1e-14)


def test_irwin_hall_adds_left_to_right_and_is_about_standard_normal():
    u = np.random.default_rng(1).random((20000, 12))
    z = data.irwin_hall(u)
    for row, value in zip(u[:50], z[:50]):
        total = float(row[0])
        for v in row[1:]:
            total += float(v)  # left to right, one rounding each (not Python 3.12's compensated sum())
        assert value == total - 6.0
    np.testing.assert_allclose(z, u.sum(-1) - 6.0, atol=1e-13)
    assert abs(z.mean()) < 0.03 and abs(z.var() - 1.0) < 0.03
    assert np.abs(z).max() <= 6.0
    assert abs(np.mean(np.abs(z) < 1.0) - 0.6827) < 0.015  # one-sigma share of a normal


def test_population_gives_the_same_bytes_twice_and_depends_on_the_seed():
    a, b, c = synthetic_population(0), synthetic_population(0), synthetic_population(1)
    assert a.tobytes() == b.tobytes()
    assert not np.array_equal(a, c)


# ---- idx files and their hash check (files written by the test) -----------------------


def _idx_bytes(array: np.ndarray) -> bytes:
    """An idx file by hand: magic 0x0000 0x08 ndim, big-endian sizes, the bytes."""
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    return header + array.astype(np.uint8).tobytes()


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_idx_reader_reads_images_and_labels_written_by_hand(tmp_path, suffix):
    import gzip

    images = np.random.default_rng(0).integers(0, 256, (5, 28, 28)).astype(np.uint8)
    labels = np.array([9, 0, 3, 3, 7], np.uint8)
    for name, array in (("images", images), ("labels", labels)):
        raw = _idx_bytes(array)
        path = tmp_path / f"{name}{suffix}"
        path.write_bytes(gzip.compress(raw) if suffix else raw)
        got = read_idx(path)
        assert got.dtype == np.uint8 and got.shape == array.shape
        np.testing.assert_array_equal(got, array)
    # the first image's first row, big-endian header: 3 dimensions of 5, 28 and 28
    assert _idx_bytes(images)[:16] == bytes.fromhex("00000803000000050000001c0000001c")


def test_write_idx_round_trips_and_is_byte_stable(tmp_path):
    a = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    write_idx(tmp_path / "a.gz", a)
    write_idx(tmp_path / "b.gz", a)
    assert (tmp_path / "a.gz").read_bytes() == (tmp_path / "b.gz").read_bytes()
    np.testing.assert_array_equal(read_idx(tmp_path / "a.gz"), a)


@pytest.mark.parametrize(
    "raw,message",
    [
        (
            b"\x00\x00\x0c\x01" + (3).to_bytes(4, "big") + b"abc",
            "not an idx file of unsigned bytes (magic number 0x00000c01",
        ),
        (b"\x01\x00\x08\x01" + (3).to_bytes(4, "big") + b"abc", "magic number 0x01000801"),
        (b"\x00\x00\x08\x00", "magic number 0x00000800"),
        (b"\x00\x00", "not an idx file (2 bytes"),
        (b"\x00\x00\x08\x03" + (2).to_bytes(4, "big"), "idx header cut short (8 of 16 bytes)"),
        (
            b"\x00\x00\x08\x01" + (5).to_bytes(4, "big") + b"abc",
            "idx data cut short (3 bytes after the header, 5 = 5 expected)",
        ),
        (
            b"\x00\x00\x08\x02" + (2).to_bytes(4, "big") * 2 + b"abcde",
            "followed by extra bytes (5 bytes after the header, 2x2 = 4",
        ),
    ],
)
def test_idx_reader_refuses_a_bad_file_with_one_line_naming_it(tmp_path, raw, message):
    path = tmp_path / "bad-idx1-ubyte"
    path.write_bytes(raw)
    with pytest.raises(DataSetError) as e:
        read_idx(path)
    text = str(e.value)
    assert "\n" not in text and str(path) in text and message in text, text
    assert isinstance(e.value, SystemExit) and e.value.code == 1  # uncaught: that line, status 1


def test_idx_reader_refuses_a_truncated_gzip_file(tmp_path):
    import gzip

    whole = gzip.compress(_idx_bytes(np.zeros((100, 28, 28), np.uint8)))
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DataSetError, match=r"train-images-idx3-ubyte.gz: not a readable gzip file \(EOFError"):
        read_idx(path)
    path.write_bytes(b"not gzip at all")
    with pytest.raises(DataSetError, match="not a readable gzip file"):
        read_idx(path)


def _fake_fashion(directory):
    """Four small idx files under Fashion-MNIST's names, and a data section naming their sha256."""
    rng = np.random.default_rng(3)
    sha = {}
    for key, name in datasets.FASHION_FILES.items():
        shape = (20, 28, 28) if key.endswith("images") else (20,)
        write_idx(directory / name, rng.integers(0, 10 if key.endswith("labels") else 256, shape))
        sha[key] = datasets.sha256(directory / name)
    return {"name": "fashion_mnist", "directory": str(directory), "sha256": sha}


def test_hash_check_passes_the_configured_files_and_names_a_file_with_another_hash(tmp_path):
    data = _fake_fashion(tmp_path)
    check_files(data)  # every file there with its configured sha256
    target = tmp_path / datasets.FASHION_FILES["test_labels"]
    raw = bytearray(target.read_bytes())
    raw[-5] ^= 1  # one bit
    target.write_bytes(bytes(raw))
    with pytest.raises(DataSetError) as e:
        check_files(data)
    text = str(e.value)
    assert "\n" not in text and text.startswith(f"bnstudy: {target}: sha256 ")
    assert f"is not data.sha256.test_labels {data['sha256']['test_labels'][:16]}" in text
    # and the hash is read from the bytes: the configured one of another file is refused too
    data = _fake_fashion(tmp_path)
    data["sha256"]["train_images"] = data["sha256"]["train_labels"]
    with pytest.raises(DataSetError, match="train-images-idx3-ubyte.gz: sha256 .* is not data.sha256.train_images"):
        check_files(data)


def test_hash_check_names_the_apt_command_for_a_missing_file():
    data = {"name": "fashion_mnist", "directory": datasets.FASHION_DIRECTORY, "sha256": {}}
    real = datasets.missing_files(data)
    moved = dict(data, directory="/nonexistent/fashion-mnist")
    with pytest.raises(DataSetError) as e:
        check_files(moved)
    assert "\n" not in str(e.value) and "/nonexistent/fashion-mnist/train-images-idx3-ubyte.gz is missing" in str(
        e.value
    )
    assert "apt-get install dataset-fashion-mnist" in str(e.value)
    if real:  # the package's own directory, without the package: the apt command alone
        with pytest.raises(DataSetError, match=r"is missing: apt-get install dataset-fashion-mnist \(Debian"):
            check_files(data)


def test_the_digits_have_no_files_to_check():
    check_files({"name": "digits"})
    assert datasets.missing_files({"name": "digits"}) == []


def test_load_fashion_refuses_files_of_another_shape_naming_the_file(tmp_path):
    data = _fake_fashion(tmp_path)  # 20 images, not 60,000
    with pytest.raises(
        DataSetError, match=r"train-images-idx3-ubyte.gz: images of shape \(20, 28, 28\), expected \(60000, 28, 28\)"
    ):
        datasets.load_fashion(data)


def test_package_command_names_the_package_only_where_it_is_missing(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("data:\n  name: digits\n")
    assert datasets.main(["package", str(config)]) == 0
    assert capsys.readouterr().out == ""
    config.write_text(f"data: {{name: fashion_mnist, directory: {datasets.FASHION_DIRECTORY}}}\n")
    assert datasets.main(["package", str(config)]) == 0
    missing = bool(datasets.missing_files({"name": "fashion_mnist", "directory": datasets.FASHION_DIRECTORY}))
    assert capsys.readouterr().out == ("dataset-fashion-mnist\n" if missing else "")


# ---- Fashion-MNIST's standardisation and subsets --------------------------------------
def test_pixel_standardisation_is_numpys_mean_and_population_std_correctly_rounded():
    from fractions import Fraction

    x = np.random.default_rng(5).integers(0, 256, (300, 784)).astype(np.uint8)
    mean, scale = data.pixel_standardisation(x)
    values = x.astype(np.float64).reshape(-1)
    np.testing.assert_allclose(mean, values.mean(), rtol=1e-15)
    np.testing.assert_allclose(scale, values.std(), rtol=1e-14)
    ints = [int(v) for v in x.reshape(-1)]
    exact_mean = Fraction(sum(ints), len(ints))
    assert mean == float(exact_mean)  # one rounding of the exact value
    exact_var = sum((v - exact_mean) ** 2 for v in ints) / len(ints)
    assert scale == float(np.sqrt(float(exact_var)))
    assert data.pixel_standardisation(np.full((3, 4), 7, np.uint8)) == (7.0, 1.0)  # constant: scale 1


def test_stratified_subset_keeps_class_shares_and_is_seeded():
    y = np.repeat(np.arange(10), 60)
    index = np.arange(len(y))
    chosen, rest = data.stratified_subset(index, y, 100, seed=0)
    assert len(chosen) == 100 and len(rest) == 500 and set(chosen).isdisjoint(rest)
    assert np.bincount(y[chosen]).tolist() == [10] * 10
    again, _ = data.stratified_subset(index, y, 100, seed=0)
    other, _ = data.stratified_subset(index, y, 100, seed=1)
    assert again.tobytes() == chosen.tobytes() and not np.array_equal(other, chosen)
    every, none = data.stratified_subset(index, y, len(y), seed=0)
    assert np.array_equal(every, index) and len(none) == 0
