"""The child side of ``apiprof trace``: run a script, module or ``-c`` code while recording.

``python -m apiprof.tracing.launch --output TRACE [options] -- script.py args`` behaves like
``python script.py args`` (same ``sys.argv``, ``sys.path[0]``, ``__main__``, exit code) with a
:class:`~apiprof.tracing.record.Recorder` running around it. The trace is finished however the
program ends: normally, by ``sys.exit``, an exception or Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import threading
import traceback
from types import CodeType, FrameType

from apiprof.tracing.record import Recorder
from apiprof.tracing.sampler import Sampler
from apiprof.tracing.stacks import StackTable
from apiprof.tracing.timetree import TreeShape


def run_target(target: list[str]) -> int:
    """Run ``script.py args``, ``-m module args`` or ``-c code args`` as ``__main__``."""
    try:
        if target[0] == "-m":
            sys.argv = [target[1], *target[2:]]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target[1], run_name="__main__", alter_sys=True)
        elif target[0] == "-c":
            sys.argv = ["-c", *target[2:]]
            sys.path.insert(0, "")
            code = compile(target[1], "<string>", "exec")
            exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
        else:
            sys.argv = list(target)
            sys.path.insert(0, os.path.dirname(os.path.abspath(target[0])))
            runpy.run_path(target[0], run_name="__main__")
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    except BaseException as error:
        return report_program_error(error)
    _join_program_threads()
    return 0


def report_program_error(error: BaseException) -> int:
    """Print what ``python`` would print for an error that ended the program; its exit code.

    The traceback starts at the program's first frame, not ours; a script or module that could
    not be found gets python's one line (``python: No module named x``), not runpy's frames.
    """
    ours = _runner_codes()
    frames = error.__traceback__
    while frames is not None and frames.tb_frame.f_code in ours:
        frames = frames.tb_next
    runpy_file = runpy.run_path.__code__.co_filename
    rest = frames
    while rest is not None and rest.tb_frame.f_code.co_filename == runpy_file:
        rest = rest.tb_next
    if rest is None and isinstance(error, ImportError | OSError):
        print(f"{sys.executable}: {error}", file=sys.stderr)
        return 2 if isinstance(error, OSError) else 1
    traceback.print_exception(type(error), error, frames)
    return 130 if isinstance(error, KeyboardInterrupt) else 1


def _runner_codes() -> set[CodeType]:
    """The code of :func:`run_target` and of the ``runpy`` functions it runs the program with."""
    codes = {run_target.__code__}
    for name in ("_run_module_as_main", "_run_code", "_run_module_code", "run_path", "run_module"):
        function = getattr(runpy, name, None)
        if function is not None:
            codes.add(function.__code__)
    return codes


def _join_program_threads() -> None:
    """Wait for the program's non-daemon threads, as the interpreter would, while recording."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()


def _launcher_codes() -> set[CodeType]:
    """The frames between the interpreter and the program's ``<module>``: ours, not its."""
    codes = _runner_codes()
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:  # main() and the launcher module that called it
        codes.add(frame.f_code)
        frame = frame.f_back
    return codes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m apiprof.tracing.launch")
    parser.add_argument("--output", required=True)
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--leaf-size", type=int, required=True)
    parser.add_argument("--fanout", type=int, required=True)
    parser.add_argument("--keep-percent", type=float, required=True)
    parser.add_argument("target", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    target = args.target[1:] if args.target[:1] == ["--"] else args.target
    shape = TreeShape(args.leaf_size, args.fanout, args.keep_percent)
    stacks = StackTable()
    stacks.hidden.update(_launcher_codes())
    stacks.excluded.update(
        f.__code__
        for f in (Recorder.start, Recorder.stop, Sampler.start, Sampler.stop, _join_program_threads)
    )
    recorder = Recorder(
        args.output, interval=args.interval, tree=shape, meta={"command": target}, stacks=stacks
    )
    recorder.start()
    try:
        code = run_target(target)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not lose the trace
        recorder.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
