"""Sampled traces with fast time-window reports, and the immediate delay tracker.

The pipeline, one module per stage: :mod:`.sampler` samples all threads' stacks (interned by
:mod:`.stacks`), :mod:`.record` drives it into a :mod:`.recording` file, :mod:`.timetree`
indexes the samples by time, :mod:`.window` reports on any window and :mod:`.export` writes
speedscope and Chrome trace-event files. :mod:`.delays` watches marked events and records a
trace when one is slow; :mod:`.upload` sends the files to a collection service.
"""
