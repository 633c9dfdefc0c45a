"""The conda environments say what the lock installs: the same versions, and no torch in the jobs' one."""

import re

import yaml

from conftest import ROOT

LOCK = ROOT / "requirements" / "lock.txt"
RULE_ENV = ROOT / "workflow" / "envs" / "bnstudy.yaml"
USER_ENV = ROOT / "environment.yml"
# conda-forge's names for the lock's PyPI packages, where they differ
CONDA_NAMES = {"snakemake-minimal": "snakemake"}
# what a job imports: the package's runtime dependencies (pyproject.toml) without
# torch, which no job imports, and snakemake, whose own process runs the job
JOB_PACKAGES = {"numpy", "numba", "llvmlite", "pandas", "scipy", "scikit-learn", "matplotlib", "safetensors", "pyyaml"}


def lock_versions() -> dict[str, str]:
    return dict(re.findall(r"^([a-z0-9][a-z0-9._-]*)==(\S+)", LOCK.read_text(), flags=re.M))


def conda_pins(path) -> dict[str, str]:
    """``name=version`` entries of an environment file (pip entries aside), by the lock's names."""
    pins = {}
    for dep in yaml.safe_load(path.read_text())["dependencies"]:
        if isinstance(dep, str) and "=" in dep and not dep.startswith("python="):
            name, version = dep.split("=", 1)
            pins[CONDA_NAMES.get(name, name)] = version
    return pins


def pip_pins(path) -> dict[str, str]:
    pins = {}
    for dep in yaml.safe_load(path.read_text())["dependencies"]:
        if isinstance(dep, dict):
            for line in dep.get("pip", []):
                if "==" in line:
                    name, version = line.split("==", 1)
                    pins[name] = version
    return pins


def test_the_rules_environment_pins_what_jobs_import_at_the_locks_versions_without_torch():
    lock = lock_versions()
    pins = conda_pins(RULE_ENV)
    assert set(pins) == JOB_PACKAGES, f"{RULE_ENV.name}: expected exactly {sorted(JOB_PACKAGES)}, got {sorted(pins)}"
    moved = {name: (version, lock[name]) for name, version in pins.items() if lock[name] != version}
    assert not moved, f"{RULE_ENV.name} out of step with the lock (env, lock): {moved}"
    deps = yaml.safe_load(RULE_ENV.read_text())["dependencies"]
    assert not [d for d in deps if "torch" in str(d)], "no job imports torch: keep it out of the jobs' environment"
    assert not pip_pins(RULE_ENV)


def test_the_users_environment_pins_every_package_at_the_locks_version():
    lock = lock_versions()
    pins = conda_pins(USER_ENV) | pip_pins(USER_ENV)
    moved = {}
    for name, version in pins.items():
        locked = lock[name].removesuffix("+cpu")  # torch: 2.13.0+cpu, asked for as 2.13.0 from the CPU index
        if locked != version:
            moved[name] = (version, lock[name])
    assert not moved, f"{USER_ENV.name} out of step with the lock (env, lock): {moved}"
    assert {"numpy", "numba", "pandas", "scipy", "matplotlib", "safetensors", "torch", "snakemake"} <= set(pins)


def test_the_rules_use_that_environment():
    smk = (ROOT / "workflow" / "rules" / "common.smk").read_text()
    assert 'CONDA_ENV = "../envs/bnstudy.yaml"' in smk
