"""Byte-stable, atomic outputs and the manifest comparison."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from bnstudy.base import io
from bnstudy.pipeline import manifest, valuediff
from bnstudy.pipeline.expected import config_for_expected, expected_for_config, repair_command


def test_weights_are_byte_identical_when_written_twice(tmp_path):
    state = {"0.weight": torch.arange(6.0).view(2, 3), "1.num_batches_tracked": torch.tensor(3)}
    io.write_weights(tmp_path / "a.safetensors", state, {"seed": "0", "normaliser": "batchnorm"})
    io.write_weights(
        tmp_path / "b.safetensors", dict(reversed(state.items())), {"normaliser": "batchnorm", "seed": "0"}
    )
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()
    loaded = io.read_weights(tmp_path / "a.safetensors")
    np.testing.assert_array_equal(loaded["0.weight"], state["0.weight"].numpy())  # read back as NumPy
    assert b"pickle" not in (tmp_path / "a.safetensors").read_bytes()


@pytest.mark.slow
def test_weights_are_byte_identical_across_processes(tmp_path):
    """Header order must not depend on per-process hash seeds (safetensors' own writer's does)."""
    code = textwrap.dedent(f"""
        import sys, torch
        sys.path.insert(0, {str(io.__file__.rsplit("/bnstudy", 1)[0])!r})
        from bnstudy.base import io
        meta = {{k: str(i) for i, k in enumerate(["seed", "normaliser", "widths", "groups", "eps", "momentum", "lr"])}}
        state = {{f"{{i}}.weight": torch.full((2, 2), float(i)) for i in range(7)}}
        io.write_weights(sys.argv[1], state, meta)
    """)
    for i in range(3):
        subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / f"w{i}.safetensors")],
            check=True,
            env={"PYTHONHASHSEED": str(i), "PATH": os.environ.get("PATH", "")},
        )
    blobs = {(tmp_path / f"w{i}.safetensors").read_bytes() for i in range(3)}
    assert len(blobs) == 1


def test_arrays_tables_and_json_are_byte_stable(tmp_path):
    for i in range(2):
        io.write_array(tmp_path / f"a{i}.npy", np.linspace(0, 1, 7, dtype=np.float32))
        io.write_table(tmp_path / f"t{i}.csv", pd.DataFrame({"x": [0.1, 1 / 3], "y": ["a", "b"]}))
        io.write_json(tmp_path / f"j{i}.json", {"b": 1.0 / 3, "a": [1, 2]})
    for stem in ("a", "t", "j"):
        ext = {"a": "npy", "t": "csv", "j": "json"}[stem]
        assert (tmp_path / f"{stem}0.{ext}").read_bytes() == (tmp_path / f"{stem}1.{ext}").read_bytes()
    assert io.read_table(tmp_path / "t0.csv")["x"].tolist() == [0.1, 1 / 3], "floats round-trip exactly"


def _tables_of_rows() -> list[list[dict]]:
    """Row tables of every kind io.plain_csv writes or declines, edge values included."""
    rng = np.random.default_rng(0)
    edge = [0.0, -0.0, 1.0, 0.1, 1e16, 1e15, 1e-5, 1e-4, 123456789.0, 5e-324, 1.7976931348623157e308, 2.5e-7, -3.0]
    edge += [float("nan"), float("inf"), float("-inf"), 1 / 3, 2.0**60]
    floats = edge + [float(v) for v in rng.standard_normal(40) * 10.0 ** rng.integers(-12, 12, 40)]
    ints = [0, -1, 7, 2**62, -(2**63), 10**20]
    tables = [
        [{"normaliser": "batchnorm", "seed": i, "epoch": i + 1, "loss": v} for i, v in enumerate(floats)],
        [{"a": np.float64(v), "b": np.int64(i), "c": int(i)} for i, v in enumerate(floats)],
        [{"x": v} for v in ints],
        [{"only": v} for v in floats],  # one column with NaN: csv quotes a lone empty cell
        [{"s": "a b", "t": " lead"}, {"s": "nan", "t": "1.5"}],
        [{"a": 1, "b": 2.0}, {"a": 2.5, "b": 3.0}],  # int and float in one column: floats
        [{"a": True, "b": 1}],  # bools
        [{"a": 1, "b": 2}, {"b": 2, "a": 1}],  # keys in another order
        [{"a": 1}, {"a": 2, "b": 3}],  # a key missing
        [{"a": "x,y"}],
        [{"a": 'say "hi"'}],
        [{"a": ""}],
        [{"a": None, "b": 1.0}],
        [{"a": np.float32(0.1)}],
        [{"a,b": 1}],
        [{1: 2}],
        [],
        [{}],
    ]
    return tables


def test_rows_are_written_without_pandas_with_the_bytes_pandas_writes(tmp_path):
    """io.write_table writes simple row tables itself (no pandas import in a training job); the bytes are
    pandas' to_csv, and every table it declines goes through pandas."""
    written = 0
    for i, rows in enumerate(_tables_of_rows()):
        by_pandas = pd.DataFrame(rows).to_csv(index=False, lineterminator="\n")
        text = io.plain_csv(rows)
        assert text is None or text == by_pandas, (rows, text, by_pandas)
        written += text is not None
        path = tmp_path / f"t{i}.csv"
        io.write_table(path, rows)
        assert path.read_text() == by_pandas, rows
    assert written >= 4


def test_outputs_get_the_permissions_of_a_plainly_created_file(tmp_path):
    """Not the owner-only mode of the temporary file they are written through."""
    old = os.umask(0o022)
    try:
        io.write_text(tmp_path / "shared.txt", "x")
        os.umask(0o077)
        io.write_text(tmp_path / "private.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "shared.txt").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "private.txt").stat().st_mode & 0o777 == 0o600


def test_a_failed_write_leaves_no_file_behind(tmp_path):
    target = tmp_path / "out.csv"
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_process_killed_mid_write_leaves_no_file_that_looks_finished(tmp_path):
    """SIGKILL while writing: the target path never holds a partial file."""
    target = tmp_path / "big.npy"
    code = textwrap.dedent(f"""
        import os, sys, numpy as np
        sys.path.insert(0, {str(io.__file__.rsplit("/bnstudy", 1)[0])!r})
        from bnstudy.base import io
        with io.atomic_path({str(target)!r}) as tmp:
            with open(tmp, "wb") as f:
                f.write(b"x" * 1000)
                f.flush()
                print("writing", flush=True)
                sys.stdin.read()  # blocks: killed here
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not target.exists()


def _table(rows):
    return pd.DataFrame(rows, columns=manifest.COLUMNS)


def test_first_difference_names_the_first_rule_in_dag_order():
    a = _table(
        [
            ["split", "", "d/x", 1, "aa"],
            ["train", "n=1", "r/w1", 1, "bb"],
            ["train", "n=2", "r/w2", 1, "cc"],
            ["paper", "", "p.pdf", 1, "dd"],
        ]
    )
    b = _table(
        [
            ["split", "", "d/x", 1, "aa"],
            ["train", "n=1", "r/w1", 1, "bb"],
            ["train", "n=2", "r/w2", 1, "XX"],
            ["paper", "", "p.pdf", 1, "YY"],
        ]
    )
    diff = manifest.first_difference(a, b)
    assert diff["path"].tolist() == ["r/w2"]
    assert manifest.first_difference(a, a).empty


def test_manifest_hashes_match_hashlib(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    table = manifest.build([("r", "", str(tmp_path / "f"))])
    assert table.loc[0, "sha256"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert table.loc[0, "bytes"] == 3


# ---- values that moved, and the expected manifest ------------------------------


def test_value_diff_lists_json_leaves_that_moved_by_key_path(tmp_path):
    (tmp_path / "a.json").write_text('{"acc": {"batchnorm": [0.857, 0.9], "none": 0.8}, "n": 3, "gone": 1}')
    (tmp_path / "b.json").write_text('{"acc": {"batchnorm": [0.843, 0.9], "none": 0.8}, "n": 3, "new": "x"}')
    assert valuediff.value_diff(tmp_path / "a.json", tmp_path / "b.json", label="r/s.json") == [
        "r/s.json: acc.batchnorm[0]: 0.857 -> 0.843",
        "r/s.json: gone: 1 -> (missing)",
        'r/s.json: new: (missing) -> "x"',
    ]
    assert valuediff.value_diff(tmp_path / "a.json", tmp_path / "a.json") == []


def test_value_diff_lists_csv_cells_that_moved_with_their_row_labels(tmp_path):
    (tmp_path / "a.csv").write_text("normaliser,batch_size,acc,loss\nbatchnorm,2,0.857,1.5\nnone,2,0.8,1.25\n")
    (tmp_path / "b.csv").write_text("normaliser,batch_size,acc,loss\nbatchnorm,2,0.843,1.5\nnone,2,0.8,1.0\n")
    assert valuediff.value_diff(tmp_path / "a.csv", tmp_path / "b.csv", label="t.csv") == [
        "t.csv: row 1 (normaliser=batchnorm, batch_size=2): acc: 0.857 -> 0.843",
        "t.csv: row 2 (normaliser=none, batch_size=2): loss: 1.25 -> 1.0",
    ]
    (tmp_path / "c.csv").write_text("normaliser,batch_size,acc,loss\nbatchnorm,2,0.857,1.5\n")
    assert valuediff.value_diff(tmp_path / "a.csv", tmp_path / "c.csv", label="t.csv") == ["t.csv: rows: 2 -> 1"]


def test_value_diff_stops_at_its_limit_and_says_how_many_more(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({f"k{i}": i for i in range(50)}))
    (tmp_path / "b.json").write_text(json.dumps({f"k{i}": -i for i in range(1, 51)} | {"k0": 0}))
    lines = valuediff.value_diff(tmp_path / "a.json", tmp_path / "b.json", label="x", limit=20)
    assert len(lines) == 20 and lines[-1] == "x: ... and 31 more values moved"


def _run_dir(root, files):
    """A run directory with ``files`` (path -> text) and its manifest in rule order."""
    entries = []
    for rule, path, text in files:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
        entries.append((rule, "", path))
    cwd = os.getcwd()
    os.chdir(root)
    try:
        manifest.write("results/manifest.tsv", manifest.build(entries))
    finally:
        os.chdir(cwd)
    return root / "results" / "manifest.tsv"


FILES = [
    ("split", "results/data/y.csv", "y\n1\n"),
    ("evaluate", "results/eval/summary.json", '{"acc": 0.857}'),
    ("evaluate", "results/eval/table.csv", "normaliser,acc\nbatchnorm,0.857\n"),
    ("paper", "paper/main.pdf", "%PDF a"),
]


def test_compare_names_the_first_rule_and_the_values_that_moved(tmp_path):
    from bnstudy.pipeline import determinism

    a = _run_dir(tmp_path / "a", FILES)
    moved = [
        FILES[0],
        (*FILES[1][:2], '{"acc": 0.843}'),
        (*FILES[2][:2], "normaliser,acc\nbatchnorm,0.843\n"),
        (*FILES[3][:2], "%PDF b"),
    ]
    b = _run_dir(tmp_path / "b", moved)
    assert determinism.compare({"one": a, "two": _run_dir(tmp_path / "c", FILES)}) == []
    [problem] = determinism.compare({"one": a, "two": b})
    assert problem.splitlines() == [
        "two differs from one: first rule in DAG order: evaluate; "
        "files: results/eval/summary.json, results/eval/table.csv",
        "  results/eval/summary.json: acc: 0.857 -> 0.843",
        "  results/eval/table.csv: row 1 (normaliser=batchnorm): acc: 0.857 -> 0.843",
    ]


@pytest.mark.slow
def test_verify_says_identical_or_names_the_first_differing_rule_and_pinned_values(tmp_path):
    expected = tmp_path / "config" / "expected" / "t.manifest.tsv"
    expected.parent.mkdir(parents=True)
    good = _run_dir(tmp_path / "good", FILES)
    expected.write_bytes(good.read_bytes())
    assert manifest.verify(expected, good.parent) == (True, ["identical: 4 files"])
    assert manifest.main(["verify", "--expected", str(expected), "--results", str(good.parent)]) == 0

    bad = _run_dir(tmp_path / "bad", [FILES[0], (*FILES[1][:2], '{"acc": 0.843}'), FILES[2]])  # and no PDF
    macros = bad.parent / "paper" / "macros"
    macros.mkdir(parents=True)
    (macros / "eval.tex").write_text("\\newcommand{\\acc}{0.843}\n")
    pins = tmp_path / "config" / "pinned" / "t.yaml"
    pins.parent.mkdir(parents=True)
    pins.write_text(yaml.safe_dump({"config": "t", "values": {"eval:acc": {"value": 0.857, "tolerance": 0.001}}}))
    identical, lines = manifest.verify(expected, bad.parent)  # the pins file found beside the expected
    assert not identical
    assert lines[0] == (
        f"NOT IDENTICAL to {expected}: 1 different from the expected bytes, 1 missing (in 2 rules, DAG order):"
    )
    assert lines[1:3] == ["evaluate: 1 file", lines[2]]
    assert lines[2].startswith("  results/eval/summary.json: different from the expected bytes (bytes 14 -> 14, ")
    assert lines[3:5] == ["paper: 1 file", "  paper/main.pdf: missing"]
    assert lines[5] == "repair: make repair CONFIG=config/t.yaml re-creates these files (docs/verify.md)"
    assert lines[6] == f"pinned values ({pins.resolve()}):"
    assert lines[7].startswith("  DRIFT: eval:acc: moved from 0.857 to 0.843")
    assert manifest.main(["verify", "--expected", str(expected), "--results", str(bad.parent)]) == 1


def test_verify_without_an_expected_manifest_says_how_to_create_it(tmp_path):
    good = _run_dir(tmp_path / "good", FILES)
    identical, [line, checked] = manifest.verify(tmp_path / "none.manifest.tsv", good.parent)
    assert not identical and "python -m bnstudy.pipeline.manifest expected --results" in line
    assert checked == f"every file is as {good} records it"


def test_expected_writes_the_manifest_and_lists_the_rules_that_changed(tmp_path):
    out = tmp_path / "expected" / "t.manifest.tsv"
    good = _run_dir(tmp_path / "good", FILES)
    assert manifest.write_expected(good.parent, out) == (4, [])
    assert out.read_bytes() == good.read_bytes()
    moved = _run_dir(tmp_path / "moved", [FILES[0], (*FILES[1][:2], '{"acc": 0.843}'), *FILES[2:]])
    assert manifest.write_expected(moved.parent, out) == (4, ["  evaluate: 1 files"])
    assert manifest.verify(out, moved.parent)[0]


# ---- the files on disk: missing, damaged, different ------------------------------


def _expected_of(tmp_path, manifest_path):
    expected = tmp_path / "config" / "expected" / "t.manifest.tsv"
    expected.parent.mkdir(parents=True, exist_ok=True)
    expected.write_bytes(manifest_path.read_bytes())
    return expected


def _problems(expected, results):
    problems, notes = manifest.check_files(expected, results)
    assert notes == []
    return dict(zip(problems["path"], problems["problem"]))


def test_verify_hashes_the_files_and_names_each_missing_or_changed_one_by_rule(tmp_path):
    """What is on disk, not the manifest written at build time: a truncated, an edited and a deleted
    file are each named, under their rule, in DAG order; the build's manifest still says identical."""
    built = _run_dir(tmp_path / "wf", FILES)
    expected = _expected_of(tmp_path, built)
    root = built.parents[1]
    assert manifest.verify(expected, built.parent) == (True, ["identical: 4 files"])
    summary = root / "results/eval/summary.json"
    summary.write_bytes(summary.read_bytes()[:5])  # truncated
    (root / "paper/main.pdf").write_text("%PDF edited")
    (root / "results/data/y.csv").unlink()
    assert built.read_bytes() == expected.read_bytes()  # the manifests alone would say identical
    assert _problems(expected, built.parent) == {
        "results/data/y.csv": manifest.MISSING,
        "results/eval/summary.json": manifest.CHANGED,
        "paper/main.pdf": manifest.CHANGED,
    }
    identical, lines = manifest.verify(expected, built.parent)
    assert not identical
    assert lines[0] == (f"NOT IDENTICAL to {expected}: 1 missing, 2 changed after its build (in 3 rules, DAG order):")
    assert lines[1:3] == ["split: 1 file", "  results/data/y.csv: missing"]
    assert lines[3] == "evaluate: 1 file"
    assert lines[4].startswith("  results/eval/summary.json: changed after its build (bytes 14 -> 5, sha256 ")
    assert lines[5] == "paper: 1 file"
    assert lines[6].startswith("  paper/main.pdf: changed after its build (bytes 6 -> 11, ")
    assert lines[7] == "repair: make repair CONFIG=config/t.yaml re-creates these files (docs/verify.md)"
    assert len(lines) == 8


def test_verify_names_a_lost_or_damaged_build_manifest(tmp_path):
    built = _run_dir(tmp_path / "wf", FILES)
    expected = _expected_of(tmp_path, built)
    text = built.read_text()
    built.write_text(text.replace(manifest.sha256(tmp_path / "wf/results/eval/table.csv"), "0" * 64))
    assert _problems(expected, built.parent) == {"results/manifest.tsv": manifest.CHANGED}
    built.write_text(text[: len(text) // 2])  # cut inside a row
    assert _problems(expected, built.parent) == {"results/manifest.tsv": manifest.CHANGED}
    built.write_bytes(b"\xff\xfe not a table")
    assert _problems(expected, built.parent)["results/manifest.tsv"].startswith("unreadable")
    built.unlink()
    problems, _ = manifest.check_files(expected, built.parent)
    assert problems.to_dict("records") == [
        {
            "rule": "manifest",
            "wildcards": "",
            "path": "results/manifest.tsv",
            "problem": manifest.MISSING,
            "detail": "the build did not finish, or its manifest was lost",
        }
    ]  # every file still checked against the expected manifest: all whole
    (tmp_path / "wf/results/eval/table.csv").write_text("x")
    assert _problems(expected, built.parent) == {
        "results/eval/table.csv": manifest.DIFFERENT,
        "results/manifest.tsv": manifest.MISSING,
    }


def test_verify_tells_a_build_of_other_bytes_from_damage_and_lists_unexpected_outputs(tmp_path):
    expected = _expected_of(tmp_path, _run_dir(tmp_path / "ref", FILES))
    other = _run_dir(tmp_path / "wf", [*FILES[:3], (*FILES[3][:2], "%PDF other"), ("extra", "results/x.csv", "x\n")])
    assert _problems(expected, other.parent) == {
        "paper/main.pdf": manifest.DIFFERENT,  # the build recorded these bytes: not damaged after it
        "results/x.csv": manifest.UNEXPECTED,
    }
    identical, lines = manifest.verify(expected, other.parent)
    assert not identical and lines[-1] == (
        "repair: make repair CONFIG=config/t.yaml re-creates the missing, changed and different files (docs/verify.md)"
    )
    rows_only = _run_dir(tmp_path / "rows", [FILES[1], FILES[0], *FILES[2:]])  # same files, other order
    assert _problems(expected, rows_only.parent) == {"results/manifest.tsv": manifest.DIFFERENT}


def test_config_and_expected_manifest_and_repair_command_name_each_other():
    assert expected_for_config("config/config.yaml") == Path("config/expected/paper.manifest.tsv")
    assert expected_for_config("config/test.yaml") == Path("config/expected/test.manifest.tsv")
    assert config_for_expected("config/expected/paper.manifest.tsv") == Path("config/config.yaml")
    assert config_for_expected("config/expected/test.manifest.tsv") == Path("config/test.yaml")
    assert repair_command("config/expected/paper.manifest.tsv") == "make repair"
    assert repair_command("config/expected/test.manifest.tsv") == "make repair CONFIG=config/test.yaml"


# ---- readers name a bad file --------------------------------------------------------


def _outputs(tmp_path):
    io.write_weights(tmp_path / "w.safetensors", {"a": np.arange(64, dtype=np.float32)}, {"seed": "0"})
    io.write_array(tmp_path / "a.npy", np.arange(64, dtype=np.float32))
    io.write_table(tmp_path / "t.csv", pd.DataFrame({"x": [0.5, 1.5, 2.5], "name": ["a", "b", "c"]}))
    io.write_json(tmp_path / "j.json", {"acc": [0.5, 0.25], "n": 3})
    return {
        "w.safetensors": (io.read_weights, io.read_metadata),
        "a.npy": (io.read_array,),
        "t.csv": (io.read_table,),
        "j.json": (io.read_json,),
    }


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbled", "missing"])
def test_readers_raise_one_line_naming_the_file_and_the_repair(tmp_path, damage):
    for name, readers in _outputs(tmp_path).items():
        path = tmp_path / name
        data = path.read_bytes()
        if damage == "truncated":
            path.write_bytes(data[: len(data) // 2 + 3])
        elif damage == "empty":
            path.write_bytes(b"")
        elif damage == "garbled":
            path.write_bytes(b"\x93NUMPY\x01\x00{'descr" if name == "a.npy" else bytes(range(256)) * 2)
        else:
            path.unlink()
        for reader in readers:
            with pytest.raises(io.DamagedOutput) as caught:
                reader(path)
            message = str(caught.value)
            assert message.startswith(f"bnstudy: {path}: ") and "\n" not in message, message
            assert ("missing output" if damage == "missing" else "damaged output (") in message, message
            assert "`make repair` re-creates it" in message
            assert isinstance(caught.value, ValueError) and caught.value.code == message  # exits with the line


def test_readers_read_whole_outputs_as_before(tmp_path):
    readers = _outputs(tmp_path)
    assert io.read_metadata(tmp_path / "w.safetensors") == {"seed": "0"}
    assert set(readers) == {"w.safetensors", "a.npy", "t.csv", "j.json"}
    np.testing.assert_array_equal(io.read_weights(tmp_path / "w.safetensors")["a"], np.arange(64, dtype=np.float32))
    np.testing.assert_array_equal(io.read_array(tmp_path / "a.npy"), np.arange(64, dtype=np.float32))
    assert io.read_table(tmp_path / "t.csv")["name"].tolist() == ["a", "b", "c"]
    assert io.read_json(tmp_path / "j.json") == {"acc": [0.5, 0.25], "n": 3}


@pytest.mark.slow
def test_a_rule_script_reading_a_damaged_output_ends_with_one_line(tmp_path):
    """Uncaught, as in a rule script: the line on stderr, exit status 1, no traceback."""
    io.write_weights(tmp_path / "w.safetensors", {"a": np.arange(64, dtype=np.float32)}, {"seed": "0"})
    data = (tmp_path / "w.safetensors").read_bytes()
    (tmp_path / "w.safetensors").write_bytes(data[: len(data) // 2])
    code = f"import sys; sys.path.insert(0, {str(Path(io.__file__).parents[2])!r}); from bnstudy.base import io; "
    code += "io.read_weights('w.safetensors')"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.splitlines() == [
        "bnstudy: w.safetensors: damaged output (Error while deserializing header: incomplete metadata, "
        "file not fully covered); " + io.REPAIR
    ]


def test_snakemake_of_another_copy_runs_without_the_kernel_cache_this_import_chose(monkeypatch):
    """Another copy's package names its own cache; a digest of this checkout's modules (even one taken
    before they were edited) is dropped, a directory the user chose is kept."""
    import bnstudy

    ours = Path(bnstudy._numba_cache_dir())
    for chosen in (ours, ours.parent / "numba-0123456789abcdef"):
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(chosen))
        assert "NUMBA_CACHE_DIR" not in manifest.workflow_environment()
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/somewhere/chosen")
    assert manifest.workflow_environment()["NUMBA_CACHE_DIR"] == "/somewhere/chosen"
    assert manifest.workflow_environment({"A": "1"}) == {"A": "1"}


def test_a_killed_run_may_lack_files_but_never_holds_a_half_written_one(tmp_path):
    """bnstudy.pipeline.workflowrun.check_killed: after a kill, files missing is fine; a file on disk with other
    bytes than expected (half-written), or a build that already verifies, is an error."""
    from bnstudy.pipeline import workflowrun

    wf = tmp_path / "wf"
    built = _run_dir(wf, FILES)
    expected = wf / "config" / "expected" / "t.manifest.tsv"
    expected.parent.mkdir(parents=True)
    expected.write_bytes(built.read_bytes())
    with pytest.raises(RuntimeError, match="verifies as complete"):
        workflowrun.check_killed(wf, "config/t.yaml")
    built.unlink()
    (wf / "paper/main.pdf").unlink()
    assert workflowrun.check_killed(wf, "config/t.yaml") == {"checked": True, "whole": 3, "expected": 4}
    (wf / "results/eval/table.csv").write_text("normaliser,acc\nbatch")
    with pytest.raises(RuntimeError, match=r"not the expected bytes: evaluate: 1 file; +results/eval/table.csv"):
        workflowrun.check_killed(wf, "config/t.yaml")
    assert workflowrun.check_killed(wf, "config/other.yaml") == {"checked": False}


@pytest.mark.slow
def test_the_commands_of_a_runs_session_are_seen(tmp_path):
    from bnstudy.pipeline import workflowrun

    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; time.sleep(30)'])",
        ],
        start_new_session=True,
    )
    try:
        for _ in range(200):
            commands = workflowrun.session_commands(proc.pid)
            if any("time.sleep(30)" in c for c in commands):
                break
            time.sleep(0.05)
        assert any("time.sleep(30)" in c for c in commands), commands  # the child, in the same session
        assert not any("time.sleep(30)" in c for c in workflowrun.session_commands(os.getsid(0)))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
