"""The studies, one line each, in the paper's order: add a study here and nowhere else.

A study named ``x`` is its folder ``src/bnstudy/studies/x/``, its rules file
``workflow/rules/x.smk``, its paper section ``paper/sections/x.tex`` and its tests. From
:data:`STUDIES` the workflow derives what was once kept by hand in eight places:

- the ``Snakefile`` includes each study's rules file, in this order (a study reading another's
  outputs by rule comes after it); an ``optional`` study only where the config has its section;
- its summary and figure rules are local rules (:attr:`Study.local_rules`);
- ``paper/main.tex`` inputs each included study's sections, in this order (the paper rule writes
  ``generated/sections.tex``);
- the config checks run each included study's ``checks.check(config, part)``, if its folder has
  a ``checks`` module (:func:`checks`);
- the cost model (``bnstudy.pipeline.plan``: ``make plan``, the cluster's run times) prices each of its
  rules that is not a local rule by its folder's ``cost`` module (:meth:`Study.work`);
- the house style prints each figure at its width (``bnstudy.paper.figures.PRINTED_WIDTH``).

Each rule's outputs reach the manifest and the paper by ``register()`` in
``workflow/rules/common.smk``: a rule without wildcards registers itself, a rule with wildcards
names its jobs; whatever lands in ``results/paper/{macros,tables,figures}/`` is a paper input.

It sits in the base layer, as the registry of normalisers does, because the house style
(``bnstudy.paper.figures``) reads the widths; the study checks and cost modules it names are looked up
by name.
Of the rule scripts only the figures' load it (for the widths), so adding a study re-runs no
other study's jobs but the figure jobs and the paper.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path


def read_schema_file(path: Path) -> dict:
    """A schema file of the project's own (trusted, well-formed YAML), read with libyaml's parser where
    PyYAML has it: the same mapping as ``yaml.safe_load`` at a tenth of the CPU (Snakemake reads the
    base schema and every study's fragment at each start, about 0.15 s in Python's parser). A config
    file is read by :func:`bnstudy.base.config.load_file` instead, whose errors name the line."""
    import yaml

    return yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@dataclass(frozen=True)
class Study:
    """One study: ``name`` (its folder, rules file and, by default, paper section), ``config`` (its
    config section, None: none of its own), ``figures`` (each figure it prints: its width as a
    fraction of ``\\linewidth``), ``optional`` (it runs only where the config has its section),
    ``sections`` (its paper sections, if not just ``name``), ``local`` (local rules beyond
    ``summarise_<name>`` and ``figure_<figure>``) and ``families`` (the families of comparisons it
    forms, each declared in the config's ``families`` section: :mod:`bnstudy.evaluation.families`;
    a conditional one as ``"name:path"`` or ``"name:path=value"``: :meth:`formed_families`)."""

    name: str
    config: str | None
    figures: dict[str, float] = field(default_factory=dict)
    optional: bool = False
    sections: tuple[str, ...] = ()
    local: tuple[str, ...] = ()
    families: tuple[str, ...] = ()

    @property
    def rules_file(self) -> str:
        """Its rules file, relative to the workflow's base directory."""
        return f"workflow/rules/{self.name}.smk"

    @property
    def paper_sections(self) -> tuple[str, ...]:
        """Its sections in ``paper/sections/`` (names without ``.tex``), in the paper's order."""
        return self.sections or (self.name,)

    @property
    def local_rules(self) -> tuple[str, ...]:
        """Its rules of seconds, run where Snakemake runs (not queued on a cluster)."""
        return (f"summarise_{self.name}", *(f"figure_{f}" for f in self.figures), *self.local)

    def formed_families(self, config: dict) -> tuple[str, ...]:
        """The families it forms under ``config``: a conditional one, ``"name:path"``, only where the
        config has the key ``path`` (dotted), or ``"name:path=value"``, where ``value`` is among it."""
        names = []
        for entry in self.families:
            name, _, needs = entry.partition(":")
            path, _, value = needs.partition("=")
            node = config
            for key in path.split(".") if path else ():
                node = node.get(key) if isinstance(node, dict) else None
            if not path or (node is not None and (not value or value in node)):
                names.append(name)
        return tuple(names)

    def runs(self, config: dict) -> bool:
        """Whether ``config`` includes the study (an optional one only with its section)."""
        return not self.optional or self.config in config

    @property
    def schema_file(self) -> Path:
        """Its config section's schema fragment, ``studies/<name>/schema.yaml`` (may be absent)."""
        return Path(__file__).resolve().parents[1] / "studies" / self.name / "schema.yaml"

    def schema(self) -> dict | None:
        """Its config section's JSON Schema (:attr:`schema_file`), or None for a study without one."""
        if self.config is None or not self.schema_file.is_file():
            return None
        return read_schema_file(self.schema_file)

    def check(self):
        """Its cross-field config check ``check(config, part)`` (``studies/<name>/checks.py``), or None."""
        module = f"bnstudy.studies.{self.name}.checks"
        if importlib.util.find_spec(module) is None:
            return None
        return importlib.import_module(module).check

    def work(self) -> dict:
        """The cost model's work of each of its rules that is not a local rule, ``{rule:
        bnstudy.pipeline.plan.Work}`` (``studies/<name>/cost.py``'s ``WORK``; {} without one: a study
        of local rules only). Looked up by name, as :meth:`check` is: the base layer imports no study."""
        module = f"bnstudy.studies.{self.name}.cost"
        if importlib.util.find_spec(module) is None:
            return {}
        return dict(importlib.import_module(module).WORK)


STUDIES = (
    Study("companions", "companions", {"companions": 1.0},
          sections=("companions", "protocols"), local=("summarise_protocols",),  # and both protocols
          families=("protocol_keep", "protocol_keep_accuracy", "protocol_published:data.name=digits")),
    Study("batch_size", "batch_size_eval", {"batch_size": 0.6, "batch_size_remedies": 0.6},
          families=("normalisers", "renorm:normalisers=batchrenorm", "remedies", "last_batch")),
    Study("curves", "curves", {"curves": 1.0}, optional=True),  # training curves from the grid's epochs files
    Study("running_stats", "running_stats", {"running_stats": 1.0}),
    Study("lr_sweep", "lr_sweep", {"lr_sweep": 0.6}, optional=True,
          families=("lr_gap", "lr_choice:lr_sweep.folds", "lr_margin:lr_sweep.folds")),
    Study("serving", "serving", {"serving": 1.0},
          families=("serving_order", "serving_change", "serving_adaptation:serving.training_rows")),
    Study("accumulation", "accumulation", {"accumulation": 1.0}, optional=True,
          families=("accumulation", "accumulation_other")),
    Study("finetune", "finetune", {"finetune": 1.0}, optional=True, families=("finetune_specific",)),
    Study("precise_rows", "precise_rows", {"precise_rows": 0.6}, optional=True, families=("precise_rows",)),
    Study("equal_steps", "equal_steps", optional=True, families=("equal_steps",)),  # extreme batches, equal steps
    Study("renorm_ramp", "renorm_ramp", optional=True, families=("renorm_ramp",)),  # renorm's other schedules
    Study("compare", "compare", optional=True),  # other builds' headline numbers beside this one's
)  # fmt: skip


def with_study_schemas(schema: dict) -> dict:
    """``schema`` (the base config schema) with each study's fragment (:meth:`Study.schema`) as the
    schema of its config section, in the catalogue's order; a study that is not optional makes its
    section required. A section stated twice (base file and fragment) is an error."""
    properties, required = schema.setdefault("properties", {}), schema.setdefault("required", [])
    for study in STUDIES:
        fragment = study.schema()
        if fragment is None:
            continue
        if study.config in properties:
            where = study.schema_file
            raise ValueError(f"config section {study.config!r} has a schema in the base file and in {where}")
        properties[study.config] = fragment
        if not study.optional and study.config not in required:
            required.append(study.config)
    return schema


def included(config: dict) -> list[Study]:
    """The studies ``config`` runs, in the paper's order."""
    return [s for s in STUDIES if s.runs(config)]


def checks(config: dict) -> list:
    """The cross-field checks of the studies ``config`` runs, each ``check(config, part)``."""
    return [c for c in (s.check() for s in included(config)) if c is not None]


def families(config: dict) -> dict[str, str]:
    """``{family: study}`` of every family the studies ``config`` runs form, in the paper's order."""
    return {f: s.name for s in included(config) for f in s.formed_families(config)}


def all_families() -> set[str]:
    """Every family name some study can form."""
    return {entry.partition(":")[0] for s in STUDIES for entry in s.families}


def local_rules(config: dict) -> list[str]:
    """The local rules of the studies ``config`` runs."""
    return [rule for s in included(config) for rule in s.local_rules]


def paper_sections(config: dict) -> list[str]:
    """The study sections of the paper for ``config`` (names in ``paper/sections/``), in order."""
    return [section for s in included(config) for section in s.paper_sections]


def printed_widths() -> dict[str, float]:
    """Every study figure's printed width, as a fraction of ``\\linewidth``."""
    return {name: w for s in STUDIES for name, w in s.figures.items()}
