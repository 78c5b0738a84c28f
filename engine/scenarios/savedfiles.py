"""Files the package's own classes save, for a reader of that format.

A reader such as ``catalog_file(path)`` rejects a made-up file ("invalid file, magic number is
incorrect"), and no top-level writer mirrors its name; but the package's classes save that very
format: ``Catalog.save_as_catalog_file(path)`` names it, ``CatalogFile.save(path)`` is the
class named like the reader. An instance of such a class is built (an empty catalog saves a
valid file), its saving method writes into the sandbox, and the bytes are the reader's input.
Everything runs inside the sandboxed worker, in the repair's time (:mod:`.repaired`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from apiprof.engine import timeouts
from apiprof.engine.scenarios import instances
from apiprof.engine.scenarios.building import BuildContext, CannotSynthesize
from apiprof.engine.scenarios.resources import inputs_directory, safe_name
from apiprof.engine.scenarios.signatures import package_classes, signature_of
from apiprof.engine.scenarios.trial import TRIAL_SECONDS, quiet_stdio

SAVING_VERBS = ("save", "write", "dump", "export")
"""How the names of methods that write an instance to a path begin."""
MAX_SAVERS = 4
"""Saving methods tried for one reader, best first."""


def saving_methods(reader: Callable[..., Any]) -> list[tuple[type, str]]:
    """``(class, method)`` pairs of the package whose method saves to a path what ``reader``
    reads: methods that name the reader (``save_as_catalog_file``) first, then the saving
    method of the class named like it (``CatalogFile.save``)."""
    word = (getattr(reader, "__name__", "") or "").lower().strip("_")
    if len(word) < 3:
        return []
    named: list[tuple[type, str]] = []
    own: list[tuple[type, str]] = []
    for cls in package_classes(getattr(reader, "__module__", "") or "").values():
        for name in dir(cls):
            lowered = name.lower()
            if name.startswith("_") or not lowered.startswith(SAVING_VERBS):
                continue
            if word in lowered:
                chosen = named
            elif cls.__name__.lower() == word and lowered in SAVING_VERBS:
                chosen = own
            else:
                continue
            if _takes_a_path(getattr(cls, name, None)):
                chosen.append((cls, name))
    return [*named, *own][:MAX_SAVERS]


def saved_content(reader: Callable[..., Any], context: BuildContext, name: str) -> bytes | None:
    """What the first of ``reader``'s saving methods that works writes, or None."""
    for cls, method in saving_methods(reader):
        try:
            with context.attempt():
                instance = instances.construct(cls, context)
        except CannotSynthesize:
            continue
        path = inputs_directory() / f"{safe_name(name)}-saved-{cls.__name__}.{method}"
        try:
            with timeouts.alarm(TRIAL_SECONDS), quiet_stdio():
                getattr(instance, method)(str(path))
            content = path.read_bytes()
        except (Exception, timeouts.CallTimeout):  # the saver refused it, or wrote nothing
            continue
        finally:
            path.unlink(missing_ok=True)
        if content:
            return content
    return None


def _takes_a_path(method: object) -> bool:
    """Whether ``method`` (unbound) takes a first argument after ``self``: the path."""
    if not callable(method):
        return False
    signature = signature_of(method)
    if signature is None:
        return False
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return (
        len(positional) >= 2
        and all(p.default is not p.empty for p in positional[2:])
        and not inspect.isclass(method)
    )
