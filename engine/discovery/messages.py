"""What an exception says, read safely: a package's own exception may fail to format itself.

PyYAML's ``MarkedYAMLError.__str__`` indexes its buffer and raises ``IndexError`` when the mark
came from synthesised state; reading the message must not turn a rejected argument into a
crash of the whole entry point.
"""

from __future__ import annotations


def exception_message(error: BaseException) -> str:
    """``str(error)``, or a note saying why there is none when formatting it raises."""
    try:
        return str(error)
    except Exception as failure:  # the package's __str__ is package code like any other
        return f"<its message could not be formed: {type(failure).__name__}>"
