"""The batch engine: discover → plan → run → bucket → store.

Measurement core: ``histogram`` (additive log2 buckets), ``records`` (typed stage records),
``growth`` (cost-vs-size fits). The profiler and scan stages build on these.
"""
