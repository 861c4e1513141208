"""``dpsim report``'s page rendered by headless Chromium (the Debian package ``chromium``;
skipped, saying why, where none is installed): no console message at all (a JavaScript error
or a Content-Security-Policy violation, shown by a control page to be seen); after the scripts
ran (``--dump-dom``) every figure and table laid out visible with a non-zero size, the sortable
headers focusable and a click on one sorting its rows; a screenshot that is not blank.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from dpsim.engine.presentation.report import CSP, write_report
from report_folders import build

BROWSER = next(
    (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)),
    None,
)
pytestmark = pytest.mark.skipif(
    BROWSER is None,
    reason="no Chromium to render the page (Debian: apt-get install "
    "chromium; scripts/test.sh installs it when it can)",
)
CONSOLE = re.compile(r":CONSOLE[:(]")


def chromium(
    url: str, profile: Path, *args: str, timeout: float = 90
) -> subprocess.CompletedProcess:
    """Headless Chromium on ``url`` (stdout: what ``args`` ask for, stderr: the log with console messages)."""
    return subprocess.run(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def console(log: str) -> list[str]:
    return [line for line in log.splitlines() if CONSOLE.search(line)]


# Measures every figure and table after layout: the count laid out with a size and visible,
# written into the DOM that --dump-dom prints; then clicks the 'n' header of the first summary
# table twice (descending) and records the column it sorted.
PROBE = """<script>
window.addEventListener('load', function () {
  function shown(e) { var r = e.getBoundingClientRect(), s = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; }
  var figures = document.querySelectorAll('figure'), tables = document.querySelectorAll('table');
  var out = document.createElement('pre'); out.id = 'probe';
  var sorted = '';
  var summary = document.querySelector('table.summary');
  if (summary) {
    var heads = summary.querySelectorAll('th'), column = -1;
    heads.forEach(function (h, i) { if (h.textContent.trim() === 'eps') { column = i; } });
    heads[column].click(); heads[column].click();
    sorted = Array.prototype.map.call(summary.tBodies[0].rows, function (r) {
      return r.cells[column].textContent; }).join(',') + ' ' + heads[column].getAttribute('aria-sort');
  }
  out.textContent = JSON.stringify({figures: figures.length,
    figures_shown: Array.prototype.filter.call(figures, function (f) {
      var g = f.querySelector('svg, img'); return g && shown(g); }).length,
    tables: tables.length, tables_shown: Array.prototype.filter.call(tables, shown).length, sorted: sorted});
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DPSIM_JAX_CACHE", "off")
        verify, run = build(root)
    return write_report([verify, run], root / "page.html")


def test_a_control_page_shows_that_errors_and_requests_are_seen(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text(
        f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '</head><body><img src="http://example.invalid/x.png" alt="x">'
        "<script>undefined_function();</script></body></html>"
    )
    log = chromium(bad.as_uri(), tmp_path / "profile", "--dump-dom").stderr
    messages = " ".join(console(log))
    assert "Content Security Policy" in messages and "example.invalid" in messages, log
    assert "undefined_function is not defined" in messages, log


def test_page_renders_without_console_messages(page, tmp_path):
    result = chromium(page.as_uri(), tmp_path / "profile", "--dump-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    assert console(result.stderr) == []
    dom = result.stdout
    # the page's script ran: the sortable headers are focusable
    assert dom.count('tabindex="0"') >= 5
    assert dom.count("<figure>") == 2 and dom.count('role="img" aria-label="pagestudy') == 2


def test_every_figure_and_table_is_laid_out_and_sorting_works(page, tmp_path):
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    result = chromium(probe.as_uri(), tmp_path / "profile", "--dump-dom", "--window-size=1280,1000")
    assert console(result.stderr) == []
    found = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', result.stdout, re.S).group(1))
    tables = len(re.findall(r"<table", page.read_text()))
    assert found["figures"] == found["figures_shown"] == 2
    assert found["tables"] == found["tables_shown"] == tables
    assert found["sorted"] == "2,1 descending"  # stored 1, 2; clicked twice: descending


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_rendered_dom_keeps_alt_text_and_headers(page, tmp_path):
    dom = chromium(page.as_uri(), tmp_path / "profile", "--dump-dom").stdout
    parser = _Tags()
    parser.feed(dom)
    svgs = [a for t, a in parser.tags if t == "svg"]
    assert svgs and all(a.get("role") == "img" and a.get("aria-label") for a in svgs)
    assert all(a.get("alt") for t, a in parser.tags if t == "img")
    tables = dom.count("<table")
    assert tables and dom.count("<thead>") == tables


def test_screenshot_is_not_blank(page, tmp_path):
    shot = tmp_path / "page.png"
    result = chromium(
        page.as_uri(), tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,1600"
    )
    assert shot.exists(), result.stderr[-2000:]
    import matplotlib.image

    pixels = np.asarray(matplotlib.image.imread(shot))[..., :3]
    assert pixels.shape[:2] == (1600, 1280)
    assert pixels.var() > 0
    background = pixels[5, 5]  # the page's white margin
    assert np.mean(np.any(np.abs(pixels - background) > 0.1, axis=-1)) > 0.02
