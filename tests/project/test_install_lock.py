"""scripts/install-lock: the lock installed by two pip processes side by side, torch's entry in one and
every other entry in the other, each entry whole (its version and every hash)."""

import importlib.machinery
import importlib.util
import re

from conftest import ROOT

LOCK = ROOT / "requirements" / "lock.txt"


def _script():
    loader = importlib.machinery.SourceFileLoader("install_lock", str(ROOT / "scripts" / "install-lock"))
    spec = importlib.util.spec_from_loader("install_lock", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_every_locked_requirement_goes_to_exactly_one_process_with_all_its_hashes():
    script = _script()
    text = LOCK.read_text()
    pinned = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", text, re.MULTILINE)
    entries = script.entries(text)
    assert [script.name(e) for e in entries] == [n.lower().replace("_", "-") for n, _ in pinned]
    assert [script.name(e) for e in entries].count(script.APART) == 1
    assert sum(e.count("--hash=sha256:") for e in entries) == text.count("--hash=sha256:")
    for entry, (name, version) in zip(entries, pinned, strict=True):
        assert entry.startswith(f"{name}=={version} \\\n") and "--hash=sha256:" in entry, entry[:200]
