"""Open the built pages in headless Chromium: the graphics must render with a real size, in the
light and the dark colour scheme (furo follows ``prefers-color-scheme``), and nothing of
apiprof's may widen a page or spill out of the theme's content column, on a phone or a desktop.

Needs Debian's ``chromium`` (``apt-get install -y chromium``); skipped with a reason otherwise.
Screenshots land in tests/artifacts/ for a person to look at.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from sphinxhelp import build, make_project

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
    graphics: Array.prototype.map.call(document.querySelectorAll("svg.apiprof-chart"), function (svg) {
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
    return sum(w * c / 255 for w, c in zip((0.2126, 0.7152, 0.0722), channels, strict=False))


def site(tmp_path_factory, theme: str) -> Path:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    srcdir = make_project(tmp_path_factory.mktemp(f"browser-{theme}"))
    app, _ = build(srcdir, html_theme=theme)
    return Path(app.outdir)


@pytest.fixture(scope="module")
def furo_site(tmp_path_factory) -> Path:
    return site(tmp_path_factory, "furo")


@pytest.fixture(scope="module", params=["furo", "alabaster"])
def any_site(request, tmp_path_factory) -> Path:
    return site(tmp_path_factory, request.param)


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
    histograms = [g for g in found["graphics"] if "apiprof-chart-histogram" in g["cls"]]
    strips = [g for g in found["graphics"] if "apiprof-chart-strip" in g["cls"]]
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
    assert classes.count("apiprof-chart-histogram") == 2  # wall time and allocation
    assert "apiprof-chart-growth" in classes
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


WIDTHS = {"phone": 500, "desktop": 1280}
PAGES = ["index.html", "api.html", "apiprof/demo_mod.render.html", "apiprof/index.html"]

# Loads every page at every width in iframes (an iframe's width is its page's viewport) and
# measures, per page: how wide the page is against its viewport, and how far any apiprof element
# reaches past the theme's content column.
LAYOUT_PROBE = """<!DOCTYPE html><html><body>
%(frames)s
<script>
window.addEventListener("load", function () {
  var out = [];
  document.querySelectorAll("iframe").forEach(function (frame) {
    var doc = frame.contentDocument, win = frame.contentWindow;
    var spill = [];
    doc.querySelectorAll(".apiprof-summary, .apiprof-scroll, .apiprof-page svg.apiprof-chart").forEach(function (el) {
      if (el.parentElement.closest(".apiprof-scroll")) return;  // scrolls inside its own box
      var column = el.closest("[role=main], article, main, .body") || doc.body;
      var over = el.getBoundingClientRect().right - column.getBoundingClientRect().right;
      if (over > 1) spill.push({cls: el.getAttribute("class") || el.tagName, over: over});
    });
    doc.querySelectorAll(".apiprof-page h1, .apiprof-page p, .apiprof-summary").forEach(function (el) {
      var over = el.scrollWidth - el.clientWidth;  // text that does not wrap inside its box
      if (over > 1) spill.push({cls: el.tagName + " text", over: over});
    });
    var growth = doc.querySelector("svg.apiprof-chart-growth");
    var style = growth && win.getComputedStyle(growth);
    out.push({page: frame.dataset.page, width: frame.dataset.width,
              scroll: doc.documentElement.scrollWidth, viewport: win.innerWidth, spill: spill,
              growthFont: style ? style.fontFamily : "", growthPadding: style ? style.paddingLeft : "",
              scrollers: doc.querySelectorAll(".apiprof-scroll").length});
  });
  var pre = document.createElement("pre");
  pre.id = "apiprof-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script></body></html>"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_page_overflows_on_phones_or_desktops(any_site, tmp_path, scheme):
    frames = "\n".join(
        f'<iframe data-page="{page}" data-width="{name}" src="{page}" '
        f'style="width:{width}px;height:900px;border:0"></iframe>'
        for page in PAGES
        for name, width in WIDTHS.items()
    )
    probe_page = any_site / f"probe-layout-{scheme}.html"
    probe_page.write_text(LAYOUT_PROBE % {"frames": frames}, encoding="utf-8")
    flags = ("--force-dark-mode",) if scheme == "dark" else ()
    dom = chromium(
        "--allow-file-access-from-files",
        "--window-size=1400,1000",
        "--dump-dom",
        *flags,
        probe_page.as_uri(),
        profile=tmp_path / "profile",
    )
    start = dom.index('<pre id="apiprof-probe">') + len('<pre id="apiprof-probe">')
    found = json.loads(
        dom[start : dom.index("</pre>", start)].replace("&quot;", '"').replace("&amp;", "&")
    )
    assert len(found) == len(PAGES) * len(WIDTHS)
    for case in found:
        where = f"{case['page']} on a {case['width']}"
        assert case["viewport"] == WIDTHS[case["width"]], where
        assert case["scroll"] <= case["viewport"], f"{where}: page is {case['scroll']} px wide"
        assert not case["spill"], f"{where}: past the content column: {case['spill']}"
        if case["page"].startswith("apiprof/"):
            assert case["scrollers"] >= 1, where  # wide tables scroll in their own box
    [drilldown] = [c for c in found if c["page"] == PAGES[2] and c["width"] == "desktop"]
    # the growth chart is not styled like the growth badge (classes are scoped)
    assert "mono" not in drilldown["growthFont"].lower() and drilldown["growthPadding"] == "0px"


def test_css_classes_are_prefixed_scoped_and_name_one_kind_of_element(furo_site):
    from apiprof.sphinx_ext import STATIC

    css = (STATIC / "apiprof.css").read_text(encoding="utf-8")
    rules = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    for selectors in re.findall(r"([^{}]+)\{", rules):
        for selector in selectors.split(","):
            selector = selector.strip()
            assert re.match(r"\.apiprof-(summary|page)\b", selector), selector
            for name in re.findall(r"\.([\w-]+)", selector):
                assert name.startswith("apiprof-"), selector
    tags_by_class: dict[str, set[str]] = {}
    for page in ["index.html", "api.html", "apiprof/demo_mod.render.html", "apiprof/index.html"]:
        html = (furo_site / page).read_text(encoding="utf-8")
        for tag, classes in re.findall(r'<(\w+)[^>]*\sclass="([^"]*)"', html):
            for name in classes.split():
                if name.startswith("apiprof"):
                    assert name.startswith("apiprof-"), name
                    tags_by_class.setdefault(name, set()).add(tag)
    assert {n: t for n, t in tags_by_class.items() if len(t) > 1} == {}
