"""Reader-facing words go through Sphinx's i18n (``sphinx.locale``) with apiprof's own message
catalog, so a project built with ``language = "de"`` shows German cost summaries and pages.

The catalog lives in ``locale/<language>/LC_MESSAGES/apiprof.po`` (compiled to ``.mo`` beside
it); ``locale/apiprof.pot`` is the template the translations start from.
"""

from __future__ import annotations

from functools import lru_cache
from gettext import NullTranslations
from pathlib import Path

from sphinx.locale import translators

from apiprof.svg import Words

CATALOG = "apiprof"
_KEY = ("general", CATALOG)  # how sphinx.locale files the catalog Sphinx.add_message_catalog loads
LOCALE_DIR = Path(__file__).with_name("locale")


def _(message: str) -> str:
    """The translation of ``message`` in the build's language (the message itself outside a
    build). A drill-down page asks for the same few dozen words hundreds of times, hence the
    cache (keyed by the translator, so each build's language is honoured)."""
    translator = translators.get(_KEY)  # get_translator, without a call per word
    return message if translator is None else _lookup(translator, message)


@lru_cache(maxsize=2048)
def _lookup(translator: NullTranslations, message: str) -> str:
    return translator.gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """Plural-aware translation (``get_translation`` has no plural form on every Sphinx)."""
    translator = translators.get(_KEY)  # is_translator_registered + get_translator, one lookup
    if translator is None:
        return singular if n == 1 else plural
    return translator.ngettext(singular, plural, n)


def graphic_words() -> Words:
    """The words the shared graphics (:mod:`apiprof.svg`) print, in the build's language."""
    return _graphic_words(translators.get(_KEY))


@lru_cache(maxsize=8)
def _graphic_words(_translator: NullTranslations | None) -> Words:
    """One :class:`Words` per translator (a build draws ~1000 graphics); "%(n)s calls" is
    worked out once per count (the tooltip of every bar and cell says one)."""
    return Words(
        no_samples=_("no samples"),
        below=_("below %(value)s"),
        log_scale=_("%(axis)s (log scale)"),
        calls=lru_cache(maxsize=4096)(
            lambda n: ngettext("%(n)s call", "%(n)s calls", n) % {"n": n}
        ),
    )
