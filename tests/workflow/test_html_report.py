"""The HTML report (`make report`): built from the finished native test-config run.

What it embeds is read back from the page (its data: every result's bytes, labels,
category and caption) and compared with the run's files and manifest; then the page
is opened in headless Chromium, driven over the DevTools protocol (through a pipe,
no extra package), which must render the report's menu and description, show every
figure through the report's own view buttons (each PNG and SVG decoded by the
browser at its file's size), offer every other result for download, and log no
console error or uncaught exception while doing so.
"""

import base64
import json
import os
import queue
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import unquote

import pytest

from conftest import snakemake

pytestmark = pytest.mark.pipeline

# What the report must hold: every hashed output matching one of these (the paper's
# figures, each as PDF and PNG; its LaTeX tables; each study's summary; the paper),
# and the build's runtimes, which are not hashed.
REPORTED = re.compile(
    r"results/paper/figures/\w+\.(pdf|png)|results/paper/tables/\w+\.tex|results/summary/\w+\.json|paper/main\.pdf"
)
UNHASHED = {"results/provenance/runtimes.csv"}
STUDY = re.compile(r"Study (\d+) - \S.*")  # ten studies or more: numbered 1, 2, ..., 10
FORMATS = {"image/png": "raster (PNG)", "application/pdf": "vector (PDF)"}
TITLE = "Batch normalisation at training versus inference time"


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory):
    """The report of the native run (written outside the run's directory), and the run."""
    base, manifests, _ = runs
    workdir = base / "cores1"
    html = tmp_path_factory.mktemp("report") / "report.html"
    start = time.monotonic()
    result = snakemake("--configfile", "config/test.yaml", "--report", str(html), cwd=workdir, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    print(f"report built in {time.monotonic() - start:.1f} s wall, {result.cpu_seconds:.1f} CPU s")
    return workdir, manifests["cores1"], html


def embedded(html: Path) -> dict:
    """The report's data: the JSON assigned to ``var <name>`` in the page's scripts."""
    text = html.read_text(encoding="utf-8")
    data = {}
    for script, name in (("results", "results"), ("categories", "categories"), ("workflow-desc", "workflow_desc")):
        match = re.search(rf'<script id="{script}">\s*var {name} = (.*?);\s*</script>', text, re.S)
        assert match, f"no {name} in the report"
        data[name] = json.loads(match.group(1))
    return data


def decoded(data_uri: str) -> tuple[str, bytes]:
    header, _, payload = data_uri.partition(",")
    assert header.startswith("data:") and header.endswith(";base64"), header[:100]
    return header[5:].split(";")[0], base64.b64decode(payload, validate=True)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_report_embeds_every_figure_table_summary_and_the_paper_byte_for_byte(report):
    from bnstudy.pipeline import manifest

    workdir, manifest_path, html = report
    results = embedded(html)["results"]
    hashed = set(manifest.read(manifest_path)["path"])
    expected = {p for p in hashed if REPORTED.fullmatch(p)} | UNHASHED
    assert {p for p in expected if p.startswith("results/paper/figures/")}, "no figure in the manifest"
    assert set(results) == expected
    for path, entry in results.items():
        mime, data = decoded(entry["data_uri"])
        assert mime == entry["mime_type"], path
        assert data == (workdir / path).read_bytes(), f"{path}: the embedded bytes are not the file's"
        if mime == "application/pdf":
            assert data.startswith(b"%PDF-"), path
        elif mime == "image/png":
            png_size(data)
        assert entry["caption"].strip(), f"{path} has no caption"
        assert "system-message" not in entry["caption"], f"{path}: its caption does not render: {entry['caption']}"


def test_report_groups_by_study_and_labels_every_figure_by_its_normalisers(report, test_config):
    from bnstudy.base import normalisers

    _, _, html = report
    data = embedded(html)
    results, categories = data["results"], data["categories"]
    studies = sorted((c for c in categories if STUDY.fullmatch(c)), key=lambda c: int(STUDY.fullmatch(c).group(1)))
    from bnstudy.base import catalogue

    count = len(catalogue.included(test_config))  # one category per study the config runs, numbered in order
    assert [STUDY.fullmatch(c).group(1) for c in studies] == [str(i) for i in range(1, count + 1)], list(categories)
    assert set(categories) == {*studies, "Methods", "Paper", "Provenance"}  # Methods: the table of families
    assert list(categories["Methods"].values()) == [["results/paper/tables/families.tex"]], categories["Methods"]
    assert list(categories["Paper"].values()) == [["paper/main.pdf"]], categories["Paper"]
    included = catalogue.included(test_config)
    for study in studies:
        folders = categories[study]
        figures = [f for f in folders if f.startswith("Figure: ")]
        # a figure folder for each study that draws figures (the catalogue's), none for a study of tables
        drawn = included[int(STUDY.fullmatch(study).group(1)) - 1].figures
        assert bool(figures) == bool(drawn), (study, list(folders))
        assert {"LaTeX tables", "Summary"} == set(folders) - set(figures), (study, list(folders))
        assert all(p.startswith("results/summary/") for p in folders["Summary"]), study
        assert all(p.startswith("results/paper/tables/") for p in folders["LaTeX tables"]), study
        for folder in figures:
            # one figure per folder: its PDF and its PNG twin, labelled alike but for the format,
            # so that the report offers the format as a switch (its first value, the PNG, shown)
            paths = sorted(folders[folder])
            assert [Path(p).suffix for p in paths] == [".pdf", ".png"], (study, folder, paths)
            assert Path(paths[0]).stem == Path(paths[1]).stem, paths
            labels = [results[p]["labels"] for p in paths]
            assert [list(lab) for lab in labels] == [["normalisers", "panels", "format"]] * 2, labels
            assert [lab["format"] for lab in labels] == [FORMATS[results[p]["mime_type"]] for p in paths]
            assert sorted(lab["format"] for lab in labels)[0] == FORMATS["image/png"]
            assert labels[0] | {"format": ""} == labels[1] | {"format": ""}, labels
            known = {n.label for n in normalisers.REGISTRY}
            named = {w.strip() for w in re.split(r"[,;(]", labels[0]["normalisers"])}
            assert named & known, (paths, labels[0])
    every = ", ".join(normalisers.get(n).label for n in test_config["normalisers"])
    assert results["results/paper/figures/batch_size.png"]["labels"]["normalisers"] == every
    batch = [n for n in test_config["normalisers"] if normalisers.get(n).batch_statistics]
    panels = results["results/paper/figures/companions.png"]["labels"]["panels"]
    assert panels.endswith(", ".join(normalisers.get(n).label for n in batch)), panels
    for path, entry in results.items():
        if not path.startswith("results/paper/figures/"):
            assert entry["labels"] and len(entry["labels"]) == 1, (path, entry["labels"])


def test_report_description_page_renders_with_links_to_every_study(report, test_config):
    _, _, html = report
    data = embedded(html)
    page = data["workflow_desc"]
    assert TITLE in page and "system-message" not in page, page[:3000]
    assert ", ".join(test_config["normalisers"]) in page
    links = [unquote(m) for m in re.findall(r"app\.showCategory\('([^']*)'\)", page)]
    linked = {link for link in links if link in data["categories"]}
    assert linked == {c for c in data["categories"] if STUDY.fullmatch(c)} | {"Paper"}, links


# ---- the page in a browser ---------------------------------------------------------
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",  # the suite runs as root
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--remote-debugging-pipe",
)


# Puts the pipe ends given as its first two arguments at fds 3 and 4, then execs the rest.
AT_3_AND_4 = """
import fcntl, os, sys
ends = [fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[1:3]]
for fd in sys.argv[1:3]:
    os.close(int(fd))
for target, fd in zip((3, 4), ends):
    os.dup2(fd, target)
    os.close(fd)
os.execvp(sys.argv[3], sys.argv[3:])
"""


class Browser:
    """Headless Chromium driven over the DevTools protocol through ``--remote-debugging-pipe``:
    JSON messages ending in a NUL byte, read by the browser from its fd 3 and written to fd 4."""

    def __init__(self, executable: str, profile: Path, log):
        to_browser, self._commands = os.pipe()
        self._replies, from_browser = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", AT_3_AND_4, str(to_browser), str(from_browser), executable, *FLAGS]
            + [f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(to_browser, from_browser),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        os.close(to_browser)
        os.close(from_browser)
        self.messages: queue.Queue = queue.Queue()
        self.events: list[dict] = []
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buffer = b""
        with os.fdopen(self._replies, "rb", buffering=0) as replies:
            while chunk := replies.read(1 << 16):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for message in messages:
                    self.messages.put(json.loads(message))
        self.messages.put(None)  # the browser closed its end

    def call(self, method: str, session: str | None = None, timeout: float = 60, **params):
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self.messages.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert reply is not None, f"the browser closed during {method}"
            if reply.get("id") == self._next:
                assert "error" not in reply, (method, reply["error"])
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        seen = [e for e in self.events if e.get("method") == method]
        deadline = time.monotonic() + timeout
        while not seen:
            event = self.messages.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert event is not None, f"the browser closed before {method}"
            self.events.append(event)
            if event.get("method") == method:
                seen.append(event)
        return seen[0]

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except (AssertionError, queue.Empty, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self._commands)


def problems(events: list[dict]) -> list[str]:
    """Console errors, failed assertions, uncaught exceptions and error log entries."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            found.append(
                f"console.{params['type']}: "
                + " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
            )
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            found.append("uncaught: " + details.get("exception", {}).get("description", details.get("text", "")))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(
                f"{params['entry']['source']}: {params['entry']['text']} {params['entry'].get('url', '')[:120]}"
            )
    return found


# In the page: wait for the app's menu, then press each result's view button as the report
# draws it (its ButtonViewManager, which chooses by MIME type) and look at what it shows.
DRIVE = """
(async () => {
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const until = async (ready, what) => {
        for (let i = 0; i < 1200; i++) { if (ready()) return ready(); await sleep(25); }
        throw new Error("timed out waiting for " + what);
    };
    await until(() => typeof app !== "undefined" && document.querySelector("#app nav, #app ul"), "the menu");
    const out = {
        menu: document.querySelector("#app").innerText,
        heading: (document.querySelector("#app .prose h1") || {}).textContent || null,
        loading: getComputedStyle(document.querySelector("#loading-screen")).display,
        shown: {},
    };
    const buttons = new ButtonViewManager(app);
    for (const [path, entry] of Object.entries(results)) {
        const button = buttons.handleSelectedResult(path);
        const kind = entry.mime_type;
        if (kind.startsWith("image/") || kind === "application/pdf") {
            button.props.onClick();
            const tag = kind === "application/pdf" ? "iframe" : "img";
            const element = await until(
                () => [...document.querySelectorAll("#app " + tag)].find((el) => el.src === entry.data_uri), path);
            if (tag === "img") {
                try {
                    await element.decode();
                    out.shown[path] = {width: element.naturalWidth, height: element.naturalHeight};
                } catch (error) {
                    out.shown[path] = {error: String(error)};
                }
            } else {
                out.shown[path] = {iframe: true};
            }
        } else {
            out.shown[path] = {download: button.props.download, same: button.props.href === entry.data_uri};
        }
    }
    app.setView({content: "rulegraph"});
    await sleep(200);
    return out;
})()
"""


def test_report_opens_in_chromium_every_figure_shows_and_no_console_errors(report, tmp_path):
    executable = next((found for name in BROWSERS if (found := shutil.which(name))), None)
    if executable is None:
        pytest.skip("no Chromium to open the report in: `make browser` installs it (apt-get install chromium)")
    workdir, _, html = report
    results = embedded(html)["results"]
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as log:
        browser = Browser(executable, tmp_path / "profile", log)
        try:
            target = browser.call("Target.createTarget", url="about:blank")["targetId"]
            session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            for domain in ("Runtime", "Log", "Page"):
                browser.call(f"{domain}.enable", session)
            browser.call("Page.navigate", session, url=html.as_uri())
            browser.wait_for("Page.loadEventFired")
            value = browser.call(
                "Runtime.evaluate", session, timeout=120, expression=DRIVE, awaitPromise=True, returnByValue=True
            )
        finally:
            browser.close()
        log.seek(0)
        browser_log = log.read()[-2000:]
    print(f"browser checks in {time.monotonic() - start:.1f} s wall")
    assert "exceptionDetails" not in value, (value["exceptionDetails"], browser_log)
    page = value["result"]["value"]
    assert page["loading"] == "none", "the loading screen is still shown"
    assert page["heading"] == TITLE
    for name in ("Workflow", "Statistics", "Paper", "Provenance", "Study 1 - Companion dependence"):
        assert name in page["menu"], (name, page["menu"][:500])
    assert set(page["shown"]) == set(results)
    for path, shown in page["shown"].items():
        mime, data = decoded(results[path]["data_uri"])
        if mime == "image/png":
            assert shown == dict(zip(("width", "height"), png_size(data))), (path, shown)
        elif mime == "application/pdf":
            assert shown == {"iframe": True}, (path, shown)
        else:
            assert shown == {"download": Path(path).name, "same": True}, (path, shown)
    assert not problems(browser.events), (problems(browser.events), browser_log)
