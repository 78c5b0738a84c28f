"""Scenarios: repeatable code that calls an entry point, and where it comes from.

``spec`` is a scenario as plain data (it crosses into workers) and how it runs; the sources are
scenario files (``files``, with ``locate`` for file:line errors), docstring examples
(``doctests``) and argument synthesis (``synth`` builds values, ``synthesized`` turns them into
scenarios); ``collect`` combines the sources and ``trial`` checks a candidate actually runs.
``scaffold`` writes the file a person fills in for what is left; ``packs/`` holds the scenario
files apiprof ships.
"""
