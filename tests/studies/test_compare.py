"""Side by side (bnstudy.studies.compare): other builds' headline numbers, read from their macro files
once those match a manifest, beside this build's; the section through the pipeline on the test
config's build and the tiny Fashion build."""

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from bnstudy.base.config import ConfigError, load_schema, validate
from bnstudy.pipeline import manifest
from bnstudy.pipeline.pinned import macro_definitions
from bnstudy.studies.compare import report
from conftest import ROOT, snakemake

MACROS = "results/paper/macros"


def write_build(root, files: dict[str, dict[str, str]]):
    """A build's macro files under ``root`` and its manifest (``root/expected.tsv``), as the pipeline
    writes them; returns the manifest's path."""
    from bnstudy.paper import latex

    (root / MACROS).mkdir(parents=True)
    for name, macros in files.items():
        latex.write_macros(root / MACROS / f"{name}.tex", macros, name)
    entries = [("rule", "", f"{MACROS}/{name}.tex") for name in files]
    cwd = os.getcwd()
    try:
        os.chdir(root)  # the manifest's paths are relative to the build's directory
        table = manifest.build(entries)
    finally:
        os.chdir(cwd)
    manifest.write(root / "expected.tsv", table)
    return root / "expected.tsv"


def test_macros_calling_macros_are_expanded_with_the_builds_own_bodies():
    macros = {"a": r"\b{} of \c", "b": "12", "c": r"4.5\% \, \textsc{x}"}
    # the build's own \b and \c, not this paper's; \%, \, and \textsc are left for LaTeX
    assert report.expand(macros["a"], macros) == r"12{} of 4.5\% \, \textsc{x}"
    with pytest.raises(ValueError, match="deeper"):
        report.expand(r"\loop", {"loop": r"\loop"})


def test_a_cell_is_its_template_filled_or_a_dash_when_a_macro_is_missing():
    macros = {"accX": "0.912", "ciX": "[0.90, 0.92]", "batchX": "64"}
    assert report.cell("@accX @ciX at $b=@batchX$", macros) == "0.912 [0.90, 0.92] at $b=64$"
    assert report.cell("@accX @ciY", macros) == report.MISSING == "---"


def test_the_table_has_a_column_per_build_and_names_the_network():
    mlp, conv = {"dataSetName": "digits"}, {"dataSetName": "Fashion-MNIST", "netConv": "conv"}
    header, rows = report.table([mlp, conv])
    assert header == ["", "This paper", "Other build 1"]
    assert [r[0] for r in rows][:2] == ["Data set", "Network"] and len(rows) == len(report.ROWS) + 1
    assert rows[0][1:] == ["digits", "Fashion-MNIST"] and rows[1][1:] == ["fully connected", "convolutional"]
    assert all(r[1:] == [report.MISSING] * 2 for r in rows[2:])  # neither build wrote the other macros
    text = report.tabular(header, rows)
    body = [line for line in text.splitlines() if line.endswith(r"\tabularnewline")]
    assert len(body) == len(rows) + 1 and all(line.count(" & ") == 2 for line in body)
    assert r"\begin{tabular}{p{4.3cm}p{3.5cm}p{3.5cm}}" in text
    assert report.macros([mlp, conv], 7) == {
        "compareOthers": "Fashion-MNIST with a convolutional network",
        "compareOtherCount": "one other build",
        "compareTheOthers": "the other build",
        "compareParts": "Part~II",
        "compareFilesChecked": "7",
    }
    plural = report.macros([mlp, conv, mlp], 1234)
    assert plural["compareOtherCount"] == "2 other builds" and plural["compareTheOthers"] == "the other builds"
    assert plural["compareOthers"] == (
        "Fashion-MNIST with a convolutional network and digits with a fully connected network"
    )
    assert plural["compareFilesChecked"] == "1{,}234"


def test_a_builds_macros_are_read_only_when_each_file_matches_its_manifest(tmp_path):
    expected = write_build(
        tmp_path,
        {"design": {"dataSetName": "Fashion-MNIST"}, "batch_size": {"batchMax": "128"}, "provenance": {"x": "1"}},
    )
    macros, files = report.verified_macros(tmp_path, expected)
    assert macros == {"dataSetName": "Fashion-MNIST", "batchMax": "128"} and files == 2  # provenance not read
    changed = tmp_path / MACROS / "batch_size.tex"
    changed.write_text(changed.read_text().replace("128", "129"))
    with pytest.raises(ValueError, match=f"{changed}: its bytes differ from those {expected} records"):
        report.verified_macros(tmp_path, expected)
    changed.unlink()
    with pytest.raises(ValueError, match=f"{changed}: missing"):
        report.verified_macros(tmp_path, expected)


def test_a_bad_build_stops_the_config_check_in_one_line_naming_the_file(tmp_path):
    expected = write_build(tmp_path / "other", {"design": {"dataSetName": "Fashion-MNIST"}})
    config = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    schema = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")
    config["compare"] = {"builds": [{"directory": str(tmp_path / "other"), "expected": str(expected)}]}
    validate(config, schema)
    bad = tmp_path / "other" / MACROS / "design.tex"
    bad.write_text(bad.read_text() + "% edited\n")
    cases = [
        ({"directory": str(tmp_path / "other"), "expected": str(expected)}, f"compare.builds[0]: {bad}: its bytes"),
        ({"directory": str(tmp_path / "none"), "expected": str(expected)}, "compare.builds[0].directory: "),
        ({"directory": str(tmp_path / "other"), "expected": str(tmp_path / "x.tsv")}, "compare.builds[0].expected: "),
    ]
    for build, message in cases:
        config["compare"] = {"builds": [build]}
        with pytest.raises(ConfigError) as e:
            validate(config, schema)
        assert "\n" not in str(e.value) and str(e.value).startswith(f"config error: {message}"), str(e.value)
    other = {"directory": str(tmp_path / "other"), "expected": str(expected)}
    config["compare"] = {"builds": [other] * 3}  # three more columns would not fit the page
    with pytest.raises(ConfigError, match=r"compare.builds: .* is too long"):
        validate(config, schema)
    config["compare"] = {"builds": [{"directory": "."}]}
    with pytest.raises(ConfigError, match=r"compare.builds\[0\].expected: required key is missing"):
        validate(config, schema)


@pytest.mark.pipeline
def test_the_test_configs_paper_sets_the_tiny_fashion_builds_headlines_beside_its_own(runs, fashion_tiny, tmp_path):
    """A copy of the test config's build, given the tiny Fashion build to compare with: only the side-by-side
    summary and the bookkeeping run, every other output keeps its bytes, each column holds its own build's
    macros, and the paper prints the section."""
    base, manifests, _ = runs
    work = tmp_path / "wf"
    shutil.copytree(base / "cores4", work, symlinks=True)
    expected = ROOT / "config" / "expected" / "fashion-tiny.manifest.tsv"
    compare = {"compare": {"builds": [{"directory": str(fashion_tiny.workdir), "expected": str(expected)}]}}
    # the test config as it is, with the section added (key order kept: rules whose parameters are
    # dicts of the config would otherwise see other parameters and re-run)
    (work / "compare.yaml").write_text((work / "config" / "test.yaml").read_text() + yaml.safe_dump(compare))
    result = snakemake("--configfile", "compare.yaml", cwd=work, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    stats = result.stderr.split("Job stats:")[1].split("total")[0]
    ran = set(re.findall(r"^(\w+)\s+\d+\s*$", stats, re.M))
    # the design macros and the build record take the whole config as a parameter (their bytes stay)
    bookkeeping = {"design_macros", "provenance", "paper", "manifest", "runtimes", "all"}
    assert ran == {"summarise_compare"} | bookkeeping, ran
    before = manifest.read(manifests["cores4"]).set_index("path")["sha256"]
    after = manifest.read(work / "results" / "manifest.tsv").set_index("path")["sha256"]
    new = {"results/summary/compare.json", f"{MACROS}/compare.tex", "results/paper/tables/compare.tex"}
    assert set(after.index) == set(before.index) | new
    # the build record lists every output, and the paper prints the new section: nothing else changes
    record = {"results/provenance/analysis_manifest.tsv", f"{MACROS}/provenance.tex", "paper/main.pdf"}
    assert {p for p in before.index if before[p] != after[p]} <= record | {"results/paper/tables/provenance.tex"}
    ours = {}
    for path in sorted((base / "cores4" / MACROS).glob("*.tex")):
        ours |= macro_definitions(path)
    theirs = {}
    for path in sorted((fashion_tiny.workdir / MACROS).glob("*.tex")):
        if path.name not in report.NOT_READ:
            theirs |= macro_definitions(path)
    summary = json.loads((work / "results" / "summary" / "compare.json").read_text())
    cells = {b["column"]: b["cells"] for b in summary["builds"]}
    assert cells["This paper"]["Data set"] == ours["dataSetName"] == "scikit-learn's handwritten digits"
    assert cells["Other build 1"]["Data set"] == theirs["dataSetName"] == "Fashion-MNIST"
    assert cells["Other build 1"]["Network"] == "convolutional" and cells["This paper"]["Network"] == "fully connected"
    flips = "Label changes among random batches, smallest size"
    for column, macros in (("This paper", ours), ("Other build 1", theirs)):
        assert cells[column][flips] == (
            f"{macros['compNetFlipRateMin']} {macros['compNetFlipRateCombinedCiMin']} at $b={macros['compSizeMin']}$"
        )
    pdf = subprocess.run(["pdftotext", str(work / "paper" / "main.pdf"), "-"], capture_output=True, text=True).stdout
    text = " ".join(pdf.split())  # the lines as the page breaks them, joined
    assert "Side by side" in text and "beside those of one other build: Fashion-MNIST with a convolutional" in text


def build_macros(name, conv, gain, ci, flip, flip_ci, size="2", batch="2", tag="adjusted"):
    """A build's macros as its summaries write them (batch norm minus none at the smallest and largest
    grid batch, the label-change rate at the smallest probe size; ``tag``: how its config's declared
    family ``normalisers`` names the interval)."""
    m = {"dataSetName": name, "batchMin": batch, "batchMax": "128", "compSizeMin": size, "familyNormalisersTag": tag,
         "pairedBatchnormVsNoneMinGain": gain, "pairedBatchnormVsNoneMinAdjCi": ci,
         "pairedBatchnormVsNoneMaxGain": "+0.40", "pairedBatchnormVsNoneMaxAdjCi": "[-0.20, +1.00]",
         "compNetFlipRateMin": flip, "compNetFlipRateCombinedCiMin": flip_ci}  # fmt: skip
    if conv:
        m["netConv"] = "1"
    return m


def test_numbers_reads_a_macro_body_as_printed():
    assert report.numbers("[-25.10, +17.40]") == [-25.10, 17.40]
    assert report.numbers("45.3\\% [40.1\\%, 50.0\\%]") == [45.3, 40.1, 50.0]
    assert report.numbers("55{,}000") == [55000.0]


def test_the_verdicts_group_the_builds_by_the_sign_of_their_own_adjusted_interval():
    digits = build_macros("digits", False, "-10.50", "[-14.00, -7.00]", "40.0\\%", "[35.0\\%, 45.0\\%]")
    mlp = build_macros("Fashion-MNIST", False, "-20.10", "[-25.00, -15.20]", "30.0\\%", "[28.0\\%, 33.0\\%]")
    cnn = build_macros(
        "Fashion-MNIST", True, "-1.00", "[-3.00, +1.00]", "10.0\\%", "[8.0\\%, 12.0\\%]", tag="unadjusted"
    )
    found = report.findings_macros([digits, mlp, cnn])
    smallest = found["compareFindingsSmallest"]
    assert smallest.startswith("At each build's smallest grid batch size, for digits (fully connected) and "
                               "Fashion-MNIST (fully connected) batch normalisation scores below no normaliser; "
                               "for Fashion-MNIST (convolutional) the interval contains zero")  # fmt: skip
    # each build's interval named by its own config's declaration of the family
    assert "digits (fully connected), $b = 2$: $-10.50$ $[-14.00, -7.00]$ (adjusted)" in smallest
    assert "Fashion-MNIST (convolutional), $b = 2$: $-1.00$ $[-3.00, +1.00]$ (unadjusted)" in smallest
    assert "interval at the level its config declares" in smallest and "Bonferroni" not in smallest
    assert found["compareFindingsLargest"].startswith(
        "At each build's largest grid batch size, in every build the interval contains zero"
    )
    flips = found["compareFindingsFlips"]
    assert "Fashion-MNIST (convolutional)'s rate is lower than Fashion-MNIST (fully connected)'s" in flips
    assert "the intervals overlap for" not in flips  # every pair is ordered
    assert "Fashion-MNIST (fully connected)'s rate is lower than digits (fully connected)'s" in flips
    assert "conservative" in flips


def test_two_builds_of_the_same_data_and_network_are_named_apart_by_their_column():
    """Two Fashion-MNIST MLP builds (say, two seed sets) read alike by data set and network alone:
    each is named with its table column, and a build whose name is its own keeps the short one."""
    digits = build_macros("digits", False, "-10.50", "[-14.00, -7.00]", "40.0\\%", "[35.0\\%, 45.0\\%]")
    one = build_macros("Fashion-MNIST", False, "-20.10", "[-25.00, -15.20]", "30.0\\%", "[28.0\\%, 33.0\\%]")
    two = build_macros("Fashion-MNIST", False, "-2.00", "[-3.00, -1.00]", "20.0\\%", "[18.0\\%, 22.0\\%]")
    assert report.short_names([digits, one, two]) == [
        "digits (fully connected)",
        "Fashion-MNIST (fully connected, other build 1)",
        "Fashion-MNIST (fully connected, other build 2)",
    ]
    flips = report.findings_macros([digits, one, two])["compareFindingsFlips"]
    assert (
        "Fashion-MNIST (fully connected, other build 2)'s rate is lower than "
        "Fashion-MNIST (fully connected, other build 1)'s"
    ) in flips
    assert report.table([digits, one, two])[0] == ["", "This paper", "Other build 1", "Other build 2"]


def test_builds_probed_at_other_sizes_or_overlapping_are_not_ordered():
    a = build_macros("digits", False, "-1.0", "[-2.0, -0.5]", "40.0\\%", "[35.0\\%, 45.0\\%]")
    b = build_macros("Fashion-MNIST", True, "-1.0", "[-2.0, -0.5]", "42.0\\%", "[38.0\\%, 47.0\\%]")
    flips = report.findings_macros([a, b])["compareFindingsFlips"]
    assert (
        "the intervals overlap for digits (fully connected) with Fashion-MNIST (convolutional), so this "
        "comparison cannot order that pair"
    ) in flips
    b["compSizeMin"] = "4"
    assert "probe different sizes and are not compared" in report.findings_macros([a, b])["compareFindingsFlips"]
    assert report.findings_macros([{"dataSetName": "x"}, {"dataSetName": "y"}]) == {}


def test_an_appended_paper_is_copied_only_with_the_bytes_its_manifest_records(tmp_path):
    build = tmp_path / "other"
    (build / "paper").mkdir(parents=True)
    (build / "paper" / "main.pdf").write_bytes(b"%PDF-1.5 the paper")
    import hashlib

    digest = hashlib.sha256(b"%PDF-1.5 the paper").hexdigest()
    expected = tmp_path / "expected.tsv"
    expected.write_text("rule\twildcards\tpath\tbytes\tsha256\npaper\t\tpaper/main.pdf\t18\t" + digest + "\n")
    report.copy_verified(build, expected, "paper/main.pdf", tmp_path / "part1.pdf")
    assert (tmp_path / "part1.pdf").read_bytes() == b"%PDF-1.5 the paper"
    (build / "paper" / "main.pdf").write_bytes(b"%PDF-1.5 the pager")
    with pytest.raises(ValueError, match="its bytes differ"):
        report.copy_verified(build, expected, "paper/main.pdf", tmp_path / "part2.pdf")
    assert not (tmp_path / "part2.pdf").exists()


def test_the_appended_parts_name_each_build_and_its_manifest():
    sources = [{"directory": ".", "expected": None},
               {"directory": "builds/fashion-mlp", "expected": "config/expected/fashion-mlp.manifest.tsv"}]  # fmt: skip
    text = report.parts_tex(sources, [{}, {"dataSetName": "Fashion-MNIST"}], ["generated/parts/part1.pdf"])
    assert "\\section*{Part II: Fashion-MNIST with a fully connected network}" in text
    assert "\\texttt{config/expected/fashion-mlp.manifest.tsv}" in text
    assert text.count("\\includepdf[pages=-]{generated/parts/part1.pdf}") == 1


@pytest.mark.parametrize("same_data", [True, False])
@pytest.mark.parametrize("same_network", [True, False])
@pytest.mark.parametrize("same_rows", [True, False])
@pytest.mark.parametrize("same_recipe", [True, False])
def test_two_builds_ordered_by_their_flip_rates_are_said_to_differ_in_what_differs(
    same_data, same_network, same_rows, same_recipe
):
    """A lower label-change rate of one build than another's is a comparison across builds: the
    sentence names what differs between the two (data set, network, training rows, the dependence
    networks' recipe), and only that, in every combination."""
    from test_sentences import problems

    a = build_macros("Fashion-MNIST", False, "-1.0", "[-2.0, -0.5]", "40.0\\%", "[35.0\\%, 45.0\\%]")
    c = build_macros("Fashion-MNIST" if same_data else "digits", not same_network, "-1.0", "[-2.0, -0.5]",
                     "20.0\\%", "[15.0\\%, 25.0\\%]")  # fmt: skip
    a |= {"trainRows": "55{,}000", "depLr": "0.003", "depEpochs": "10"}
    c |= {
        "trainRows": "55{,}000" if same_rows else "10{,}000",
        "depLr": "0.003",
        "depEpochs": "10" if same_recipe else "20",
    }
    flips = report.findings_macros([a, c])["compareFindingsFlips"]
    if not (same_data and same_network):  # builds of one data set and network share one name
        assert not problems(flips), flips
    expected = [name for name, same in (("data set", same_data), ("network", same_network),
                                        ("training rows", same_rows),
                                        ("the dependence networks' recipe", same_recipe)) if not same]  # fmt: skip
    assert report.differences(a, c) == expected
    low = "digits" if not same_data else "Fashion-MNIST"
    kind = "fully connected" if same_network else "convolutional"
    # two builds of one data set and network are told apart by their table columns
    lower = f"{low} ({kind}{', other build 1' if same_data and same_network else ''})'s rate is lower than"
    assert lower in flips, flips
    if expected:
        words = expected[0] if len(expected) == 1 else ", ".join(expected[:-1]) + " and " + expected[-1]
        assert f"'s, builds that differ in {words}." in flips, flips
    else:
        assert "differ in" not in flips, flips
