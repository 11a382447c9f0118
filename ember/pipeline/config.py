"""``PipelineConfig``: TVM's pipeline builder vocabulary, producing pipeline IR.

The Python side of ``ember.dialects.pipeline``, with the words of TVM's
``tvm.contrib.pipeline_executor_build.PipelineConfig`` (seed 000)::

    cfg = PipelineConfig([mod0, mod1])
    cfg[mod1].target = "cuda"
    cfg[mod1].dev = ember.runtime.cuda(0)
    cfg["input"]["data"].connect(cfg[mod0]["input"]["data"])
    cfg[mod0]["output"][0].connect(cfg[mod1]["input"]["data_n_0"])
    cfg[mod1]["output"][0].connect(cfg["output"][0])
    print(cfg)
    module = cfg.to_module()      # the stage functions + pipeline.graph @main

What differs from TVM, and why:

* A stage ("mod") is a ``func.func`` — e.g. one returned by
  :func:`ember.passes.split_graph.stage_functions` — or a module holding one
  (its ``@main``, or its only function).  A function keeps its name; the
  function of a module stage is renamed ``mod<i>``.  Stages run in the
  order given: that order is what "earlier" and "later" mean below.
* Every connection rule is checked when ``connect`` is called, and the error
  names both ends and the rule: a global input feeds stage inputs; a stage
  output feeds later stages' inputs or global outputs; nothing feeds itself,
  an earlier stage, an output or a global input; the types at both ends
  match; an input (of a stage, or global output) is connected once.  TVM
  asserts some of these and finds the rest when building.
* Whatever needs the whole picture — an unconnected stage input, a missing
  global output, a target on the wrong kind of device — is reported by
  :meth:`PipelineConfig.to_module`, which returns IR that has passed the
  pipeline dialect's verifier.
* Names of stage inputs are those printed in the IR (see
  :func:`ember.dialects.pipeline.argument_names`); an input can also be
  named by its position.

``build_func`` is kept for the pipeline build: it is called as
``build_func(stage_module, target, dev)`` in place of ``ember.build`` (TVM:
``build_func(mod, target, params=…)``), for instance to run
``partition-extern`` on that stage first.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

from ember.dialects.graph import type_str
from ember.dialects.pipeline import (
    GraphOp,
    StageOp,
    YieldOp,
    check_placement,
    function_input_names,
)
from ember.errors import EmberError, RuntimeFailure
from ember.ir import used_symbols, verify_module
from ember.runtime.device import Device, cpu, device

__all__ = ["Interface", "PipelineConfig", "PipelineConfigError", "StageConfig"]

Kind = Literal["input", "output"]

# A name xDSL keeps as written: a value name without a trailing _<digits>.
_VALUE_NAME = re.compile(r"[A-Za-z$.-][\w$.-]*")
_PRINTER_SUFFIX = re.compile(r"_\d+$")


class PipelineConfigError(EmberError, ValueError):
    """A pipeline configuration mistake: a bad connection, name or setting."""


class _NoNewAttributes:
    """Assignment only to attributes the class declares (its ``__slots__`` and
    properties), so a typo such as ``cfg[mod].targt = "llvm"`` raises an
    ``AttributeError`` naming what can be set, instead of silently creating
    an attribute that nothing reads."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if not hasattr(type(self), name):
            raise AttributeError(self._no_attribute(name), name=name, obj=self)
        object.__setattr__(self, name, value)

    def _no_attribute(self, name: str) -> str:
        return f"{type(self).__name__} has no attribute {name!r} to set"


# --------------------------------------------------------------------------
# Interfaces: the ends of connections
# --------------------------------------------------------------------------


@dataclass(eq=False)
class Interface:
    """One end of a connection: a global or stage input, or an output.

    ``owner`` is the stage, or ``None`` for the pipeline's own (global)
    inputs and outputs; ``key`` is an input's name or an output's index.
    """

    config: PipelineConfig
    owner: StageConfig | None
    kind: Kind
    key: str | int
    type: Attribute | None = None
    source: Interface | None = None
    """What feeds this interface (stage inputs and global outputs)."""
    targets: list[Interface] = field(default_factory=list)
    """What this interface feeds (global inputs and stage outputs)."""

    def __str__(self) -> str:
        if self.owner is None:
            return (
                f'global input "{self.key}"'
                if self.kind == "input"
                else f"global output {self.key}"
            )
        if self.kind == "input":
            return f'{self.owner.name} input "{self.key}"'
        return f"{self.owner.name} output {self.key}"

    @property
    def is_global(self) -> bool:
        return self.owner is None

    @property
    def feeds(self) -> bool:
        """Whether this end can be the source of a connection."""
        return (self.owner is None) == (self.kind == "input")

    def connect(self, other: Interface) -> None:
        """Connect this interface's data to ``other`` (TVM's ``connect``)."""
        if not isinstance(other, Interface):
            raise PipelineConfigError(
                f"cannot connect {self} to {other!r}: expected an interface such as "
                f'cfg[mod]["input"]["data"] or cfg["output"][0]'
            )
        if other.config is not self.config:
            raise PipelineConfigError(
                f"cannot connect {self} to {other}: they belong to different PipelineConfigs"
            )
        reason = _connection_rule_broken(self, other)
        if reason is not None:
            raise PipelineConfigError(f"cannot connect {self} to {other}: {reason}")
        if other.source is not None:
            raise PipelineConfigError(
                f"cannot connect {self} to {other}: {other} is already connected to "
                f"{other.source}; an input is connected exactly once"
            )
        _check_types(self, other)
        if self.type is None:  # a global input takes the type of what it feeds
            self.type = other.type
        if other.type is None:  # a global output takes the type of what feeds it
            other.type = self.type
        other.source = self
        self.targets.append(other)


def _connection_rule_broken(source: Interface, dest: Interface) -> str | None:
    """Which of seed 004's connection rules ``source -> dest`` breaks, if any."""
    if not source.feeds:
        if source.is_global:
            return "a global output is the pipeline's result and feeds nothing"
        if dest.kind == "input" and not dest.is_global:
            return "input to input: a stage input receives data and feeds nothing"
        return "a stage input receives data and feeds nothing"
    if dest.feeds:
        if dest.kind == "output" and source.kind == "output":
            return "output to output: a stage output is produced by its stage and cannot be fed"
        if dest.is_global and source.kind == "input":
            return "input to input: a global input is fed from outside the pipeline"
        if dest.is_global:
            return "a global input is fed from outside the pipeline, not by a stage"
        return "a stage output is produced by its stage and cannot be fed"
    if source.is_global and dest.is_global:
        return "a global input may feed only stage inputs"
    if source.owner is not None and dest.owner is not None:
        if dest.owner is source.owner:
            return f"{source.owner.name} would feed itself"
        if dest.owner.index < source.owner.index:
            return (
                f"{dest.owner.name} runs before {source.owner.name} (stages run in the "
                f"order given to PipelineConfig), so this would make a cycle"
            )
    return None


def _check_types(source: Interface, dest: Interface) -> None:
    if source.type is None or dest.type is None or source.type == dest.type:
        return
    if source.is_global and source.targets:
        fed = ", ".join(str(t) for t in source.targets)
        raise PipelineConfigError(
            f"cannot connect {source} to {dest}: {dest} has type {type_str(dest.type)} "
            f"but {source} is {type_str(source.type)} (it feeds {fed})"
        )
    raise PipelineConfigError(
        f"cannot connect {source} to {dest}: {dest} has type {type_str(dest.type)} "
        f"but {source} gives {type_str(source.type)}"
    )


class _Interfaces:
    """``cfg[...]["input"]`` or ``["output"]``: interfaces by name or index."""

    def __init__(
        self, config: PipelineConfig, owner: StageConfig | None, kind: Kind
    ) -> None:
        self._config, self._owner, self._kind = config, owner, kind
        self._items: dict[str | int, Interface] = {}

    def __getitem__(self, key: str | int) -> Interface:
        key = self._canonical(key)
        if key not in self._items:
            self._items[key] = Interface(self._config, self._owner, self._kind, key)
        return self._items[key]

    def items(self) -> list[Interface]:
        return list(self._items.values())

    def _canonical(self, key: Any) -> str | int:
        """Check ``key``; a global interface is created on first use."""
        owner = self._owner.name if self._owner else "the pipeline"
        if self._owner is not None:
            return self._owner.check_key(self._kind, key)
        if self._kind == "input":
            if (
                not isinstance(key, str)
                or not _VALUE_NAME.fullmatch(key)
                or _PRINTER_SUFFIX.search(key)
            ):
                raise PipelineConfigError(
                    f'global input names are value names such as "data" (letters, '
                    f"digits, _ $ . -, not ending in _<digits>), got {key!r} for {owner}"
                )
            return key
        if isinstance(key, bool) or not isinstance(key, int) or key < 0:
            raise PipelineConfigError(
                f"global outputs are numbered 0, 1, …; got {key!r}"
            )
        return key


# --------------------------------------------------------------------------
# Stages
# --------------------------------------------------------------------------


def _stage_function(mod: Any, index: int) -> tuple[FuncOp, str]:
    """The function a stage runs and the stage's name."""
    if isinstance(mod, FuncOp):
        if mod.is_declaration:
            raise PipelineConfigError(
                f"stage {index} (@{mod.sym_name.data}) is a declaration without a body"
            )
        return mod, mod.sym_name.data
    if isinstance(mod, ModuleOp):
        functions = [
            op for op in mod.ops if isinstance(op, FuncOp) and not op.is_declaration
        ]
        mains = [f for f in functions if f.sym_name.data == "main"]
        if mains or len(functions) == 1:
            return (mains or functions)[0], f"mod{index}"
        names = ", ".join(f"@{f.sym_name.data}" for f in functions) or "none"
        raise PipelineConfigError(
            f"stage {index} is a module without @main or a single function (functions: {names})"
        )
    raise PipelineConfigError(
        f"stage {index}: expected a func.func or a module, got {type(mod).__name__}"
    )


class StageConfig(_NoNewAttributes):
    """One stage (TVM's ``ModuleWrapper``): its function, placement and interfaces."""

    __slots__ = (
        "_build_func",
        "_dev",
        "_inputs",
        "_outputs",
        "_target",
        "function",
        "index",
        "input_names",
        "mod",
        "name",
    )
    SETTINGS: ClassVar[tuple[str, ...]] = ("target", "dev", "build_func")
    """What a user sets on a stage."""

    def __init__(
        self, config: PipelineConfig, mod: FuncOp | ModuleOp, index: int
    ) -> None:
        self.mod = mod
        self.index = index
        self.function, self.name = _stage_function(mod, index)
        self.input_names: list[str] = function_input_names(self.function)
        self._target = "llvm"
        self._dev: Device = cpu(0)
        self._build_func: Callable[..., Any] | None = None
        self._inputs = _Interfaces(config, self, "input")
        self._outputs = _Interfaces(config, self, "output")
        # Every input and output exists from the start, with its type.
        for name, t in zip(self.input_names, self.function.function_type.inputs.data):
            self._inputs[name].type = t
        for i, t in enumerate(self.function.function_type.outputs.data):
            self._outputs[i].type = t

    def __getitem__(self, kind: str) -> _Interfaces:
        if kind == "input":
            return self._inputs
        if kind == "output":
            return self._outputs
        raise PipelineConfigError(
            f'{self.name}: expected "input" or "output", got {kind!r}'
        )

    def check_key(self, kind: Kind, key: Any) -> str | int:
        """An input name (or position) or an output index of this stage."""
        n_outputs = len(self.function.function_type.outputs.data)
        if kind == "output":
            if (
                isinstance(key, bool)
                or not isinstance(key, int)
                or not 0 <= key < n_outputs
            ):
                raise PipelineConfigError(
                    f"{self.name} has no output {key!r}: its outputs are numbered "
                    f"0..{n_outputs - 1}"
                    if n_outputs
                    else f"{self.name} has no outputs"
                )
            return key
        if (
            isinstance(key, int)
            and not isinstance(key, bool)
            and 0 <= key < len(self.input_names)
        ):
            return self.input_names[key]
        if key in self.input_names:
            return key
        if isinstance(key, str) and key.endswith("_0") and key[:-2] in self.input_names:
            # xDSL prints the first value named x as %x and later ones %x_1,
            # %x_2: x_0 names the first (TVM's data_n_0).
            return key[:-2]
        names = ", ".join(self.input_names) or "none"
        raise PipelineConfigError(
            f"{self.name} has no input {key!r} (its inputs: {names})"
        )

    # ---- placement (TVM's target / dev / build_func) -----------------------

    @property
    def target(self) -> str:
        return self._target

    @target.setter
    def target(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise PipelineConfigError(
                f'{self.name}: target must be a name such as "llvm", got {value!r}'
            )
        self._target = value

    @property
    def dev(self) -> Device:
        return self._dev

    @dev.setter
    def dev(self, value: Device | str) -> None:
        try:
            self._dev = device(value)
        except RuntimeFailure as e:
            raise PipelineConfigError(f"{self.name}: {e}") from None

    @property
    def build_func(self) -> Callable[..., Any] | None:
        return self._build_func

    @build_func.setter
    def build_func(self, value: Callable[..., Any] | None) -> None:
        if value is not None and not callable(value):
            raise PipelineConfigError(
                f"{self.name}: build_func must be callable, got {value!r}"
            )
        self._build_func = value

    def _no_attribute(self, name: str) -> str:
        message = f"stage {self.name} has no attribute {name!r} to set"
        close = difflib.get_close_matches(name, self.SETTINGS, n=1)
        if close:
            message += f" (did you mean {close[0]!r}?)"
        return f"{message}; a stage's settings are {', '.join(self.SETTINGS)}"

    def describe(self) -> str:
        text = f"{self.name}: target={self.target}, dev={self.dev}"
        if self.build_func is not None:
            text += f", build_func={getattr(self.build_func, '__name__', repr(self.build_func))}"
        return text


# --------------------------------------------------------------------------
# The configuration
# --------------------------------------------------------------------------


class PipelineConfig(_NoNewAttributes):
    """Stages, their placement, and the connections between them.

    ``cfg[mod]`` (or ``cfg["stage name"]``) is a stage; ``cfg["input"]`` and
    ``cfg["output"]`` are the pipeline's global inputs (by name) and outputs
    (by index).  See the module docstring for the rules.  Nothing is set on
    the configuration itself: a stage's ``target``, ``dev`` and
    ``build_func`` are set on ``cfg[mod]``.
    """

    __slots__ = ("_inputs", "_outputs", "stages")

    def _no_attribute(self, name: str) -> str:
        names = ", ".join(s.name for s in self.stages)
        return (
            f"PipelineConfig has no attribute {name!r} to set; a stage's "
            f"{', '.join(StageConfig.SETTINGS)} are set on cfg[mod] (stages: {names})"
        )

    def __init__(self, mods: Sequence[FuncOp | ModuleOp]) -> None:
        if isinstance(mods, FuncOp | ModuleOp) or not len(mods):
            raise PipelineConfigError(
                "PipelineConfig takes a non-empty list of stages (functions or modules)"
            )
        self.stages: list[StageConfig] = []
        for index, mod in enumerate(mods):
            stage = StageConfig(self, mod, index)
            if stage.name in ("input", "output") or any(
                s.name == stage.name for s in self.stages
            ):
                raise PipelineConfigError(
                    f"stage {index}: the name {stage.name!r} is already taken; stage "
                    f'names must be unique and not "input" or "output"'
                )
            if any(s.mod is mod for s in self.stages):
                raise PipelineConfigError(f"stage {index}: {stage.name} is given twice")
            self.stages.append(stage)
        self._inputs = _Interfaces(self, None, "input")
        self._outputs = _Interfaces(self, None, "output")

    @classmethod
    def from_module(cls, module: ModuleOp, entry: str = "main") -> PipelineConfig:
        """The configuration of ``pipeline.graph @entry`` (e.g. after ``split-graph``),
        to re-place its stages or rewire it; stages are its callee functions."""
        graph = SymbolTable.lookup_symbol(module, entry)
        if not isinstance(graph, GraphOp):
            raise PipelineConfigError(f"no pipeline.graph @{entry} in the module")
        verify_module(module)
        functions = [
            SymbolTable.lookup_symbol(module, s.callee_name) for s in graph.stages
        ]
        config = cls(functions)  # type: ignore[arg-type]  # verified: all func.func
        ends: dict[SSAValue, Interface] = {
            arg: config["input"][name]
            for arg, name in zip(graph.args, function_input_names(graph))
        }
        for stage_op, stage in zip(graph.stages, config.stages):
            stage.target, stage.dev = stage_op.target.data, stage_op.device.data
            for i, value in enumerate(stage_op.inputs):
                ends[value].connect(stage["input"][i])
            ends.update((r, stage["output"][i]) for i, r in enumerate(stage_op.outputs))
        assert graph.yield_op is not None  # verified
        for i, value in enumerate(graph.yield_op.values):
            ends[value].connect(config["output"][i])
        return config

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            if key == "input":
                return self._inputs
            if key == "output":
                return self._outputs
            for stage in self.stages:
                if stage.name == key:
                    return stage
        else:
            for stage in self.stages:
                if stage.mod is key:
                    return stage
        names = ", ".join(s.name for s in self.stages)
        shown = key if isinstance(key, str) else type(key).__name__
        raise PipelineConfigError(
            f'{shown!r} is not a stage of this pipeline (stages: {names}; or "input", "output")'
        )

    # ---- printing (TVM's print(pipe_config)) -------------------------------

    def __str__(self) -> str:
        lines = ["Inputs"]
        for global_input in self._inputs.items():
            fed = ", ".join(
                f"{t.owner.name}:{t.key}" for t in global_input.targets if t.owner
            )
            lines.append(f"  |{global_input.key}: {fed or '(not connected)'}")
        lines.append("Outputs")
        for index in sorted(self._outputs_by_index()):
            source = self._outputs[index].source
            where = (
                f"{source.owner.name}.output({source.key})"
                if source and source.owner
                else "(not connected)"
            )
            lines.append(f"  |output({index}): {where}")
        lines.append("Connections")
        for stage in self.stages:
            for output in stage["output"].items():
                for target in output.targets:
                    if target.owner is not None:
                        lines.append(
                            f"  |{stage.name}.output({output.key}) -> {target.owner.name}.{target.key}"
                        )
        lines.append("Stages")
        lines += [f"  |{stage.describe()}" for stage in self.stages]
        return "\n".join(lines)

    def _outputs_by_index(self) -> dict[int, Interface]:
        return {int(i.key): i for i in self._outputs.items()}

    # ---- building the IR ----------------------------------------------------

    def to_module(self, name: str = "main") -> ModuleOp:
        """A new module: the stage functions and ``pipeline.graph @name``.

        Raises :class:`PipelineConfigError` for what only the whole
        configuration shows: unconnected stage inputs or global inputs, missing
        global outputs, a target on the wrong kind of device, symbol clashes.
        """
        self._check_complete()
        module = ModuleOp([])
        for op in _collect_symbols(self.stages, name):
            module.body.block.add_op(op)
        module.body.block.add_op(self._graph(name))
        verify_module(module)
        return module

    def _check_complete(self) -> None:
        for stage in self.stages:
            try:
                check_placement(stage.name, stage.target, str(stage.dev))
            except VerifyException as e:
                raise PipelineConfigError(str(e)) from None
            for i, input_name in enumerate(stage.input_names):
                if stage["input"][input_name].source is None:
                    raise PipelineConfigError(
                        f'{stage.name} input "{input_name}" (#{i}) is not connected; connect '
                        f"a global input or an earlier stage's output to it"
                    )
        for global_input in self._inputs.items():
            if not global_input.targets:
                raise PipelineConfigError(f"{global_input} is connected to nothing")
        outputs = self._outputs_by_index()
        if not outputs:
            raise PipelineConfigError(
                'the pipeline has no global output; connect one to cfg["output"][0]'
            )
        for index in range(max(outputs) + 1):
            if index not in outputs or outputs[index].source is None:
                raise PipelineConfigError(f"global output {index} is not connected")

    def _graph(self, name: str) -> GraphOp:
        global_inputs = self._inputs.items()
        outputs = self._outputs_by_index()
        result_types = [outputs[i].type for i in range(len(outputs))]
        graph = GraphOp(
            name,
            [i.type for i in global_inputs],
            result_types,
            arg_names=[str(i.key) for i in global_inputs],
        )
        values: dict[Interface, SSAValue] = dict(zip(global_inputs, graph.args))
        for stage in self.stages:
            inputs = [values[stage["input"][n].source] for n in stage.input_names]
            op = StageOp(
                stage.name,
                inputs,
                list(stage.function.function_type.outputs.data),
                target=stage.target,
                device=str(stage.dev),
            )
            graph.body.block.add_op(op)
            values.update((stage["output"][i], r) for i, r in enumerate(op.results))
        graph.body.block.add_op(
            YieldOp(*(values[outputs[i].source] for i in range(len(outputs))))
        )
        return graph


# --------------------------------------------------------------------------
# Copying the stage functions and what they refer to
# --------------------------------------------------------------------------


def _collect_symbols(
    stages: Sequence[StageConfig], pipeline_name: str
) -> list[Operation]:
    """Copies of the stage functions (renamed where needed) and, from each
    stage's module, the symbols they refer to, transitively."""
    chosen: dict[str, Operation] = {}

    def add(name: str, op: Operation, what: str) -> None:
        existing = chosen.get(name)
        if existing is not None and existing is not op:
            raise PipelineConfigError(
                f"two different symbols are named @{name} (the second one is {what}); "
                f"rename one of them"
            )
        chosen[name] = op

    for stage in stages:
        add(stage.name, stage.function, f"stage {stage.name}")
        home = stage.function.parent_op()
        if not isinstance(home, ModuleOp):
            continue
        for symbol, found in used_symbols(stage.function, home):
            add(symbol, found, f"used by stage {stage.name}")
    if pipeline_name in chosen:
        raise PipelineConfigError(
            f"the pipeline name @{pipeline_name} is also the name of a stage or symbol"
        )
    copies: list[Operation] = []
    for symbol, op in chosen.items():
        copy = op.clone()
        if isinstance(copy, FuncOp) and copy.sym_name.data != symbol:
            copy.sym_name = StringAttr(symbol)
        copies.append(copy)
    return copies
