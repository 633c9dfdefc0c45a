# Two commands on a fresh Debian 12 machine (Python 3.11, root):
#   make        set up, then run the whole study to paper/main.pdf
#   make test   set up, then run the test suite (unit tests, lint, pipeline checks)
# Setup is idempotent: a second call does nothing that is already done. It
# installs the Python packages from requirements/lock.txt (exact versions with
# sha256 hashes); `make lock` regenerates that file (never run by default).

PYTHON   ?= python3.11
VENV     ?= .venv
BIN       = $(VENV)/bin
CORES    ?= 4
# The config `make plan` plans and `make paper` checks first (bnstudy.base.config check, then
# bnstudy.pipeline.plan's budget: over a CPU-week is refused unless ALLOW_BUDGET=1).
CONFIG   ?= config/config.yaml
ALLOW_BUDGET ?=
MEASURED ?=
STAMP     = $(VENV)/.installed
# Every Python dependency at an exact version with its sha256 (Linux x86-64,
# CPython 3.11; torch is 2.13.0's CPU build). See requirements/README.md.
LOCK      = requirements/lock.txt
PIP_VERSION = 26.3
PIP_TOOLS   = pip-tools==7.6.2
# An extra package index for the locked install. Not needed on the project's
# machines (pip finds the CPU build of torch on local disk); elsewhere torch's CPU
# build (2.13.0+cpu, the lock's sha256) comes from PyTorch's CPU index:
#   make EXTRA_INDEX=https://download.pytorch.org/whl/cpu
EXTRA_INDEX ?=
PIP_EXTRA   = $(if $(EXTRA_INDEX),--extra-index-url $(EXTRA_INDEX))
LOCK_VENV  ?= $(VENV)/lock-tools

.PHONY: all setup venv tex dataset lock paper before-tex figures test test-fast test-scale lint format determinism benchmark slurm-test report browser binutils clean fashion part

all: paper

$(STAMP): $(LOCK) pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11 (Debian: apt-get install python3.11 python3.11-venv)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "pip==$(PIP_VERSION)"
	# every dependency (extras study, test and slurm included) at the version and sha256 in
	# the lock; torch is 2.13.0's CPU build (a looser spec pulls a multi-GB CUDA build); torch's
	# wheel in one pip process, the rest in another, side by side (scripts/install-lock)
	$(BIN)/python scripts/install-lock $(LOCK) $(PIP_EXTRA)
	# then the project itself, its dependencies being all in place already
	$(BIN)/python -m pip install --quiet --no-compile --no-deps --no-build-isolation -e .
	# the installed modules' bytecode on every core (pip compiles them one by one: 35 of its 50 s on
	# 2 cores, against 21 s here), but for the packages' own test suites (their tests/ and test/
	# folders: 3,700 of 12,700 files, which nothing here imports; 39 -> 28 CPU s) and for PyTorch and
	# the packages only it uses ($(TORCH_BYTECODE)); as with pip, a file that does not compile under
	# this Python (torch ships one in 3.12's syntax) is left as it is
	$(BIN)/python -c "import compileall, re, sysconfig; compileall.compile_dir(sysconfig.get_paths()['purelib'], quiet=2, workers=0, rx=re.compile(r'[/\\\\]tests?[/\\\\]|[/\\\\]site-packages[/\\\\]($(TORCH_ONLY))[/\\\\]'))"
	touch $@

# PyTorch's bytecode and that of the packages only it uses: a third of the installed files (3,400),
# which the tests and the audit import and the pipeline never does (every rule script starts without
# it: workflow/scripts/_setup.py's torch=False). So `make` leaves them out (on the 2-core Xeon the
# venv's compile took 25.4-27.1 s with them and 17.9-19.3 s without, 46-49 and 31-34 CPU s),
# `make test` compiles them, and so does `make venv` (CI runs it beside its apt steps).
TORCH_ONLY = torch|torchgen|functorch|sympy|mpmath|networkx
TORCH_BYTECODE = $(VENV)/.bytecode-torch
$(TORCH_BYTECODE): $(STAMP)
	$(BIN)/python -c "import compileall, pathlib, re, sysconfig; lib = pathlib.Path(sysconfig.get_paths()['purelib']); \
	  [compileall.compile_dir(lib / p, quiet=2, workers=0, rx=re.compile(r'[/\\\\]tests?[/\\\\]')) for p in '$(TORCH_ONLY)'.split('|')]"
	touch $@

setup: $(STAMP) tex

# The venv alone (what `setup` installs with pip, and PyTorch's bytecode; .ci/run runs it beside the apt steps).
venv: $(STAMP) $(TORCH_BYTECODE)

# TeX: latexmk and TeX Live from apt when missing. Elsewhere install latexmk and a
# TeX Live with the LaTeX 'recommended' and 'extra' collections by hand.
tex:
	@if command -v latexmk >/dev/null && command -v pdflatex >/dev/null; then :; \
	elif command -v apt-get >/dev/null; then \
	  echo "installing latexmk and TeX Live with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    latexmk texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended poppler-utils >/dev/null; \
	else \
	  echo "error: latexmk/pdflatex missing and apt-get unavailable: install latexmk and TeX Live (recommended + extra) by hand"; exit 1; \
	fi

# The data set CONFIG names, from apt when its files are missing (Fashion-MNIST: Debian's
# dataset-fashion-mnist, four idx files in /usr/share/datasets/fashion-mnist; the digits come
# with scikit-learn). `python -m bnstudy.base.datasets package CONFIG` names the package a config
# needs and lacks; the workflow checks each file's sha256 against the config before any job.
dataset: $(STAMP)
	@pkgs="$$($(BIN)/python -m bnstudy.base.datasets package $(CONFIG))" || exit 1; \
	if [ -z "$$pkgs" ]; then :; \
	elif command -v apt-get >/dev/null; then \
	  echo "installing $$pkgs with apt-get ($(CONFIG) needs it)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$pkgs >/dev/null; \
	else \
	  echo "error: $(CONFIG) needs Debian's $$pkgs and apt-get is unavailable: put its four idx files in the config's data.directory by hand"; exit 1; \
	fi

# Chromium, in which tests/workflow/test_html_report.py opens the HTML report, from apt when missing
# (`make test` installs it). Not needed to build the paper or the report: without apt a warning, and that test skips
# (in CI, BNSTUDY_CI=1, the skip fails); install Chromium or Google Chrome by hand.
browser:
	@if command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null; then :; \
	elif command -v apt-get >/dev/null; then \
	  echo "installing chromium with apt-get (the report's test opens the report in it)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	else \
	  echo "warning: no chromium and apt-get unavailable: install Chromium or Google Chrome by hand, or tests/workflow/test_html_report.py's browser check skips"; \
	fi

# binutils' objdump, with which the machine-code tests (tests/machinecode.py) read the kernel
# cache's object code, from apt when missing (`make test` installs it); elsewhere install binutils.
binutils:
	@if command -v objdump >/dev/null; then :; \
	elif command -v apt-get >/dev/null; then \
	  echo "installing binutils with apt-get (the machine-code tests disassemble the kernels with objdump)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils >/dev/null; \
	else \
	  echo "error: objdump missing and apt-get unavailable: install binutils by hand"; exit 1; \
	fi

# Regenerate the lock from pyproject.toml (not run by `make`; needs PyPI). Uses
# pip-compile (pip-tools, in its own venv $(LOCK_VENV)) under this machine's pip
# configuration, so torch comes from where `pip install torch==2.13.0` takes it:
# the local CPU wheel. Refuses a lock whose torch is not the CPU build.
#   make lock                        keep current pins that still fit, pin what is new
#   make lock LOCK_FLAGS=--upgrade   move every package to its newest allowed version
#   make lock LOCK_FLAGS="--upgrade-package numpy"   move one package
lock:
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; the lock is for CPython 3.11"; exit 1; }
	test -x $(LOCK_VENV)/bin/pip-compile || { $(PYTHON) -m venv $(LOCK_VENV) && \
	  $(LOCK_VENV)/bin/python -m pip install --quiet "pip==$(PIP_VERSION)" "$(PIP_TOOLS)"; }
	mkdir -p $(dir $(LOCK))
	if [ -f $(LOCK) ]; then cp $(LOCK) $(LOCK).new; else rm -f $(LOCK).new; fi
	CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet \
	  --generate-hashes --allow-unsafe --strip-extras --extra study --extra test --extra slurm \
	  --no-emit-find-links --no-emit-index-url $(LOCK_FLAGS) --output-file $(LOCK).new pyproject.toml
	@grep -q '^torch==2\.13\.0+cpu ' $(LOCK).new && ! grep -qiE '^(nvidia-|triton)' $(LOCK).new || \
	  { echo "error: torch did not resolve to the local 2.13.0 CPU build (or CUDA packages crept in); $(LOCK) left as it was, see $(LOCK).new"; exit 1; }
	mv $(LOCK).new $(LOCK)
	@echo "$(LOCK): $$(grep -c '^[a-z0-9]' $(LOCK)) packages pinned"

# Where TeX Live is missing, apt installs it beside the computation: only the provenance job (which
# records pdfTeX's version) and the paper need it, and its install is about 75 s of one core on the
# 2-core Xeon (dpkg configuring TeX Live), which the study's jobs left to wait before. So every job
# but those and what follows them runs first (`--omit-from provenance paper`) while `tex` installs,
# then one more Snakemake run builds the rest. With TeX in place, one run as before.
paper: $(STAMP)
	$(BIN)/python -m bnstudy.base.config check $(CONFIG)
	$(MAKE) --no-print-directory dataset CONFIG=$(CONFIG)
	$(BIN)/python -m bnstudy.pipeline.plan --configfile $(CONFIG) --cores $(CORES) $(if $(ALLOW_BUDGET),--allow-budget)
	@if ! { command -v latexmk && command -v pdflatex; } >/dev/null; then \
	  $(MAKE) --no-print-directory -j2 tex before-tex || exit 1; fi
	$(BIN)/snakemake --cores $(CORES) --configfile $(CONFIG)

# (internal to `paper`) every job that needs no TeX
before-tex: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --configfile $(CONFIG) --omit-from provenance paper

# The combined paper (docs/fashion.md): each Fashion-MNIST part built in its own directory
# $(BUILDS)/<part> (a copy of this checkout's files: each build writes its own results/ and
# paper/main.pdf) and the digits study here, the three side by side (each run's last jobs leave a
# core idle that the others fill); then config/combined.yaml here: the digits paper, the side by
# side of the three builds and the parts' papers appended; then every build verified against its
# committed manifest. Under 2 hours of 2 cores on the slowest machine measured (docs/fashion.md).
BUILDS ?= builds
FASHION_PARTS = fashion-mlp fashion-cnn
fashion: setup
	@for p in $(FASHION_PARTS); do $(BIN)/python -m bnstudy.base.config check config/$$p.yaml || exit 1; done
	$(MAKE) --no-print-directory dataset CONFIG=config/fashion-mlp.yaml
	@# every kernel of the three builds compiled once, both cores at it, before they start side by side
	@# (each would otherwise compile the MLP's at the same time); their own warm-ups then find them cached
	$(BIN)/python -m bnstudy.tools.warmup --jobs $(CORES) --network conv --layers "$$($(BIN)/python -c \
	  'import json, yaml; print(json.dumps(yaml.safe_load(open("config/fashion-cnn.yaml"))["network"]["layers"]))')"
	$(MAKE) --no-print-directory -j3 --output-sync=line $(addprefix fashion-part-,$(FASHION_PARTS)) fashion-digits
	$(MAKE) --no-print-directory paper CONFIG=config/combined.yaml
	$(BIN)/python -m bnstudy.pipeline.manifest verify --configfile config/combined.yaml --results results

fashion-part-%: setup
	$(MAKE) --no-print-directory part PART=$*

fashion-digits: setup
	$(MAKE) --no-print-directory paper CONFIG=config/config.yaml

# One part, config/$(PART).yaml, built in $(BUILDS)/$(PART): the config checked here first, then
# this checkout's tracked and new files copied there (times kept, so only what changed re-runs).
part: setup
	$(BIN)/python -m bnstudy.base.config check config/$(PART).yaml
	$(MAKE) --no-print-directory dataset CONFIG=config/$(PART).yaml
	$(BIN)/python -c "import sys; from pathlib import Path; from bnstudy.pipeline.sample import copy_checkout; copy_checkout(Path('.'), Path(sys.argv[1]))" $(BUILDS)/$(PART)
	cd $(BUILDS)/$(PART) && $(abspath $(BIN))/snakemake --cores $(CORES) --configfile config/$(PART).yaml

# Verify a sample before spending a CPU-day (docs/cluster.md): the jobs config/expected/<config>.sample.tsv
# lists (two grid networks of different normalisers and a companion probe job for the cluster config),
# built with their inputs in builds/sample-<config>, compared with the hashes committed there.
.PHONY: verify-sample fashion-digits
verify-sample: setup
	$(MAKE) --no-print-directory dataset CONFIG=$(CONFIG)
	$(BIN)/python -m bnstudy.pipeline.sample verify --configfile $(CONFIG) --cores $(CORES)

# What CONFIG would build: jobs by rule, jobs that would run now, estimated CPU time from
# workflow/resources/cpu_seconds.tsv; over a CPU-week fails unless ALLOW_BUDGET=1.
# MEASURED=DIR: the results/ of a build of CONFIG (finished or partial); its jobs' measured CPU
# time replaces their estimates (on a cluster's cores too: CORES=64).
.PHONY: plan
plan: $(STAMP)
	$(BIN)/python -m bnstudy.base.config check $(CONFIG)
	$(BIN)/python -m bnstudy.pipeline.plan --configfile $(CONFIG) --cores $(CORES) $(if $(ALLOW_BUDGET),--allow-budget) $(if $(MEASURED),--measured $(MEASURED))

# Regenerate only the figures (and what they need).
figures: setup
	$(BIN)/snakemake --cores $(CORES) --configfile $(CONFIG) figures

# the pipeline tests build config/fashion-tiny.yaml too: its data set first. pytest runs in two
# processes side by side, the unit tests and the rest (scripts/test-suite says why).
test: setup $(TORCH_BYTECODE) browser binutils lint
	$(MAKE) --no-print-directory dataset CONFIG=config/fashion-tiny.yaml
	PYTHON=$(BIN)/python scripts/test-suite

# Claims of speed at scale, left out of `make test` (minutes of CPU each; docs/testing.md):
# the ResNet-18 audit of 500 examples within 5 minutes of 2 cores.
test-scale: setup
	$(BIN)/python -m pytest -q -m scale

# Unit tests only (no pipeline runs, no TeX needed).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not pipeline and not slurm and not paper_config and not slow"

# ruff (lint and format) and snakefmt, configured in pyproject.toml, then Snakemake's
# own linter; no TeX needed. `make format` rewrites what `ruff format`/snakefmt would.
LINT_PY  = src tests workflow/scripts
LINT_SMK = Snakefile workflow/rules
lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PY)
	$(BIN)/ruff format --check $(LINT_PY)
	$(BIN)/snakefmt --check $(LINT_SMK)
	$(BIN)/snakemake --lint

format: $(STAMP)
	$(BIN)/ruff check --fix $(LINT_PY)
	$(BIN)/ruff format $(LINT_PY)
	$(BIN)/snakefmt $(LINT_SMK)

# Three runs of the test config, each on another simulated machine (cores 1 as is;
# cores 4 as an AVX2 machine; cores 2, killed and resumed, without AVX/FMA/AVX512):
# determinism and portability in one check, the same runs `make test` makes.
determinism: setup
	$(BIN)/python -m bnstudy.pipeline.determinism --configfile config/test.yaml

.PHONY: portability verify
portability: setup
	$(BIN)/python -m bnstudy.pipeline.determinism --configfile config/test.yaml

# Check an existing build in seconds, without building (docs/verify.md): hash every output on
# disk and compare it with the build's own manifest and the config's expected one; names each
# missing, damaged or different file by rule. `make repair` re-creates exactly those files
# (and nothing downstream whose inputs come back byte-identical), then verifies.
# CONFIG=config/test.yaml for a test-config build. `make reproduce`: build, verify, check the PDF.
.PHONY: repair reproduce
verify: $(STAMP)
	$(BIN)/python -m bnstudy.pipeline.manifest verify --configfile $(CONFIG) --results results

repair: $(STAMP)
	$(BIN)/python -m bnstudy.pipeline.manifest repair --configfile $(CONFIG) --results results --cores $(CORES)

reproduce: setup
	$(BIN)/snakemake --cores $(CORES)
	$(BIN)/python -m bnstudy.pipeline.manifest verify --configfile config/config.yaml --results results
	$(BIN)/python -m pytest -q -m paper_config

benchmark: setup
	$(BIN)/python -m bnstudy.tools.benchmark

# Mutation testing (docs/mutation.md; settings in setup.cfg): mutmut, pinned, in its
# own venv $(MUTATION_VENV) so that the lock stays the project's; that venv sees
# the project's installed packages through a .pth file. Prints the score per
# module and fails below 90 % of the non-equivalent mutants killed. Only the mutants
# in scope run (setup.cfg's [mutation-score]). `make mutation CORES=1` on a shared machine.
MUTATION_VENV ?= $(VENV)/mutation-tools
MUTMUT         = mutmut==3.8.1
.PHONY: mutation
mutation: setup
	test -x $(MUTATION_VENV)/bin/mutmut || { $(PYTHON) -m venv $(MUTATION_VENV) && \
	  $(MUTATION_VENV)/bin/python -m pip install --quiet "pip==$(PIP_VERSION)" "$(MUTMUT)"; }
	$(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
	  > "$$($(MUTATION_VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/bnstudy-project.pth"
	rm -rf mutants
	$(MUTATION_VENV)/bin/mutmut run --max-children $(CORES) $$($(BIN)/python scripts/mutation-score --scope) \
	  > mutants.log 2>&1 || { tail -c 3000 mutants.log; exit 1; }
	$(MUTATION_VENV)/bin/python scripts/mutation-score --mutmut $(MUTATION_VENV)/bin/mutmut

# The slurm profile against a real single-node SLURM on 127.0.0.1 (needs root and
# Debian's packages; scripts/slurm-local installs them): start the cluster, run
# the cluster tests, stop the daemons whatever the outcome.
slurm-test: setup
	scripts/slurm-local start && $(BIN)/python -m pytest -q -rP -m slurm; \
	  status=$$?; scripts/slurm-local stop; exit $$status

# The HTML report of the finished build, after the paper (which `make paper` builds or brings
# up to date first): one self-contained page, every figure, table, summary and the paper embedded.
report: paper
	$(BIN)/snakemake $(if $(CONFIG),--configfile $(CONFIG)) --report results/report.html

clean:
	rm -rf results paper/main.pdf .snakemake
