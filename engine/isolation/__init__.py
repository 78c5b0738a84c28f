"""Isolation: package code runs only in sandboxed worker processes.

``pool`` is the scanner's side (start, police, kill and replace workers), ``worker`` the only
apiprof code that runs inside the sandbox, ``protocol`` what crosses the pipe between them,
``sandbox`` the limits and guard a worker installs on itself.
"""
