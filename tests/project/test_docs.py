"""The README is a user's page: short, and every link it gives leads somewhere."""

import re

from conftest import ROOT

README = ROOT / "README.md"


def test_the_readme_fits_its_budget():
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; maintainer material belongs in docs/"


def test_the_two_commands_come_first():
    text = README.read_text()
    first_block = text.split("```sh", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in first_block.strip().splitlines()] == [["make", "#"], ["make", "test"]]


def test_every_relative_link_of_the_readme_and_docs_exists():
    broken = []
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_every_anchor_of_the_readmes_contents_is_a_heading():
    text = README.read_text()
    anchors = set(re.findall(r"\]\(#([^)]+)\)", text))
    headings = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"(?m)^#+ (.+)$", text)}
    assert anchors <= headings, anchors - headings
