"""Open the built pages in headless Chromium: the graphics must render with a real size, in the
light and the dark colour scheme (furo follows ``prefers-color-scheme``).

Needs Debian's ``chromium`` (``apt-get install -y chromium``); skipped with a reason otherwise.
Screenshots land in tests/artifacts/ for a person to look at.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_sphinx_ext import build, make_project

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).parent / "artifacts"

# Appended to a built page: measures every apiprof graphic and writes the numbers into the DOM,
# which --dump-dom then prints.
PROBE = """
<script>
window.addEventListener("load", function () {
  function box(el) { var r = el.getBoundingClientRect(); return {w: r.width, h: r.height}; }
  var out = {
    graphics: Array.prototype.map.call(document.querySelectorAll("svg.apiprof-graphic"), function (svg) {
      return {cls: svg.getAttribute("class"), box: box(svg), color: getComputedStyle(svg).color,
              bars: Array.prototype.map.call(svg.querySelectorAll("rect.apiprof-bar, rect.apiprof-cell"), box)};
    }),
    background: getComputedStyle(document.body).backgroundColor,
    scheme: matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"
  };
  var pre = document.createElement("pre");
  pre.id = "apiprof-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def chromium(*args: str, profile: Path) -> str:
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--hide-scrollbars",
        "--virtual-time-budget=3000",
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def luminance(css_colour: str) -> float:
    channels = [
        float(c)
        for c in css_colour[css_colour.index("(") + 1 : css_colour.index(")")].split(",")[:3]
    ]
    return sum(w * c / 255 for w, c in zip((0.2126, 0.7152, 0.0722), channels))


@pytest.fixture(scope="module")
def furo_site(tmp_path_factory) -> Path:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    srcdir = make_project(tmp_path_factory.mktemp("browser"))
    app, _ = build(srcdir, html_theme="furo")
    return Path(app.outdir)


def probe(page: Path, tmp_path: Path, *flags: str) -> dict:
    probe_page = page.with_name(f"probe-{page.name}")
    probe_page.write_text(
        page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8"
    )
    dom = chromium("--dump-dom", *flags, probe_page.as_uri(), profile=tmp_path / "profile")
    start = dom.index('<pre id="apiprof-probe">') + len('<pre id="apiprof-probe">')
    return json.loads(
        dom[start : dom.index("</pre>", start)].replace("&quot;", '"').replace("&amp;", "&")
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_graphics_render_with_size_in_both_colour_schemes(furo_site, tmp_path, scheme):
    flags = (
        ("--force-dark-mode", "--blink-settings=preferredColorScheme=0")
        if scheme == "dark"
        else ("--blink-settings=preferredColorScheme=1",)
    )
    found = probe(furo_site / "index.html", tmp_path, *flags)
    assert found["scheme"] == scheme
    histograms = [g for g in found["graphics"] if "apiprof-histogram" in g["cls"]]
    strips = [g for g in found["graphics"] if "apiprof-strip" in g["cls"]]
    # parse's full card; render and the alias compact
    assert len(histograms) == 2 and len(strips) == 2
    for graphic in found["graphics"]:
        assert graphic["box"]["w"] > 50 and graphic["box"]["h"] > 8, graphic
        assert graphic["bars"] and all(b["w"] > 0 and b["h"] > 0 for b in graphic["bars"]), graphic
    # axis text follows the theme's text colour, so it contrasts with the page in either scheme
    text, background = luminance(histograms[0]["color"]), luminance(found["background"])
    assert abs(text - background) > 0.5
    assert (text > background) == (scheme == "dark")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"summary-furo-{scheme}.png"
    chromium(
        f"--screenshot={shot}",
        "--window-size=1200,1000",
        *flags,
        (furo_site / "index.html").as_uri(),
        profile=tmp_path / "profile",
    )
    assert shot.stat().st_size > 10_000


def test_drilldown_page_renders_every_chart(furo_site, tmp_path):
    found = probe(furo_site / "apiprof" / "demo_mod.render.html", tmp_path)
    classes = [g["cls"].split()[-1] for g in found["graphics"]]
    assert classes.count("apiprof-histogram") == 3  # wall time, CPU time, allocation
    assert "apiprof-growth" in classes
    for graphic in found["graphics"]:
        assert graphic["box"]["w"] > 50 and graphic["box"]["h"] > 8, graphic
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "drilldown-furo.png"
    chromium(
        f"--screenshot={shot}",
        "--window-size=1200,2400",
        (furo_site / "apiprof" / "demo_mod.render.html").as_uri(),
        profile=tmp_path / "profile",
    )
    assert shot.stat().st_size > 10_000
