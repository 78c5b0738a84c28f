"""The apiprof language server: typical costs in completions, hovers and after calls.

Run it as ``apiprof-lsp`` (stdio) or ``apiprof-lsp --tcp 127.0.0.1:2087``, beside the Python
language server you use. The pipeline per request: frames (:mod:`.framing`, :mod:`.rpc`) →
documents (:mod:`.text`) → jedi names and call sites (:mod:`.resolve`, :mod:`.calls`) → merged
profiles (:mod:`.costs`, :mod:`.profiles`) → text (:mod:`.render`); :mod:`.session` answers
requests and :mod:`.server` only registers features.
"""

from apiprof.lsp_server.config import ServerConfig, read_config
from apiprof.lsp_server.costs import CostIndex
from apiprof.lsp_server.server import create_server

__all__ = ["CostIndex", "ServerConfig", "create_server", "read_config"]
