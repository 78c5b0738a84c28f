"""``python -m apiprof.cli COMMAND``: the same as ``apiprof COMMAND``."""

import sys

from apiprof.cli import main

sys.exit(main())
