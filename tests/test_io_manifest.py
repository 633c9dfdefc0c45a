"""Byte-stable, atomic outputs and the manifest comparison."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import torch

from bnstudy import io, manifest


def test_weights_are_byte_identical_when_written_twice(tmp_path):
    state = {"0.weight": torch.arange(6.0).view(2, 3), "1.num_batches_tracked": torch.tensor(3)}
    io.write_weights(tmp_path / "a.safetensors", state, {"seed": "0", "normaliser": "batchnorm"})
    io.write_weights(tmp_path / "b.safetensors", dict(reversed(state.items())), {"normaliser": "batchnorm", "seed": "0"})
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()
    loaded = io.read_weights(tmp_path / "a.safetensors")
    assert torch.equal(loaded["0.weight"], state["0.weight"])
    assert b"pickle" not in (tmp_path / "a.safetensors").read_bytes()


def test_weights_are_byte_identical_across_processes(tmp_path):
    """Header order must not depend on per-process hash seeds (safetensors' own writer's does)."""
    code = textwrap.dedent(f"""
        import sys, torch
        sys.path.insert(0, {str(io.__file__.rsplit('/bnstudy', 1)[0])!r})
        from bnstudy import io
        meta = {{k: str(i) for i, k in enumerate(["seed", "normaliser", "widths", "groups", "eps", "momentum", "lr"])}}
        state = {{f"{{i}}.weight": torch.full((2, 2), float(i)) for i in range(7)}}
        io.write_weights(sys.argv[1], state, meta)
    """)
    for i in range(3):
        subprocess.run([sys.executable, "-c", code, str(tmp_path / f"w{i}.safetensors")], check=True,
                       env={"PYTHONHASHSEED": str(i), "PATH": os.environ.get("PATH", "")})
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


def test_a_process_killed_mid_write_leaves_no_file_that_looks_finished(tmp_path):
    """SIGKILL while writing: the target path never holds a partial file."""
    target = tmp_path / "big.npy"
    code = textwrap.dedent(f"""
        import os, sys, numpy as np
        sys.path.insert(0, {str(io.__file__.rsplit('/bnstudy', 1)[0])!r})
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
    a = _table([["split", "", "d/x", 1, "aa"], ["train", "n=1", "r/w1", 1, "bb"], ["train", "n=2", "r/w2", 1, "cc"],
                ["paper", "", "p.pdf", 1, "dd"]])
    b = _table([["split", "", "d/x", 1, "aa"], ["train", "n=1", "r/w1", 1, "bb"], ["train", "n=2", "r/w2", 1, "XX"],
                ["paper", "", "p.pdf", 1, "YY"]])
    diff = manifest.first_difference(a, b)
    assert diff["path"].tolist() == ["r/w2"]
    assert manifest.first_difference(a, a).empty


def test_manifest_hashes_match_hashlib(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    table = manifest.build([("r", "", str(tmp_path / "f"))])
    assert table.loc[0, "sha256"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert table.loc[0, "bytes"] == 3
