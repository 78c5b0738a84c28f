"""PDF output: every LaTeX engine Sphinx supports must typeset the cost summaries.

The text fallback says ``≈1.3 µs``; pdfLaTeX stops at ``≈`` unless it is declared, so the
extension ships ``apiprof.sty`` (declarations for pdfLaTeX only; XeLaTeX and LuaLaTeX read the
characters from their Unicode fonts), loads it in every LaTeX document and copies it next to
the ``.tex`` files for ``latexmk``/``make`` to find.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

PACKAGE = "apiprof"
STYLE_FILE = Path(__file__).with_name("latex") / f"{PACKAGE}.sty"


def copy_style(app: Sphinx, exception: BaseException | None) -> None:
    """``build-finished``: put ``apiprof.sty`` beside the LaTeX sources (when it differs)."""
    if exception is not None or app.builder.format != "latex":
        return
    target = Path(app.outdir, STYLE_FILE.name)
    data = STYLE_FILE.read_bytes()
    if not target.is_file() or target.read_bytes() != data:
        target.write_bytes(data)
