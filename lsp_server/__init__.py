"""The apiprof language server: typical costs beside completion items and in hover text.

Run it as ``apiprof-lsp`` (stdio) or ``apiprof-lsp --tcp 127.0.0.1:2087``. The pipeline per
request: jedi names → canonical qualified names (:mod:`.resolve`) → merged profile summaries
(:mod:`.costs`) → markdown and hints (:mod:`.render`); :mod:`.server` only registers features.
"""

from apiprof.lsp_server.config import ServerConfig, read_config
from apiprof.lsp_server.costs import CostIndex
from apiprof.lsp_server.server import create_server

__all__ = ["CostIndex", "ServerConfig", "create_server", "read_config"]
