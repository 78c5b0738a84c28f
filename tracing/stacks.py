"""Interned call stacks: every stack is its prefix's id plus one frame.

A sampler sees the same few hundred stacks again and again, and stacks share their roots (every
stack of the main thread starts in ``<module>``). Storing a stack as ``(prefix id, frame id)``
stores each shared root once, makes a sample one small integer, and lets readers rebuild any
stack by walking prefixes back to the empty stack (id 0).

A sampled stack starts with a *thread frame* naming its thread (file ``<thread>``), so the same
code on two threads makes two stacks: a window report can then keep one thread's samples (the
thread of a slow request) without re-reading samples, and reports show where each thread was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import CodeType, FrameType

EMPTY_STACK = 0
"""The id of the empty stack: the prefix of every one-frame stack."""

THREAD_FILE = "<thread>"
"""The file of the pseudo-frame at the root of a sampled stack; its function is the thread's name
and its line the thread's number in the recording."""


@dataclass(frozen=True)
class Frame:
    """One function on a call stack: its qualified name, file and first line."""

    function: str
    file: str
    line: int

    @property
    def is_thread(self) -> bool:
        return self.file == THREAD_FILE


class StackTable:
    """Dense integer ids for frames and stacks, shared by a recording's samples.

    Not thread-safe by design: one sampler thread owns a table and is its only writer.
    """

    def __init__(
        self, frames: Sequence[Frame] = (), stacks: Sequence[tuple[int, int]] = ()
    ) -> None:
        self.frames: list[Frame] = []
        self._frame_ids: dict[Frame, int] = {}
        # index = stack id; entry 0 is the empty stack, whose prefix and frame mean nothing
        self.stacks: list[tuple[int, int]] = [(EMPTY_STACK, -1)]
        self._stack_ids: dict[tuple[int, int], int] = {}
        self._code_frames: dict[CodeType, int] = {}
        # Our own machinery (set both before sampling starts: results are cached per stack):
        # `hidden` frames are left out of stacks (the launcher between the interpreter and the
        # program); a stack through an `excluded` frame is no sample at all (the main thread
        # starting or stopping the recorder).
        self.hidden: set[CodeType] = set()
        self.excluded: set[CodeType] = set()
        self._by_codes: dict[tuple[int, tuple[CodeType, ...]], int] = {}
        self._paths: dict[int, tuple[int, ...]] = {}
        self._resolved: dict[int, tuple[Frame, ...]] = {}
        self._roots: list[int] = []
        self._thread_frames: list[int] = []
        self._thread_frames_seen = 0
        for frame in frames:
            self.frame_id(frame)
        for prefix, frame_id in stacks:
            self.stack_id(prefix, frame_id)

    def frame_id(self, frame: Frame) -> int:
        found = self._frame_ids.get(frame)
        if found is None:
            found = self._frame_ids[frame] = len(self.frames)
            self.frames.append(frame)
        return found

    def stack_id(self, prefix: int, frame_id: int) -> int:
        key = (prefix, frame_id)
        found = self._stack_ids.get(key)
        if found is None:
            found = self._stack_ids[key] = len(self.stacks)
            self.stacks.append(key)
        return found

    def intern(self, frames: Iterable[Frame], root: int = EMPTY_STACK) -> int:
        """The id of the stack ``frames`` (outermost call first) below ``root``."""
        stack = root
        for frame in frames:
            stack = self.stack_id(stack, self.frame_id(frame))
        return stack

    def thread_root(self, number: int, name: str) -> int:
        """The one-frame stack every sampled stack of thread ``number`` starts with."""
        return self.stack_id(EMPTY_STACK, self.frame_id(Frame(name, THREAD_FILE, number)))

    def intern_python(self, frame: FrameType | None, root: int = EMPTY_STACK) -> int:
        """The id of the stack that ends in a live Python frame (the sampler's hot path).

        Returns :data:`EMPTY_STACK` for a stack through an excluded frame, or one with no
        frame of the program's own.
        """
        codes = []
        while frame is not None:
            codes.append(frame.f_code)
            frame = frame.f_back
        # Seen before (nearly always): one hash of the code tuple instead of a lookup per frame.
        key = (root, tuple(codes))
        known = self._by_codes.get(key)
        if known is None:
            known = self._by_codes[key] = self._intern_codes(codes, root)
        return known

    def _intern_codes(self, codes: list[CodeType], root: int) -> int:
        """``intern_python`` the slow way: innermost code first in ``codes``."""
        code_frames, stack_ids, hidden = self._code_frames, self._stack_ids, self.hidden
        if self.excluded and not self.excluded.isdisjoint(codes):
            return EMPTY_STACK
        stack = root
        for code in reversed(codes):
            if code in hidden:
                continue
            frame_id = code_frames.get(code)
            if frame_id is None:
                frame_id = code_frames[code] = self.frame_id(
                    Frame(code.co_qualname, code.co_filename, code.co_firstlineno)
                )
            found = stack_ids.get((stack, frame_id))
            stack = self.stack_id(stack, frame_id) if found is None else found
        return EMPTY_STACK if stack == root else stack

    def frame_at(self, file: str, function: str, line: int) -> int:
        """The frame of the code running ``function`` at ``file:line`` (a frame from a text
        traceback), matched to a function sampled before when there is one."""
        best: tuple[int, int] | None = None
        for code, frame_id in self._code_frames.items():
            if code.co_filename == file and code.co_name == function:
                first = code.co_firstlineno
                if first <= line and (best is None or first > best[0]):
                    best = (first, frame_id)
        if best is not None:
            return best[1]
        return self.frame_id(Frame(function, file, line))

    def function_path(self, stack: int) -> tuple[int, ...]:
        """The distinct frame ids of a stack, outermost first (a recursive function once).

        A function's inclusive count takes each sample once. Cached per stack, and built on the
        prefix's path, so reports pay for each stack once.
        """
        path = self._paths.get(stack)
        if path is None:
            if stack == EMPTY_STACK:
                return ()
            prefix, frame_id = self.stacks[stack]
            outer = self.function_path(prefix)
            path = self._paths[stack] = outer if frame_id in outer else (*outer, frame_id)
        return path

    def function_totals(self, counts: Mapping[int, int]) -> tuple[dict[int, int], dict[int, int]]:
        """Samples per frame id of stack counts: inclusive (the function anywhere on the stack,
        once per sample) and exclusive (the innermost frame). Costs the number of distinct
        stacks times their depth, whatever the number of samples."""
        inclusive: dict[int, int] = {}
        exclusive: dict[int, int] = {}
        get_inclusive, get_exclusive, stacks = inclusive.get, exclusive.get, self.stacks
        for stack, count in counts.items():
            if stack == EMPTY_STACK:
                continue
            for frame_id in self.function_path(stack):
                inclusive[frame_id] = get_inclusive(frame_id, 0) + count
            frame_id = stacks[stack][1]
            exclusive[frame_id] = get_exclusive(frame_id, 0) + count
        return inclusive, exclusive

    def thread_frames(self) -> list[int]:
        """The ids of the thread frames (cached: frames are only ever appended)."""
        frames, found = self.frames, self._thread_frames
        for frame_id in range(self._thread_frames_seen, len(frames)):
            if frames[frame_id].is_thread:
                found.append(frame_id)
        self._thread_frames_seen = len(frames)
        return found

    def roots(self) -> list[int]:
        """Per stack id: its one-frame root stack (a thread frame for sampled stacks)."""
        roots, stacks = self._roots, self.stacks
        for stack in range(len(roots), len(stacks)):
            prefix = stacks[stack][0]
            roots.append(stack if prefix == EMPTY_STACK else roots[prefix])
        return roots

    def frame_ids(self, stack: int) -> list[int]:
        """Frame ids of a stack, outermost call first."""
        path = []
        stacks = self.stacks
        while stack != EMPTY_STACK:
            stack, frame_id = stacks[stack]
            path.append(frame_id)
        path.reverse()
        return path

    def code_path(self, stack: int) -> list[int]:
        """Frame ids of a stack's code, outermost first: without its thread frame."""
        path = self.frame_ids(stack)
        return path[1:] if path and self.frames[path[0]].is_thread else path

    def resolve(self, stack: int) -> tuple[Frame, ...]:
        """The frames of a stack, outermost call first (cached: a stack never changes, and
        reports on one recording name the same top stacks again and again)."""
        found = self._resolved.get(stack)
        if found is None:
            frames = self.frames
            found = self._resolved[stack] = tuple([frames[i] for i in self.frame_ids(stack)])
        return found
