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
the choice fails with a ValueError naming it.

What makes a kernel correct, not merely fast, is checked for chosen and forced kernels alike
(Selection.usable): its variant's required features (Capabilities.offers), the device's limits
every kernel must keep (workgroup invocations, push-constant bytes) and its variant's own Needs
(element size, subgroup size, shared memory). A routine that builds a kernel a need rules out
takes another way; a forced variant that cannot keep them raises a ValueError naming the need."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Mapping, Optional, Sequence

from ..runtime.capabilities import Capabilities
from ..runtime.kernel import Kernel, VariantChoice

@dataclass(frozen=True)
class Rule:
    """Where a variant measured faster than the others that can run the same description: text
    says it (docs/kernels.md prints it), test(desc, selection, **facts) decides it, reading the
    tuning numbers it names from the selection (selection[NAME]; None outside a choice: the table's
    own) and any fact only the routine knows by keyword (Selection.where_wins). The evidence is the
    variant's `measured` and benchmarks/evidence/<variant>.md."""
    text: str
    test: Callable[..., bool]


@dataclass(frozen=True)
class Need:
    """A limit a variant is correct within (not where it is fast): text names it (docs/kernels.md
    prints it, a forced variant's error quotes it); test(constants, kernel, capabilities) says
    whether a built kernel keeps it on the device, constants being the kernel's specialization
    constants by name."""
    text: str
    test: Callable[..., bool]


def whole_subgroups(local_size: int, caps: Capabilities) -> bool:
    """Whether workgroups of local_size invocations are whole subgroups of every size the device may
    run the kernel at (sizes are powers of two: the largest decides)."""
    size = max(caps.subgroup_size, caps.max_subgroup_size)
    return size > 0 and local_size % size == 0


WHOLE_SUBGROUPS = Need("workgroups of whole subgroups (the local size a multiple of the device's largest subgroup size)",
                       lambda c, k, caps: whole_subgroups(k.local_size, caps))

_VECTOR_ALIGN = {1: 1, 2: 2, 3: 4, 4: 4}      # a push member's alignment in words, by its width


class PushBlock:
    """A shader's push-constant block before the dispatch's items and first (which the runtime
    appends): its members [(name, words)] in order, as the GLSL declares them (the tests compare
    the two). pack() lays values given by name out as the flat tuple a Kernel carries."""

    def __init__(self, members: Sequence[tuple]):
        self.members = tuple((str(name), int(words)) for name, words in members)
        at = 0
        for name, words in self.members:
            if at % _VECTOR_ALIGN[words]:
                raise AssertionError(f"push member {name} starts at word {at}: a {words}-word vector needs "
                                     f"{_VECTOR_ALIGN[words]}-word alignment, so the GLSL layout is not the tuple's")
            at += words

    def pack(self, values: Mapping) -> tuple:
        names = [name for name, _ in self.members]
        missing, unknown = [n for n in names if n not in values], [n for n in values if n not in names]
        if missing or unknown:
            raise ValueError(f"push constants: missing {missing}, unknown {unknown}; the block is {names}")
        out = ()
        for name, words in self.members:
            v = values[name]
            v = tuple(int(x) for x in v) if words > 1 else (int(v),)
            if len(v) != words:
                raise ValueError(f"push constant {name} has {len(v)} words, not {words}")
            out += v
        return out

    def unpack(self, push: Sequence[int]) -> dict:
        """{name: value (a tuple for vectors)} of a Kernel's push constants."""
        out, at = {}, 0
        for name, words in self.members:
            out[name] = push[at] if words == 1 else tuple(push[at:at + words])
            at += words
        return out


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
    extends: str = ""              # another variant with more in its epilogue, reached only through an API of
                                   # its own (the ONNX runner's folds), never by a plan's choice or a force
    push: Optional[PushBlock] = None   # its shader's push block (declared once per shader)
    wins: Optional[Rule] = None    # where it measured faster (None: wherever the layout lets it run)
    needs: tuple = ()              # Needs: the limits it is correct within, beyond the device's own

    def constants(self, kernel: Kernel) -> dict:
        """{name: value} of a kernel's specialization constants (this variant's names)."""
        return {name: value for name, value in zip(self.spec, kernel.spec) if name is not None}

    def with_constants(self, kernel: Kernel, **values) -> Kernel:
        """The kernel with these specialization constants (by name) changed."""
        unknown = set(values) - {n for n in self.spec if n is not None}
        if unknown:
            raise ValueError(f"variant {self.name} has no specialization constants {sorted(unknown)}")
        return dataclasses.replace(kernel, spec=tuple(values.get(n, v) if n is not None else v
                                                      for n, v in zip(self.spec, kernel.spec)))

    def push_values(self, kernel: Kernel) -> dict:
        """{name: value} of a kernel's push constants (this variant's push block)."""
        return self.push.unpack(kernel.push)

    def kernel(self, spec: Mapping, push: Mapping, count: int, slots: tuple, local_size: int = 128,
               defines: tuple = ()) -> Kernel:
        """The Kernel of this variant: spec and push by name (every name of the variant's constants and
        of its shader's push block, no other); ids the shader leaves unused get 0."""
        named = [n for n in self.spec if n is not None]
        missing, unknown = [n for n in named if n not in spec], [n for n in spec if n not in named]
        if missing or unknown:
            raise ValueError(f"variant {self.name}: specialization constants missing {missing}, unknown {unknown}")
        return Kernel(shader=self.shader, spec=tuple(0 if n is None else int(spec[n]) for n in self.spec),
                      push=self.push.pack(push), count=count, slots=slots, local_size=local_size,
                      defines=tuple(defines), variant=self.name)


class Table:
    """An operator's variants, in the order its selection prefers them, with the tuning numbers."""

    def __init__(self, operator: str, variants: Sequence[Variant], push: Optional[Mapping] = None):
        """push: {shader: PushBlock}, the push block of each shader (declared once), given to its
        variants."""
        self.operator = operator
        variants = [v if v.push is not None or v.shader not in (push or {}) else
                    dataclasses.replace(v, push=push[v.shader]) for v in variants]
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
        """Whether name is one of the variants a selection may be forced to (neither a step of one nor
        an extension of one)."""
        return name in self.variants and not (self.variants[name].step_of or self.variants[name].extends)

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
                             f"{', '.join(v.name for v in table if table.owns(v.name))}")
        tuning = dict(tuning or {})
        unknown = set(tuning) - set(table.tuning) - set(table.variants)
        if unknown:
            raise ValueError(f"{table.operator} has no tuning number {', '.join(sorted(unknown))}; its numbers: "
                             f"{', '.join(table.tuning)} (and its variants' names, False to leave one out)")
        if force is not None:
            missing = [f for f in table[force].requires if capabilities is None or not capabilities.offers(f)]
            if missing:
                raise ValueError(f"{table.operator} variant {force} needs {', '.join(missing)}, which the "
                                 f"device does not offer")
        self.table, self.capabilities, self.force = table, capabilities, force
        self.off = {name for name in table.variants if tuning.pop(name, True) is False}
        most = capabilities.max_workgroup_invocations if capabilities is not None else 0
        for name, value in tuning.items():
            if name.endswith("_LOCAL") and most and value > most:
                raise ValueError(f"{table.operator}: tuning {name}={value} is more invocations than the device's "
                                 f"workgroups may have (maxComputeWorkGroupInvocations {most})")
        # the table's workgroup sizes, within the device's limit where it is lower
        local = {name: min(value, most) for name, value in table.tuning.items()
                 if name.endswith("_LOCAL") and most and value > most}
        self._tuning = {**table.tuning, **local, **tuning}

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

    def workgroup(self, invocations: int) -> int:
        """A kernel's fixed workgroup size, within the device's maxComputeWorkGroupInvocations (for
        kernels correct at any size)."""
        most = self.capabilities.max_workgroup_invocations if self.capabilities is not None else 0
        return min(invocations, most) if most else invocations

    def unmet(self, kernel: Kernel) -> Optional[str]:
        """The first requirement the kernel does not keep on this device, in words, or None: its
        variant's features, the device's workgroup and push-constant limits, its variant's Needs."""
        caps = self.capabilities
        variant = self.table[kernel.variant]
        if caps is None:
            return f"{', '.join(variant.requires)}, which no device was given to offer" if variant.requires else None
        missing = [f for f in variant.requires if not caps.offers(f)]
        if missing:
            return f"{', '.join(missing)}, which the device does not offer"
        if not caps.fits_workgroup(kernel.local_size):
            return (f"workgroups of {kernel.local_size} invocations (the device's maxComputeWorkGroupInvocations is "
                    f"{caps.max_workgroup_invocations})")
        push_bytes = 4 * (len(kernel.push) + 2)
        if caps.max_push_constants and push_bytes > caps.max_push_constants:
            return f"{push_bytes} bytes of push constants (the device's maxPushConstantsSize is {caps.max_push_constants})"
        constants = variant.constants(kernel)
        return next((need.text for need in variant.needs if not need.test(constants, kernel, caps)), None)

    def usable(self, kernel: Optional[Kernel]) -> bool:
        """Whether a kernel a routine built keeps every requirement (unmet) on this device. Where a
        forced variant's kernel does not, a ValueError names the requirement: forcing never runs a
        kernel outside the limits it is correct within."""
        if kernel is None:
            return False
        why = self.unmet(kernel)
        if why is not None and self.force is not None:
            raise ValueError(f"{self.table.operator} variant {self.force} cannot run on this device: "
                             + (f"it needs {why}" if kernel.variant == self.force else f"its {kernel.variant} needs {why}"))
        return why is None

    @property
    def on_cpu(self) -> bool:
        """Whether the device is a CPU (Capabilities.cpu_kernels): several rules measured otherwise there."""
        return self.capabilities is not None and self.capabilities.cpu_kernels

    def where_wins(self, name: str, desc, **facts) -> bool:
        """prefer(name) where variant name's rule (its row's `wins`) holds for the description under
        this selection (facts: what only the routine knows, by name)."""
        rule = self.table[name].wins
        return self.prefer(name, rule is None or rule.test(desc, self, **facts))

    def chosen(self, kernel: Optional[Kernel], what: str, steps: Sequence[Kernel] = ()) -> Optional[Kernel]:
        """The kernel, checked against a forced variant, and it and the steps of its plan against
        what they need of the device (usable): a kernel that cannot run there is an error, forced
        or not (the routines take another way where they can)."""
        if self.force is not None and (kernel is None or kernel.variant != self.force):
            raise ValueError(f"{self.table.operator} variant {self.force} cannot run {what}"
                             + (f" (it takes {kernel.variant})" if kernel is not None else ""))
        if kernel is None:
            raise ValueError(f"{self.table.operator}: no kernel can run {what} within this device's limits")
        for k in (kernel, *steps):
            if k is not None and not self.usable(k):
                raise ValueError(f"{self.table.operator}: no kernel can run {what} on this device: "
                                 f"{k.variant} needs {self.unmet(k)}")
        return kernel


_DECL = re.compile(r"layout\s*\(\s*constant_id\s*=\s*(\d+)\s*\)\s*const\s+\w+\s+(\w+)")
_INCLUDE = re.compile(r'#include\s+"([^"]+)"')


def declared_constants(shader_dir: Path, shader: str) -> dict:
    """{constant_id: name} a shader declares, its #includes followed."""
    return {int(i): name for i, name in _DECL.findall(_source(shader_dir / f"{shader}.comp"))}


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


def _source(path: Path, seen=None) -> str:
    """A GLSL file's text with its #includes' texts before it."""
    seen = set() if seen is None else seen
    if path in seen:
        return ""
    seen.add(path)
    text = path.read_text()
    return "".join(_source(path.parent / inc, seen) for inc in _INCLUDE.findall(text)) + text


def declared_push_block(path: Path) -> list:
    """[(name, words)] of the push-constant block a GLSL file declares (its #includes followed)."""
    body = _PUSH_BLOCK.search(_source(path)).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    fields = []
    for decl in body.split(";"):
        parts = decl.split()
        if len(parts) == 2:
            fields.append((parts[1], _WORDS[parts[0]]))
    return fields


def check_push_blocks(table: Table, shader_dir: Path) -> list:
    """The variants whose push block is not their shader's declaration (less items and first), as lines."""
    wrong = []
    for v in table:
        declared = declared_push_block(shader_dir / f"{v.shader}.comp")
        if v.push is None or declared != list(v.push.members) + [("items", 1), ("first", 1)]:
            wrong.append(f"{v.name}: push block {None if v.push is None else list(v.push.members)} in the table, "
                         f"{declared} in {v.shader}.comp")
    return wrong
