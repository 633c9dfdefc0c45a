"""The machine code the jobs run, read from the kernel cache (a helper of the machine-code tests).

Numba cannot inspect a kernel it loaded from its cache, so the machine-code tests used to compile
their kernels afresh, twice (host and generic CPU), in caches of their own: about 100 s of a
CI run's two cores, for code that the suite's kernel warm-up (tests/conftest.py) had just
compiled and filed. The cache's data files hold each kernel's object code (Numba pickles
``(library name, "object", (object code, bitcode))`` first), so this module reads that code and
disassembles it with binutils' ``objdump``: the checks then see the very bytes every job of the
pipeline loads, of every kernel the warm-up compiles, not a recompilation of a few of them.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# fused multiply-add mnemonics of x86 (FMA3 and FMA4, packed and scalar, every operand order)
FMA = re.compile(r"\bv?f(n?m(add|sub)|maddsub|msubadd)[0-9a-z]*\b")
# a data file: <module>.<qualname>-<line>.py<version>.<index>.nbc
DATA_FILE = re.compile(r"(?P<kernel>.+)-\d+\.py\d+\.\d+\.nbc$")


def environment(machine: str) -> dict[str, str]:
    """The process environment a job has on ``machine`` (bnstudy.pipeline.machines.environments())."""
    from bnstudy.pipeline.machines import environments

    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), **environments()[machine])
    if machine == "native":
        for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"):
            env.pop(name, None)
    return env


def target_directory(machine: str) -> Path:
    """The directory of the kernel cache that ``machine``'s jobs load (bnstudy.pipeline.kernelcache)."""
    code = (
        "from bnstudy.tools.warmup import cache_dir; from bnstudy.pipeline.kernelcache import target; "
        "print(cache_dir() / target())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=environment(machine), cwd=ROOT, capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def kernel_name(path: Path, root: Path) -> str:
    """``bnstudy.compiled.convgemm._tile8x2`` for ``<root>/bnstudy/compiled/convgemm._tile8x2-40.py311.2.nbc``."""
    found = DATA_FILE.match(path.name)
    if found is None:
        raise ValueError(f"{path}: not a Numba data file")
    return ".".join((*path.parent.relative_to(root).parts, found.group("kernel")))


class _Stub:
    """Whatever a data file's pickle builds besides the library's plain tuple (type descriptions,
    the environment, whose rebuild would import the kernel's module): nothing is built or run."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass


class _LibraryOnly(pickle.Unpickler):
    def find_class(self, module, name):
        return _Stub


def object_code(path: Path) -> bytes:
    """The object code a Numba data file holds (read without importing Numba or the kernel's module)."""
    with open(path, "rb") as f:
        library = _LibraryOnly(f).load()[0]
    _name, kind, data = library
    if kind != "object":
        raise ValueError(f"{path}: the library is stored as {kind!r}, not as object code")
    return data[0]


def disassemble(root: Path) -> dict[str, str]:
    """Kernel name -> the disassembly (AT&T syntax) of all its cached signatures under ``root``."""
    files = sorted(root.rglob("*.nbc"))
    if not files:
        return {}
    with tempfile.TemporaryDirectory() as scratch:
        objects = {}
        for i, path in enumerate(files):
            obj = Path(scratch) / f"{i}.o"
            obj.write_bytes(object_code(path))
            objects[str(obj)] = kernel_name(path, root)
        out = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", *objects], capture_output=True, text=True, check=True
        ).stdout
    # objdump starts each input with "<path>:     file format ..."
    code: dict[str, list[str]] = {}
    for part in re.split(r"^(?=\S+\.o:\s+file format)", out, flags=re.M):
        head = part.split(":", 1)[0]
        if head in objects:
            code.setdefault(objects[head], []).append(part)
    return {name: "\n".join(parts) for name, parts in sorted(code.items())}


CONTROL = """
import numba

@numba.njit(cache=True, fastmath={"contract"})
def contracted(a, b, c):  # a * b + c where contraction is allowed: FMA on a CPU that has it
    for i in range(a.shape[0]):
        c[i] = a[i] * b[i] + c[i]
"""


def control(machine: str, scratch: Path) -> str:
    """The cached machine code of a function whose multiply-adds may be fused, compiled for
    ``machine`` into a cache of its own under ``scratch``: the control that the detector sees
    a fused multiply-add where the target has one."""
    (scratch / "fma_control.py").write_text(CONTROL)
    env = dict(environment(machine), NUMBA_CACHE_DIR=str(scratch / "cache"))
    env["PYTHONPATH"] = str(scratch)
    code = "import numpy as np, fma_control as m; v = np.ones(64, np.float32); m.contracted(v, v, v.copy())"
    subprocess.run([sys.executable, "-c", code], env=env, cwd=scratch, check=True, capture_output=True)
    found = disassemble(scratch / "cache")
    return "\n".join(found.values())


def summary(asm: str) -> dict:
    """What the checks read of one kernel's code."""
    return {
        "lines": asm.count("\n"),
        "fma": sorted({m.group(0) for m in FMA.finditer(asm)}),
        "ymm": "%ymm" in asm,
        "zmm": "%zmm" in asm,
        "zmm_mul": bool(re.search(r"\bvmulps\b[^\n]*%zmm", asm)),
        "zmm_add": bool(re.search(r"\bvaddps\b[^\n]*%zmm", asm)),
        "mul": bool(re.search(r"\bv?mul(ps|ss)\b", asm)),
    }


if __name__ == "__main__":  # a maintainer's look: each kernel's summary on this machine
    directory = target_directory(sys.argv[1] if len(sys.argv) > 1 else "native")
    print(json.dumps({k: summary(v) for k, v in disassemble(directory).items()}, indent=1))
