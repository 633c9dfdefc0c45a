"""Byte-stable, atomic outputs and the manifest comparison."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from bnstudy import io, manifest


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
        from bnstudy import io
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
        from bnstudy import io
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
    assert manifest.value_diff(tmp_path / "a.json", tmp_path / "b.json", label="r/s.json") == [
        "r/s.json: acc.batchnorm[0]: 0.857 -> 0.843",
        "r/s.json: gone: 1 -> (missing)",
        'r/s.json: new: (missing) -> "x"',
    ]
    assert manifest.value_diff(tmp_path / "a.json", tmp_path / "a.json") == []


def test_value_diff_lists_csv_cells_that_moved_with_their_row_labels(tmp_path):
    (tmp_path / "a.csv").write_text("normaliser,batch_size,acc,loss\nbatchnorm,2,0.857,1.5\nnone,2,0.8,1.25\n")
    (tmp_path / "b.csv").write_text("normaliser,batch_size,acc,loss\nbatchnorm,2,0.843,1.5\nnone,2,0.8,1.0\n")
    assert manifest.value_diff(tmp_path / "a.csv", tmp_path / "b.csv", label="t.csv") == [
        "t.csv: row 1 (normaliser=batchnorm, batch_size=2): acc: 0.857 -> 0.843",
        "t.csv: row 2 (normaliser=none, batch_size=2): loss: 1.25 -> 1.0",
    ]
    (tmp_path / "c.csv").write_text("normaliser,batch_size,acc,loss\nbatchnorm,2,0.857,1.5\n")
    assert manifest.value_diff(tmp_path / "a.csv", tmp_path / "c.csv", label="t.csv") == ["t.csv: rows: 2 -> 1"]


def test_value_diff_stops_at_its_limit_and_says_how_many_more(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({f"k{i}": i for i in range(50)}))
    (tmp_path / "b.json").write_text(json.dumps({f"k{i}": -i for i in range(1, 51)} | {"k0": 0}))
    lines = manifest.value_diff(tmp_path / "a.json", tmp_path / "b.json", label="x", limit=20)
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
    from bnstudy import determinism

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
    assert lines[0] == (f"DIFFERENT from {expected}: first rule in DAG order: evaluate; 1 of its files differ")
    assert lines[1].startswith("  results/eval/summary.json: sha256 ")
    assert lines[2] == f"pinned values ({pins.resolve()}):"
    assert lines[3].startswith("  DRIFT: eval:acc: moved from 0.857 to 0.843")
    assert manifest.main(["verify", "--expected", str(expected), "--results", str(bad.parent)]) == 1


def test_verify_without_an_expected_manifest_says_how_to_create_it(tmp_path):
    good = _run_dir(tmp_path / "good", FILES)
    identical, [line] = manifest.verify(tmp_path / "none.manifest.tsv", good.parent)
    assert not identical and "python -m bnstudy.manifest expected --results" in line


def test_expected_writes_the_manifest_and_lists_the_rules_that_changed(tmp_path):
    out = tmp_path / "expected" / "t.manifest.tsv"
    good = _run_dir(tmp_path / "good", FILES)
    assert manifest.write_expected(good.parent, out) == (4, [])
    assert out.read_bytes() == good.read_bytes()
    moved = _run_dir(tmp_path / "moved", [FILES[0], (*FILES[1][:2], '{"acc": 0.843}'), *FILES[2:]])
    assert manifest.write_expected(moved.parent, out) == (4, ["  evaluate: 1 files"])
    assert manifest.verify(out, moved.parent)[0]
