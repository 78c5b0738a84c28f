"""Reader-facing words go through Sphinx's i18n (``sphinx.locale``) with apiprof's own message
catalog, so a project built with ``language = "de"`` shows German cost summaries and pages.

The catalog lives in ``locale/<language>/LC_MESSAGES/apiprof.po`` (compiled to ``.mo`` beside
it); ``locale/apiprof.pot`` is the template the translations start from.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.locale import get_translation, get_translator, is_translator_registered

CATALOG = "apiprof"
LOCALE_DIR = Path(__file__).with_name("locale")

_ = get_translation(CATALOG)


def ngettext(singular: str, plural: str, n: int) -> str:
    """Plural-aware translation (``get_translation`` has no plural form on every Sphinx)."""
    if not is_translator_registered(CATALOG):
        return singular if n == 1 else plural
    return get_translator(CATALOG).ngettext(singular, plural, n)
