"""Figures a reader can read, and a paper laid out without clipped or overfull boxes.

Each figure the pipeline makes is built by its package function on small fixed
inputs: every drawn artist (legends with their markers included) lies inside the
figure, the figure is made at its printed width with no text under 7 pt on paper,
each normaliser keeps its registry colour, marker and line style, and saving twice
gives the same bytes. The built paper's LaTeX log has no overfull or underfull
box, its pages render (pdftoppm), no page but the last ends high on the page (a float
alone on a page), and the last page holds the end of the references.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess

import numpy as np
import pytest

from bnstudy.base import catalogue, normalisers
from bnstudy.paper import figures
from bnstudy.studies.companions.figure import all_zero, companions, layout
from conftest import ROOT
from figure_examples.companions import companion_tables

# ---- small fixed inputs, shaped as the pipeline's tables ---------------------------------


def build(name):
    """Figure ``name`` drawn from small fixed inputs by ``figure_examples.<study>.figure`` (its study
    from the catalogue, bnstudy.base.catalogue)."""
    owner = {f: s.name for s in catalogue.STUDIES for f in s.figures}
    return importlib.import_module(f"figure_examples.{owner[name]}").figure(name)


# ---- what the paper prints -----------------------------------------------------------------


def printed_widths() -> dict[str, float]:
    """``{figure: width in inches}`` from paper/main.tex's page and margins and the sections' \\includegraphics."""
    main = (ROOT / "paper" / "main.tex").read_text()
    assert "a4paper" in main
    margin = float(re.search(r"\\usepackage\[margin=([\d.]+)cm\]\{geometry\}", main).group(1))
    linewidth = (21.0 - 2 * margin) / 2.54
    widths = {}
    for tex in sorted((ROOT / "paper" / "sections").glob("*.tex")):
        for frac, name in re.findall(
            r"\\includegraphics\[width=([\d.]*)\\linewidth\]\{generated/figures/(\w+)\.pdf\}", tex.read_text()
        ):
            widths[name] = (float(frac) if frac else 1.0) * linewidth
    return widths


def test_every_figure_the_paper_prints_is_checked_here():
    paper = set(printed_widths())
    rules = {
        m
        for smk in (ROOT / "workflow" / "rules").glob("*.smk")
        for m in re.findall(r"results/paper/figures/(\w+)\.pdf", smk.read_text())
    }
    assert paper == rules == set(figures.PRINTED_WIDTH), (paper, rules)


@pytest.fixture(scope="module", params=sorted(figures.PRINTED_WIDTH))
def drawn(request):
    fig = build(request.param)
    yield request.param, fig
    figures.plt.close(fig)


def test_every_artist_lies_inside_the_figure(drawn):
    name, fig = drawn
    assert figures.outside(fig) == [], name


def test_figure_is_made_at_its_printed_width_with_text_at_least_7pt(drawn):
    name, fig = drawn
    printed = printed_widths()[name]
    scale = printed / fig.get_size_inches()[0]
    assert abs(scale - 1) < 0.01, f"{name}: drawn {fig.get_size_inches()[0]:.2f} in, printed {printed:.2f} in"
    smallest, text = figures.font_sizes(fig)[0]
    assert smallest * scale >= figures.MIN_FONT_PT - 1e-9, f"{name}: {text!r} at {smallest * scale:.1f} pt on paper"


def test_normalisers_are_drawn_in_their_registry_style(drawn):
    """A line in a normaliser's colour has its marker and line style (study 1 shades them by training size)."""
    name, fig = drawn
    by_colour = {n.colour.lower(): n for n in normalisers.REGISTRY}
    seen = 0
    for ax in fig.axes:
        for line in ax.get_lines():
            entry = by_colour.get(str(line.get_color()).lower())
            if entry is None or line.get_marker() in figures.FREE_MARKERS + ("_", "|"):  # designs, error bar caps
                continue
            seen += 1
            assert line.get_marker() in (entry.marker, "None", ""), (name, entry.name, line.get_marker())
            if line.get_linestyle() != "None":
                assert dashes(line) == dashes(figures.plt.Line2D([], [], ls=entry.linestyle)), (name, entry.name)
    # study 3: no normaliser; PreciseBN on a budget: batch norm alone, in shades by training batch size
    assert seen or name in ("running_stats", "precise_rows"), f"{name}: no line in a normaliser's colour"


def dashes(line):
    """The line's dash pattern before scaling by its width (tells dash-dot from dash-dot-dot)."""
    return line.get_linestyle(), line._unscaled_dash_pattern


def test_outside_sees_a_clipped_legend():
    fig, ax = figures.new(2.0, 1.5)
    ax.plot([1, 2], [1, 2], label="a label far longer than the figure is wide")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    found = figures.outside(fig)
    assert any("Legend" in f for f in found), found
    figures.plt.close(fig)


def test_registry_styles_are_distinct_and_other_colours_mean_one_thing():
    reg = normalisers.REGISTRY
    styles = [dashes(figures.plt.Line2D([], [], ls=n.linestyle)) for n in reg]
    assert len(set(map(str, styles))) == len(reg), "two normalisers share a line style"
    assert len({n.marker for n in reg}) == len(reg)
    assert not {n.marker for n in reg} & set(figures.FREE_MARKERS + (figures.PUBLISHED_MARKER,)), "marker taken"
    meaning = list(figures.MEANING.values())
    assert len(set(meaning)) == len(meaning), "one colour has two meanings"
    assert not set(meaning) & {n.colour for n in reg}, "a normaliser's colour has another meaning"
    assert set(figures.COLOURS) == set(normalisers.NAMES)


def test_companion_layout_keeps_every_normaliser():
    summary, grid = companion_tables()
    kinds, batch = layout(grid)
    assert kinds == list(normalisers.NAMES) and batch == list(normalisers.BATCH_NAMES)
    fig = companions(summary, grid, None)
    assert len(fig.axes) == 2 + len(batch)
    text = " ".join(t for _, t in figures.font_sizes(fig))
    for n in normalisers.REGISTRY:
        assert n.label in text, f"{n.name} dropped from the figure"
    figures.plt.close(fig)
    # a grid of two kinds gives one panel for the one with batch statistics
    fig = companions(summary, grid[grid["normaliser"].isin(["none", "batchnorm"])], None)
    assert len(fig.axes) == 3 and figures.outside(fig) == []
    figures.plt.close(fig)
    with pytest.raises(ValueError):
        layout(grid.assign(normaliser="ghost"))


def test_exact_zeros_are_marked_only_where_every_flip_rate_is_zero():
    _, grid = companion_tables()
    controls = [n for n in normalisers.NAMES if n not in normalisers.BATCH_NAMES]
    assert all_zero(grid) == controls
    one = grid.index[(grid["normaliser"] == controls[0]) & (grid["measure"] == "flip_rate")][0]
    grid.loc[one, "ci_high"] = 0.001  # one seed flipped one label
    assert all_zero(grid) == controls[1:]


def test_figures_save_to_the_same_bytes(tmp_path):
    for i in range(2):
        fig = build("companions")
        figures.save(fig, tmp_path / f"{i}.pdf", tmp_path / f"{i}.png")
    for ext in ("pdf", "png"):
        assert (tmp_path / f"0.{ext}").read_bytes() == (tmp_path / f"1.{ext}").read_bytes(), ext
    assert b"CreationDate" not in (tmp_path / "0.pdf").read_bytes()


# ---- the built paper ---------------------------------------------------------------------


def box_warnings(log: str) -> list[str]:
    """Overfull and underfull box warnings of a LaTeX log."""
    return re.findall(r"^(?:Overfull|Underfull) \\[hv]box.*$", log, re.M)


def test_box_warnings_are_found():
    log = "x\nOverfull \\hbox (12.3pt too wide) in paragraph at lines 4--9\ny\nUnderfull \\vbox (badness 10000)\n"
    assert len(box_warnings(log)) == 2
    assert box_warnings("LaTeX Warning: `h' float specifier changed to `ht'.\n") == []


def hyphen_minuses(text: str) -> list[str]:
    """The lines of a paper's text (pdftotext) where a number's sign is a hyphen: ``-0.62`` or
    ``[-1.07, -0.18]`` set in text mode, where the paper sets a minus (U+2212) everywhere else."""
    return [line for line in text.splitlines() if re.search(r"(?:^|[\s\[(,])-\d", line)]


def test_hyphen_minuses_are_found_and_minuses_and_ranges_pass():
    assert hyphen_minuses("BN − none  4  -0.62  [-1.07, -0.18]\nok") == ["BN − none  4  -0.62  [-1.07, -0.18]"]
    assert hyphen_minuses("to 0.934 (-4% of the gap)") == ["to 0.934 (-4% of the gap)"]
    assert hyphen_minuses("−0.62 [−1.07, −0.18]; MLP 64-128-128-10; pp. 448-456; arXiv:2006.10963") == []


def check_paper(build_dir, tmp_path):
    log = (build_dir / "main.log").read_text(errors="replace")
    assert box_warnings(log) == []
    if not (shutil.which("pdftoppm") and shutil.which("pdftotext")):
        pytest.fail("pdftoppm/pdftotext missing: apt-get install -y poppler-utils (make tex installs it)")
    pdf = build_dir / "main.pdf"
    subprocess.run(["pdftoppm", "-r", "30", "-gray", pdf, tmp_path / "p"], check=True)
    pages = sorted(tmp_path.glob("p-*.pgm"))
    count = int(re.search(r"Output written on main\.pdf \((\d+) pages?", log).group(1))
    assert len(pages) == count
    for page in pages[:-1]:  # the last page may end early
        span = inked_span(page)
        assert span >= 0.6, f"{page.name}: content spans {span:.0%} of the text block (a float alone on a page?)"
    # ... but it holds the end of the text (the last reference), not floats flushed after it
    text = subprocess.run(["pdftotext", pdf, "-"], capture_output=True, text=True, check=True).stdout
    assert hyphen_minuses(text) == [], "a sign set as a hyphen (text mode): set the number in math mode"
    last_ref = re.findall(r"^\[\d+\]", text, re.M)[-1]
    end = subprocess.run(["pdftotext", "-f", str(count), "-l", str(count), pdf, "-"], capture_output=True, text=True)
    assert last_ref in end.stdout, "the last page holds only floats flushed after the references"


def inked_span(pgm) -> float:
    """Share of the page's text block (inside 2.2 cm margins) from its first to its last inked row."""
    data = pgm.read_bytes()
    _, w, h, _ = data.split(maxsplit=4)[:4]
    w, h = int(w), int(h)
    img = np.frombuffer(data[-w * h :], dtype=np.uint8).reshape(h, w)
    my, mx = round(h * 2.2 / 29.7), round(w * 2.2 / 21)
    block = img[my : h - my, mx : w - mx]
    rows = np.flatnonzero((block < 200).any(axis=1))
    return float((rows[-1] - rows[0] + 1) / block.shape[0]) if len(rows) else 0.0


def test_inked_span_sees_a_page_with_one_float(tmp_path):
    """A page whose only content is a block in its top third spans a third of the text block."""
    w, h = 250, 350
    img = np.full((h, w), 255, dtype=np.uint8)
    img[40:130, 40:200] = 0
    page = tmp_path / "p-1.pgm"
    page.write_bytes(b"P5 %d %d 255\n" % (w, h) + img.tobytes())
    assert 0.2 < inked_span(page) < 0.4
    img[300:310, 40:200] = 0  # text down to the bottom of the block
    page.write_bytes(b"P5 %d %d 255\n" % (w, h) + img.tobytes())
    assert inked_span(page) > 0.9


@pytest.mark.pipeline
def test_test_config_paper_has_no_box_warnings_and_renders(runs, tmp_path):
    base, _, _ = runs
    check_paper(base / "cores4" / "results" / "paper" / "build", tmp_path)


@pytest.mark.paper_config
def test_built_paper_has_no_box_warnings_and_renders(tmp_path):
    """The paper config's own paper: `make reproduce` builds it and runs this test (`make test` does not)."""
    build_dir = ROOT / "results" / "paper" / "build"
    assert (build_dir / "main.log").exists(), "build the paper config first: make reproduce"
    check_paper(build_dir, tmp_path)
