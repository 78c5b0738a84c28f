import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

project = "apiprof fixture"
extensions = ["sphinx.ext.autodoc", "apiprof.sphinx_ext"]
apiprof_db = "apiprof.db"
apiprof_auto = True
html_theme = "alabaster"
