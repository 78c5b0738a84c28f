"""A scenario as plain data, and how it runs: ``ScenarioSpec`` and ``compile_scenario``.

A scenario is plain data so it can cross into a sandboxed worker; there ``compile_scenario``
turns it into a zero-argument callable whose one execution is what gets measured.
"""

from __future__ import annotations

import ast
import builtins
import symtable
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from apiprof.model.records import Scenario, ScenarioSource

FORMAT_VERSION = 1
"""The scenario-file ``format`` this module reads."""

DEFAULT_SIZES = (10, 30, 100, 300, 1000)


@dataclass(frozen=True)
class ScenarioSpec:
    """Everything needed to run one scenario, as plain data."""

    id: str  # stable: "file:<file name>#<name>", "doc:<qualname>#<k>", "synth:<qualname>"
    qualname: str  # the entry point it is for
    source: ScenarioSource
    description: str
    setup: str  # run once per size before measuring; may use the size variable
    call: str  # statements; one execution is what gets measured; may use the size variable
    size_axis: str = ""  # variable name, e.g. "n"; "" = no size axis
    sizes: tuple[int, ...] = ()
    targets: tuple[str, ...] = ()  # qualnames measured inside `call`; empty means (qualname,)
    repeat: int | None = None
    inputs: str = ""  # the arguments as a person reads them (synthesised, captured)

    @property
    def measured(self) -> tuple[str, ...]:
        """The qualnames to measure: ``targets`` or, by default, the entry point itself."""
        return self.targets or (self.qualname,)

    def to_scenario(self) -> Scenario:
        return Scenario(
            self.id,
            self.qualname,
            self.source,
            self.description,
            self.size_axis,
            self.setup,
            self.call,
            self.inputs,
        )


# -- running ---------------------------------------------------------------------------------


def compile_scenario(
    spec: ScenarioSpec, size: int | None, *, stand_ins: Mapping[int, object] | None = None
) -> Callable[[], object]:
    """Run ``spec.setup`` in a fresh namespace and return a callable doing one ``spec.call``.

    The call statements become the body of a function whose every bound name is declared
    ``global``: the same meaning as executing them at module level in the setup namespace, at
    the cost of one Python call per run. The callable returns the value of the last statement
    when that is an expression. ``stand_ins`` maps ``id(obj)`` to what the call should reach
    in place of ``obj``: after setup, every name bound to ``obj`` is rebound to it.
    """
    namespace: dict[str, Any] = {"__name__": "__apiprof_scenario__", "__builtins__": builtins}
    if spec.size_axis:
        if size is None:
            raise ValueError(
                f"scenario {spec.id} has size axis {spec.size_axis!r}: pass one of {spec.sizes}"
            )
        namespace[spec.size_axis] = size
    if spec.setup.strip():
        exec(compile(spec.setup, f"<setup of {spec.id}>", "exec"), namespace)
    for name, value in list(namespace.items()):
        if stand_ins and id(value) in stand_ins:
            namespace[name] = stand_ins[id(value)]
    return _compile_call(spec.call, f"<call of {spec.id}>", namespace)


def text_producer(
    ref: str,
    qualname: str,
    source: ScenarioSource,
    rebuild: Callable[[str, int], object],
    index: int,
    *,
    description: str,
    inputs: str,
) -> ScenarioSpec:
    """The scenario a driver's name ``ref`` stands for that returns a text the package shows or
    implies (a docstring's literal block, a grammar's sentence): ``rebuild(qualname, index)``
    makes it again in whichever worker runs it."""
    return ScenarioSpec(
        id=ref,
        qualname=qualname,
        source=source,
        description=description,
        setup=f"from {rebuild.__module__} import {rebuild.__name__}\n",
        call=f"{rebuild.__name__}({qualname!r}, {index})",
        inputs=inputs,
    )


_CALL_NAME = "__apiprof_call__"
_NO_TYPE_PARAMS: dict[str, Any] = {"type_params": []} if sys.version_info >= (3, 12) else {}


def _compile_call(call: str, filename: str, namespace: dict[str, Any]) -> Callable[[], object]:
    module = ast.parse(call, filename, "exec")
    code = compile(module, filename, "exec")  # module-level rules: rejects return/yield
    if not module.body:
        return lambda: None
    try:
        bound = _names_bound_by(call)
    except SyntaxError:  # e.g. a star import, legal only at module level
        return lambda: exec(code, namespace)
    body: list[ast.stmt] = [ast.Global(names=sorted(bound))] if bound else []
    body.extend(module.body)
    if isinstance(body[-1], ast.Expr):  # hand back the last expression's value, as a REPL shows it
        body[-1] = ast.copy_location(ast.Return(value=body[-1].value), body[-1])
    function = ast.FunctionDef(
        name=_CALL_NAME,
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body,
        decorator_list=[],
        **_NO_TYPE_PARAMS,
    )
    wrapper = ast.Module(body=[function], type_ignores=[])
    ast.fix_missing_locations(wrapper)
    scope: dict[str, Any] = {}
    exec(compile(wrapper, filename, "exec"), namespace, scope)
    return scope[_CALL_NAME]


def _names_bound_by(call: str) -> set[str]:
    """Names the call statements bind at their top level (what exec would store globally)."""
    source = f"def {_CALL_NAME}():\n" + "".join(f"    {line}\n" for line in call.splitlines())
    table = symtable.symtable(source, "<call>", "exec")
    function = next(child for child in table.get_children() if child.get_name() == _CALL_NAME)
    return {symbol.get_name() for symbol in function.get_symbols() if symbol.is_local()}
