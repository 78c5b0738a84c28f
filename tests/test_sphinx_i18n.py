"""The extension speaks the build's language: a complete, compiled message catalog, a German build,
and messages extraction can find on every Python version."""

from __future__ import annotations

import ast
import gettext
from pathlib import Path

from babel.messages.extract import extract_from_dir
from babel.messages.mofile import read_mo
from babel.messages.pofile import read_po
from sphinxhelp import build, make_project, rebuild

from apiprof.sphinx_ext import i18n

# -- translations ----------------------------------------------------------------------------------


def key(message_id: str | tuple[str, ...]) -> str:
    return message_id if isinstance(message_id, str) else message_id[0]


def strings(message: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return (message,) if isinstance(message, str) else tuple(message)


def test_message_catalog_is_complete_and_compiled():
    locale = i18n.LOCALE_DIR
    method_map = [("**.py", "python"), ("templates/**.html", "jinja2")]
    options = {"templates/**.html": {"extensions": "jinja2.ext.i18n"}}
    used = {
        message if isinstance(message, str) else message[0]
        for _file, _line, message, _comments, _context in extract_from_dir(
            locale.parent,
            method_map,
            options,
            keywords={"_": None, "ngettext": (1, 2)},
        )
    }
    template = {
        m.id if isinstance(m.id, str) else m.id[0]
        for m in read_po((locale / "apiprof.pot").open("rb"))
        if m.id
    }
    assert used == template, "re-extract apiprof.pot (docs/sphinx.rst, Translations)"
    with (locale / "de" / "LC_MESSAGES" / "apiprof.po").open("rb") as po:
        german = read_po(po)
    translated = {key(m.id): strings(m.string) for m in german if m.id}
    assert set(translated) == template and all(translated.values())
    with (locale / "de" / "LC_MESSAGES" / "apiprof.mo").open("rb") as mo:
        compiled = read_mo(mo)
    assert {key(m.id): strings(m.string) for m in compiled if m.id} == translated
    german_gettext = gettext.translation("apiprof", str(locale), languages=["de"])
    assert german_gettext.gettext("Cost") == "Kosten"


def test_no_message_is_translated_inside_an_f_string():
    """Babel reads into f-strings only on Python 3.12+, so a ``_()`` inside one would make
    the extracted catalog depend on the interpreter that extracted it."""
    hidden = []
    for path in sorted(i18n.LOCALE_DIR.parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                hidden += [
                    f"{path.name}:{call.lineno}"
                    for call in ast.walk(node)
                    if isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and call.func.id in {"_", "ngettext"}
                ]
    assert not hidden, f"translate outside the f-string: {hidden}"


def test_german_build_shows_german_words(tmp_path):
    srcdir = make_project(tmp_path)
    app, warnings = build(srcdir, language="de")
    out = Path(app.outdir)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert ">Kosten<" in index and ">Details<" in index and "300 gemessene Aufrufe" in index
    assert ">Cost<" not in index and ">details<" not in index
    page = (out / "apiprof" / "demo_mod.render.html").read_text(encoding="utf-8")
    assert (
        "Verteilungen" in page
        and "Kostenbereich" in page
        and "Wachstum mit der Eingabegröße" in page
    )
    assert "API-Kosten" in (out / "apiprof" / "index.html").read_text(encoding="utf-8")
    assert "Traceback" not in warnings
    rebuild(srcdir)  # English again: another language, another catalog, in the same process
    assert ">Cost<" in (out / "index.html").read_text(encoding="utf-8")
