"""Mutation testing: how many plausible bugs, planted one at a time, the tests notice.

    python tools/mutate.py --files dmlvk/runtime/commands.py [--max 40] [--seed 0] [--timeout 300] \
        [--json out.json] [--list] [--rerun earlier.json] -- tests/test_runtime.py [pytest arguments]

For each file, every site where one of MUTATORS applies is a mutant (a comparison or arithmetic
operator swapped, a bound moved by one, a boolean or and/or flipped, min/max swapped, a barrier or a
lock dropped, a rounding changed, a check's raise dropped); --max of them, drawn with --seed, are
planted one at a time in a scratch copy of the package (the working tree is never touched), and the
given tests run there with -x. A mutant is killed when they fail or time out, and survives when
they pass. The report gives the kill rate per file and each survivor (file, line, change), to judge
it equivalent or to write the test that a real bug of its kind would need. --rerun takes an earlier
run's JSON and plants only its survivors again (after tests were added: the others stay killed).

It runs the tests in a fresh interpreter per mutant with the scratch package first on sys.path (the
editable install's import hook set aside) and shaders compiled from the scratch copy, so both
Python and GLSL mutants take effect. A tool to run by hand: a file takes minutes to an hour."""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutator:
    name: str
    pattern: str          # a regular expression matched within one line
    replace: str          # its replacement (re.sub syntax)
    langs: str = "py,glsl"


# Python and GLSL. Patterns avoid the obvious non-code: comment lines are skipped, and operators
# are matched with spaces around them, as the project writes binary operators.
MUTATORS = (
    Mutator("== -> !=", r" == ", " != "),
    Mutator("!= -> ==", r" != ", " == "),
    Mutator("< -> <=", r" < ", " <= "),
    Mutator("<= -> <", r" <= ", " < "),
    Mutator("> -> >=", r" > ", " >= "),
    Mutator(">= -> >", r" >= ", " > "),
    Mutator("+ -> -", r" \+ ", " - "),
    Mutator("- -> +", r" - ", " + "),
    Mutator("* -> /", r" \* ", " // ", "py"),
    Mutator("and -> or", r" and ", " or ", "py"),
    Mutator("or -> and", r" or ", " and ", "py"),
    Mutator("&& -> ||", r" && ", " || ", "glsl"),
    Mutator("|| -> &&", r" \|\| ", " && ", "glsl"),
    Mutator("True -> False", r"\bTrue\b", "False", "py"),
    Mutator("False -> True", r"\bFalse\b", "True", "py"),
    Mutator("min -> max", r"\bmin\(", "max(", ),
    Mutator("max -> min", r"\bmax\(", "min(", ),
    Mutator("1 -> 0", r"(?<![\w.])1(?![\w.])", "0"),
    Mutator("0 -> 1", r"(?<![\w.])0(?![\w.x])", "1"),
    Mutator("bound + 1", r"(\b(?:len|range)\([^()]*\))", r"(\1 + 1)", "py"),
    Mutator("drop raise", r"^(\s*)raise \w+\(.*\)\s*$", r"\1pass", "py"),
    Mutator("drop lock", r"^(\s*)with (self\.)?_?\w*lock\w*:", r"\1if True:", "py"),
    Mutator("drop barrier", r"^(\s*)(barrier|memoryBarrierShared|subgroupBarrier|memoryBarrierBuffer)\(\);",
            r"\1;", "glsl"),
    Mutator("roundEven -> round", r"\broundEven\(", "round(", "glsl"),
    Mutator("floor -> ceil", r"\bfloor\(", "ceil(", ),
    Mutator("<< -> >>", r" << ", " >> "),
    Mutator("& -> |", r" & ", " | "),
)


@dataclass
class Mutant:
    file: str
    line: int
    mutator: str
    before: str
    after: str
    outcome: str = ""       # killed, survived, timeout
    seconds: float = 0.0


def lang(path: Path) -> str:
    return "py" if path.suffix == ".py" else "glsl"


def string_spans(source: str) -> dict:
    """{line number: [(start column, end column)]} of a Python file's string literals."""
    import io
    import tokenize
    spans = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            (r0, c0), (r1, c1) = tok.start, tok.end
            for r in range(r0, r1 + 1):
                spans.setdefault(r, []).append((c0 if r == r0 else 0, c1 if r == r1 else 1 << 30))
    return spans


def sites(path: Path) -> list:
    """Every mutant of one file: one per (line, mutator, occurrence) outside comments and, in
    Python, outside string literals (messages and docstrings)."""
    out = []
    in_doc = False
    source = path.read_text()
    strings = string_spans(source) if lang(path) == "py" else {}
    for i, text in enumerate(source.splitlines()):
        s = text.strip()
        if lang(path) == "py" and s.count('"""') % 2 == 1:
            in_doc = not in_doc
            continue
        if in_doc or not s or s.startswith(("#", "//", "*", "/*")) or s.startswith(('"""', "import ", "from ")):
            continue
        code = text.split("  #")[0] if lang(path) == "py" else text.split("//")[0]
        for m in MUTATORS:
            if lang(path) not in m.langs.split(","):
                continue
            for match in re.finditer(m.pattern, code, flags=re.M):
                if any(a <= match.start() < b for a, b in strings.get(i + 1, ())):
                    continue
                after = code[:match.start()] + match.expand(m.replace) + code[match.end():]
                if after != code:
                    out.append(Mutant(str(path.relative_to(ROOT)), i + 1, m.name, text, after + text[len(code):]))
    return out


def scratch_copy() -> Path:
    """A copy of the package (with the built native library) and its tests, outside the working tree."""
    from dmlvk.errors import UnsupportedError
    from dmlvk.runtime.kompute import LIBRARY, library_path
    try:
        native = library_path()
    except UnsupportedError:
        raise SystemExit("mutate: dmlvk's native library is not built (bash ci/setup.sh)") from None
    base = Path(tempfile.mkdtemp(prefix="dmlvk-mutate-"))
    shutil.copytree(ROOT / "dmlvk", base / "dmlvk", ignore=shutil.ignore_patterns("__pycache__", LIBRARY))
    shutil.copy2(native, base / "dmlvk")
    for d in ("tests", "tools"):
        shutil.copytree(ROOT / d, base / d, ignore=shutil.ignore_patterns("__pycache__"))
    (base / "sitecustomize.py").write_text(SITECUSTOMIZE)
    for f in ("pyproject.toml", "conftest.py"):
        if (ROOT / f).exists():
            shutil.copy2(ROOT / f, base / f)
    return base


# Written into the scratch copy, first on PYTHONPATH: every Python the tests start (subprocesses
# included) sets the editable install's import hook aside and imports the scratch dmlvk.
SITECUSTOMIZE = """import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()]
"""
BOOT = ("import sys, dmlvk; assert dmlvk.__file__.startswith({base!r}), dmlvk.__file__;"
        "import pytest; sys.exit(pytest.main({args!r}))")


def run_tests(base: Path, tests: list, timeout: float) -> tuple:
    args = ["-x", "-q", "-p", "no:cacheprovider", "--no-header"] + tests
    env = dict(os.environ, DMLVK_CACHE_DIR=str(base / "cache"), DMLVK_NO_DIRECTML="1",
               PYTHONPATH=os.pathsep.join([str(base)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("DMLVK_SHADER_DIR", None)
    start = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-c", BOOT.format(base=str(base), args=args)], cwd=base, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        outcome = "survived" if r.returncode == 0 else "killed"
        if r.returncode not in (0, 1):
            tail = r.stdout.decode(errors="replace")[-2000:]
            if "no tests ran" in tail or r.returncode in (4, 5):
                raise RuntimeError(f"the tests did not run:\n{tail}")
    except subprocess.TimeoutExpired:
        outcome = "timeout"
    return outcome, time.monotonic() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="+", required=True, help="files to mutate (paths from the repository root)")
    ap.add_argument("tests", nargs=argparse.REMAINDER, help="after --: pytest arguments, the tests that should notice")
    ap.add_argument("--max", type=int, default=40, help="mutants per file at most (default 40)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300, help="seconds per test run; longer counts as killed")
    ap.add_argument("--json", help="write every mutant and its outcome here")
    ap.add_argument("--list", action="store_true", help="only list the mutants that would be planted")
    ap.add_argument("--rerun", help="an earlier run's --json: plant its survivors only")
    a = ap.parse_args(argv)
    a.tests = a.tests[1:] if a.tests[:1] == ["--"] else a.tests
    if not a.tests and not a.list:
        ap.error("name the tests after --")

    rng = random.Random(a.seed)
    chosen, earlier = [], []
    for f in a.files:
        all_sites = sites(ROOT / f)
        picked = sorted(rng.sample(all_sites, min(a.max, len(all_sites))), key=lambda m: m.line)
        if a.rerun:
            before = [Mutant(**m) for m in json.loads(Path(a.rerun).read_text()) if m["file"] == f]
            earlier += [m for m in before if m.outcome != "survived"]
            picked = [m for m in before if m.outcome == "survived"]
            lines = (ROOT / f).read_text().splitlines()
            for m in picked:            # the same line, moved by edits elsewhere in the file
                at = [i + 1 for i, t in enumerate(lines) if t == m.before]
                if not at:
                    raise SystemExit(f"mutate: {f}:{m.line} changed since the earlier run: {m.before.strip()}")
                m.line = min(at, key=lambda i: abs(i - m.line))
            all_sites = before
        chosen.append((f, len(all_sites), picked))
    if a.list:
        for f, n, picked in chosen:
            print(f"{f}: {len(picked)} of {n} sites")
            for m in picked:
                print(f"  {m.line}: {m.mutator}: {m.after.strip()}")
        return 0

    base = scratch_copy()
    try:
        outcome, secs = run_tests(base, a.tests, a.timeout)
        if outcome != "survived":
            print(f"mutate: the tests fail without any mutant ({outcome}); fix that first", file=sys.stderr)
            return 2
        print(f"mutate: unmutated tests pass in {secs:.0f} s", flush=True)
        results = list(earlier)
        for f, n, picked in chosen:
            target = base / f
            original = target.read_text()
            lines = original.splitlines(keepends=True)
            for m in picked:
                mutated = lines.copy()
                mutated[m.line - 1] = m.after + ("\n" if lines[m.line - 1].endswith("\n") else "")
                target.write_text("".join(mutated))
                try:
                    m.outcome, m.seconds = run_tests(base, a.tests, a.timeout)
                finally:
                    target.write_text(original)
                print(f"  {m.outcome:8s} {f}:{m.line} {m.mutator}: {m.after.strip()[:100]}", flush=True)
                results.append(m)
            mine = [m for m in results if m.file == f]
            killed = sum(m.outcome != "survived" for m in mine)
            print(f"{f}: {killed}/{len(mine)} killed ({100 * killed / max(1, len(mine)):.0f} %)"
                  + ("" if a.rerun else f", {n} sites in all"), flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps([asdict(m) for m in results], indent=1))
        survivors = [m for m in results if m.outcome == "survived"]
        print(f"\n{len(results) - len(survivors)}/{len(results)} killed; survivors:")
        for m in survivors:
            print(f"  {m.file}:{m.line} {m.mutator}: {m.after.strip()}")
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
