"""Named kernel variants: what each operator's variant table is made of, and how a kernel is chosen.

A Variant names one way an operator runs: its shader, its specialization constants by name (checked
against the shader's constant_id declarations when the package is built and in the tests), what it
requires of the device, the tuning numbers its selection reads, and where it was measured to win.
An operator's selection walks its table and returns Kernels that carry the variant's name.

A Selection is one choice's context: the device's Capabilities, an optional forced variant (by
name: Device.create_operator's force, Device.variants() for every operator it creates, or the
DMLVK_VARIANT environment variable) and tuning overrides ({number's name: value};
{variant's name: False} leaves that variant out). A forced variant skips
the "where it measured faster" tests but never a layout or device requirement: where it cannot run,
the choice fails with a ValueError naming it."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Optional, Sequence

from ..runtime.capabilities import Capabilities
from ..runtime.device import Kernel, VariantChoice

@dataclass(frozen=True)
class Variant:
    name: str                      # e.g. "rows.paired": the routine, then its form
    shader: str                    # dmlvk/shaders/<shader>.comp
    spec: tuple                    # names of specialization constants 1..n (None: an id the shader leaves unused)
    summary: str                   # what it does, in a line
    requires: tuple = ()           # Capabilities features it needs
    builds: tuple = ((),)          # the define sets the package compiles it with
    tuning: Mapping = field(default_factory=dict)   # the numbers its selection reads
    measured: str = ""             # where it measured faster, and against what
    measured_on: str = ""          # the device those figures come from
    step_of: str = ""              # a kernel that runs as part of another variant's plan (packing, reduction)

    def constants(self, kernel: Kernel) -> dict:
        """{name: value} of a kernel's specialization constants (this variant's names)."""
        return {name: value for name, value in zip(self.spec, kernel.spec) if name is not None}

    def kernel(self, spec: Sequence[int], push: Sequence[int], count: int, slots: tuple, local_size: int = 128,
               defines: tuple = ()) -> Kernel:
        if len(spec) != len(self.spec):
            raise AssertionError(f"variant {self.name}: {len(spec)} specialization constants for {len(self.spec)}")
        return Kernel(shader=self.shader, spec=tuple(spec), push=tuple(push), count=count, slots=slots,
                      local_size=local_size, defines=tuple(defines), variant=self.name)


class Table:
    """An operator's variants, in the order its selection prefers them, with the tuning numbers."""

    def __init__(self, operator: str, variants: Sequence[Variant]):
        self.operator = operator
        self.variants = {v.name: v for v in variants}
        if len(self.variants) != len(variants):
            raise AssertionError(f"{operator}: two variants share a name")
        tuning = {}
        for v in variants:
            for k, val in v.tuning.items():
                if tuning.setdefault(k, val) != val:
                    raise AssertionError(f"{operator}: tuning number {k} differs between variants")
        self.tuning = MappingProxyType(tuning)

    def __getitem__(self, name: str) -> Variant:
        return self.variants[name]

    def __iter__(self):
        return iter(self.variants.values())

    def owns(self, name: Optional[str]) -> bool:
        """Whether name is one of the variants a selection may be forced to (not a step of one)."""
        return name in self.variants and not self.variants[name].step_of

    def selection(self, capabilities: Optional[Capabilities], force: Optional[str] = None,
                  tuning: Optional[Mapping] = None) -> "Selection":
        """A strict Selection: force and tuning must name this table's variants and numbers."""
        return Selection(self, capabilities, force, tuning)

    def chosen_by(self, capabilities: Optional[Capabilities], choice: Optional[VariantChoice]) -> "Selection":
        """The Selection a Device.create_operator choice asks for."""
        choice = choice or VariantChoice()
        return Selection(self, capabilities, choice.force, choice.tuning, choice.strict)


class Selection:
    """One choice of kernels: the device's capabilities, the forced variant (if any) and the tuning."""

    def __init__(self, table: Table, capabilities: Optional[Capabilities], force: Optional[str] = None,
                 tuning: Optional[Mapping] = None, strict: bool = True):
        """strict: a force or tuning name this table lacks is an error (else, as for a device-wide
        choice or the environment's, which may name other operators' variants, it is ignored)."""
        if not strict:
            force = force if table.owns(force) else None
            tuning = {k: v for k, v in (tuning or {}).items() if k in table.tuning or k in table.variants}
        elif force is not None and not table.owns(force):
            raise ValueError(f"{table.operator} has no variant {force!r}; its variants: "
                             f"{', '.join(v.name for v in table if not v.step_of)}")
        tuning = dict(tuning or {})
        unknown = set(tuning) - set(table.tuning) - set(table.variants)
        if unknown:
            raise ValueError(f"{table.operator} has no tuning number {', '.join(sorted(unknown))}; its numbers: "
                             f"{', '.join(table.tuning)} (and its variants' names, False to leave one out)")
        if force is not None:
            missing = [f for f in table[force].requires if capabilities is None or not capabilities.has(f)]
            if missing:
                raise ValueError(f"{table.operator} variant {force} needs {', '.join(missing)}, which the "
                                 f"device does not offer")
        self.table, self.capabilities, self.force = table, capabilities, force
        self.off = {name for name in table.variants if tuning.pop(name, True) is False}
        self._tuning = {**table.tuning, **tuning}

    def __getitem__(self, number: str):
        return self._tuning[number]

    def may(self, *names: str) -> bool:
        """Whether one of these variants may be chosen: nothing is forced, or one of them is."""
        return any(n not in self.off for n in names) if self.force is None else self.force in names

    def prefer(self, name: str, measured_faster: bool) -> bool:
        """Whether to take variant `name` where the layout allows it: as measured, unless a variant is
        forced (then only that one)."""
        if self.force is not None:
            return self.force == name
        return measured_faster and name not in self.off

    def chosen(self, kernel: Optional[Kernel], what: str) -> Optional[Kernel]:
        """The kernel, checked against a forced variant."""
        if self.force is not None and (kernel is None or kernel.variant != self.force):
            raise ValueError(f"{self.table.operator} variant {self.force} cannot run {what}"
                             + (f" (it takes {kernel.variant})" if kernel is not None else ""))
        return kernel


_DECL = re.compile(r"layout\s*\(\s*constant_id\s*=\s*(\d+)\s*\)\s*const\s+\w+\s+(\w+)")
_INCLUDE = re.compile(r'#include\s+"([^"]+)"')


def declared_constants(shader_dir: Path, shader: str) -> dict:
    """{constant_id: name} a shader declares, its #includes followed."""
    out, seen = {}, set()

    def walk(path: Path):
        if path in seen:
            return
        seen.add(path)
        text = path.read_text()
        for inc in _INCLUDE.findall(text):
            walk(path.parent / inc)
        for i, name in _DECL.findall(text):
            out[int(i)] = name

    walk(shader_dir / f"{shader}.comp")
    return out


def check_against_shaders(table: Table, shader_dir: Path) -> list:
    """The variants whose named constants are not their shader's declarations, as lines: each name
    must be the declaration of its id, and each id the variant sets that the shader declares must
    be named."""
    wrong = []
    for v in table:
        declared = declared_constants(shader_dir, v.shader)
        for i, name in enumerate(v.spec, 1):
            if declared.get(i) != name:
                wrong.append(f"{v.name}: constant {i} is {name!r} in the table, "
                             f"{declared.get(i)!r} in {v.shader}.comp")
    return wrong


_PUSH_BLOCK = re.compile(r"layout\s*\(\s*push_constant\s*\)\s*uniform\s+\w+\s*\{(.*?)\}", re.S)
_WORDS = {"uint": 1, "int": 1, "float": 1, "uvec2": 2, "ivec2": 2, "uvec3": 3, "ivec3": 3, "uvec4": 4, "ivec4": 4}


def declared_push_block(path: Path) -> list:
    """[(name, words)] of the push-constant block a GLSL file declares."""
    body = _PUSH_BLOCK.search(path.read_text()).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    fields = []
    for decl in body.split(";"):
        parts = decl.split()
        if len(parts) == 2:
            fields.append((parts[1], _WORDS[parts[0]]))
    return fields
