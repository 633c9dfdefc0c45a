# Two commands on a fresh Debian 12 machine (Python 3.11, root):
#   make        set up, then run the whole study to paper/main.pdf
#   make test   set up, then run the test suite (unit tests, lint, pipeline checks)
# Setup is idempotent: a second call does nothing that is already done.

PYTHON   ?= python3.11
VENV     ?= .venv
BIN       = $(VENV)/bin
CORES    ?= 4
STAMP     = $(VENV)/.installed

.PHONY: all setup tex paper figures test test-fast lint determinism benchmark slurm-test report clean

all: paper

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11 (Debian: apt-get install python3.11 python3.11-venv)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and pinned exactly: the CPU build; a looser spec pulls a multi-GB CUDA build
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[test,slurm]"
	touch $@

setup: $(STAMP) tex

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

paper: setup
	$(BIN)/snakemake --cores $(CORES)

# Regenerate only the figures (and what they need).
figures: setup
	$(BIN)/snakemake --cores $(CORES) figures

test: setup
	$(BIN)/python -m pytest -q

# Unit tests only (no pipeline runs).
test-fast: setup
	$(BIN)/python -m pytest -q -m "not pipeline and not slurm"

lint: setup
	$(BIN)/snakemake --lint

# Three runs of the test config, each on another simulated machine (cores 1 as is;
# cores 4 as an AVX2 machine; cores 2, killed and resumed, without AVX/FMA/AVX512):
# determinism and portability in one check, the same runs `make test` makes.
determinism: setup
	$(BIN)/python -m bnstudy.determinism --configfile config/test.yaml

.PHONY: portability verify
portability: setup
	$(BIN)/python -m bnstudy.determinism --configfile config/test.yaml

# Build the paper config, then compare it byte for byte with its expected manifest.
verify: setup
	$(BIN)/snakemake --cores $(CORES)
	$(BIN)/python -m bnstudy.manifest verify --expected config/expected/paper.manifest.tsv --results results

benchmark: setup
	$(BIN)/python -m bnstudy.benchmark

# The slurm profile against a real single-node SLURM on 127.0.0.1 (needs root and
# Debian's packages; scripts/slurm-local installs them): start the cluster, run
# the cluster tests, stop the daemons whatever the outcome.
slurm-test: setup
	scripts/slurm-local start && $(BIN)/python -m pytest -q -rP -m slurm; \
	  status=$$?; scripts/slurm-local stop; exit $$status

report: setup
	$(BIN)/snakemake --report results/report.html

clean:
	rm -rf results paper/main.pdf .snakemake
