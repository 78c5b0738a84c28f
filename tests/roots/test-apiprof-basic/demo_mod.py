"""A tiny module whose functions the fixture database pretends to have profiled."""


def parse(text):
    """Split text into words."""
    return text.split()


def render(items, width=70):
    """Join items into lines no wider than ``width``."""
    return " ".join(items)[:width]


def unprofiled(callback):
    """Call ``callback`` (apiprof cannot make one up, so this is never profiled)."""
    return callback()


class Widget:
    """Something drawn on screen."""

    def __init__(self, size=1):
        self.size = size

    def draw(self):
        """Draw the widget."""
        return "#" * self.size
