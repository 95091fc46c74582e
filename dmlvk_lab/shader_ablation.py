"""Shader ablations on the quantized super-resolution model (dmlvk_lab/model_probe.py's): copies of
dmlvk/shaders with text edits, each copy measured in a process of its own (DMLVK_SHADER_DIR, an
empty kernel cache): every dispatch's time in the frame (dmlvk_lab/bench_layers.py), its pipeline
statistics where the driver reports them, and whether the model's output still equals onnxruntime's. One table at the end: what each part
of a kernel costs (cut it out) or what a change gains, in one GPU session, the tree untouched.

    python -m dmlvk_lab.shader_ablation RECIPE.py [--only NAME ...] [--height 540] [--width 960] [--out DIR] [--prepare]
                                    [--machine-code]

RECIPE.py defines VARIANTS = {name: [(shader file, old text, new text), ...]}; an empty list is the
shaders as they are (the same run's baseline). Each old text must occur exactly once in its file.
A variant may also be {"edits": [...], "tuning": {number: value}}: the model's session made with
those tuning numbers (Device.variants), e.g. the same shaders with DOT_OUTPUTS 4 and 8.
NEVER, given to the recipe, is a condition of the convolution shaders that no execution meets (the
output zero point word equal to 0x12345678): `if (NEVER) y[...] = v;` keeps work alive whose result
an edit no longer stores, `if (alive && !(NEVER))` would not. An edit that cuts work out changes the
output, so such a variant's check fails by design. --prepare writes and compiles the copies only
(to check a recipe on a machine without the GPU first). --machine-code keeps each variant's pipelines'
cache data in DIR/NAME.code (NAME's other characters than letters and digits as _) (dmlvk_lab/model_probe.py --representations; dmlvk_lab/sass.py disassembles
NVIDIA's on any machine).
"""
import argparse
import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHADERS = ROOT / "dmlvk" / "shaders"
NEVER = "params[1] == 0x12345678u"
_MARK = "shader_ablation: "


def parts(variant) -> tuple:
    """(edits, tuning) of a recipe's variant: a list of edits, or {"edits": [...], "tuning": {...}}."""
    if isinstance(variant, dict):
        unknown = set(variant) - {"edits", "tuning"}
        if unknown:
            raise ValueError(f"a variant holds edits and tuning, not {sorted(unknown)}")
        return list(variant.get("edits", [])), dict(variant.get("tuning", {}))
    return list(variant), {}


def make_copy(name: str, edits: list, out: Path) -> tuple:
    """dmlvk/shaders copied to out/name with the edits made; (its folder, the files edited)."""
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(SHADERS, folder)
    edited = set()
    for file, old, new in edits:
        path = folder / file
        if not path.is_file():
            raise ValueError(f"{name}: no shader {file}")
        text = path.read_text()
        if text.count(old) != 1:
            raise ValueError(f"{name}: {file} holds {text.count(old)} copies of the text to replace, "
                             f"not one: {old[:80]!r}")
        path.write_text(text.replace(old, new))
        edited.add(file)
    return folder, sorted(edited)


def _child(args: list, folder: Path, cache: Path, timeout: int) -> dict:
    env = dict(os.environ, DMLVK_SHADER_DIR=str(folder), DMLVK_CACHE_DIR=str(cache))
    proc = subprocess.run([sys.executable, "-m", "dmlvk_lab.shader_ablation", "--child"] + args, env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    line = next((x for x in reversed(proc.stdout.splitlines()) if x.startswith(_MARK)), None)
    if line is None:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
    return json.loads(line[len(_MARK):])


def _run_child(argv: list) -> None:
    """In the copy's process: compile the edited shaders' builds (compile NAME ...), or probe the
    model (probe HEIGHT WIDTH TUNING-JSON [CODE-DIR])."""
    if argv[0] == "compile":
        from dmlvk.runtime import compiler
        names = {Path(f).stem for f in argv[1:]}
        everything = any(f.endswith(".glsl") for f in argv[1:])
        builds = [(n, d) for n, d in compiler.VARIANTS if everything or n in names]
        for n, d in builds:
            try:
                compiler.compile_shader(n, d)
            except compiler.ShaderCompileError as e:
                errors = [x for x in str(e).splitlines() if "ERROR" in x][:3]
                print(_MARK + json.dumps({"error": [f"{n} {dict(d)}:"] + errors}))
                return
        print(_MARK + json.dumps({"compiled": len(builds)}))
        return
    from . import model_probe
    r = model_probe.probe(int(argv[1]), int(argv[2]), tuning=json.loads(argv[3]), stats=True, check=True,
                          representations=argv[4] if len(argv) > 4 else None)
    print(_MARK + json.dumps({"device": r["device"], "equal": r["equal_to_onnxruntime"],
                              "dispatches": [[row["variant"], row["frame_s"]] for row in r["rows"]],
                              "registers": [None if st is None else st.get("Register Count")
                                            for st in (r["statistics"] or [None] * len(r["rows"]))]}))


def table(results: dict) -> list:
    """Markdown: a row per variant, its dispatches' us (registers an invocation where reported),
    its frame, whether its output equals onnxruntime's."""
    done = {k: v for k, v in results.items() if "dispatches" in v}
    if not done:
        return [f"{k}: {v.get('error')}" for k, v in results.items()]
    names = [d[0] for d in next(iter(done.values()))["dispatches"]]
    out = ["| variant | " + " | ".join(names) + " | frame us | output equal to onnxruntime's |",
           "| --- |" + " ---: |" * (len(names) + 1) + " --- |"]
    for k, v in results.items():
        if "dispatches" not in v:
            out.append(f"| {k} | failed: {' '.join(v['error'])[:200]} |")
            continue
        cells = [f"{s * 1e6:,.1f}" + (f" ({reg})" if reg is not None else "")
                 for (_, s), reg in zip(v["dispatches"], v["registers"])]
        out.append(f"| {k} | " + " | ".join(cells) + f" | {sum(s for _, s in v['dispatches']) * 1e6:,.1f} | "
                   f"{'yes' if v['equal'] else 'no'} |")
    return out


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        _run_child(sys.argv[2:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recipe")
    ap.add_argument("--only", nargs="*", default=None, help="the recipe's variants to run")
    ap.add_argument("--height", type=int, default=540)
    ap.add_argument("--width", type=int, default=960)
    ap.add_argument("--out", default=None, help="folder for the copies (default: a new temporary one)")
    ap.add_argument("--prepare", action="store_true", help="write and compile the copies only")
    ap.add_argument("--timeout", type=int, default=600, help="seconds a variant's process may take")
    ap.add_argument("--machine-code", action="store_true", help="keep each variant's pipeline cache data")
    a = ap.parse_args()
    variants = runpy.run_path(a.recipe, init_globals={"NEVER": NEVER})["VARIANTS"]
    unknown = set(a.only or ()) - set(variants)
    if unknown:
        ap.error(f"the recipe has no variant {sorted(unknown)}")
    out = Path(a.out or tempfile.mkdtemp(prefix="dmlvk-ablation-"))
    out.mkdir(parents=True, exist_ok=True)
    copies, tunings = {}, {}
    for name, v in variants.items():         # every copy made first: a recipe's mistake costs no GPU time
        if a.only is None or name in a.only:
            try:
                edits, tunings[name] = parts(v)
                copies[name] = make_copy(name, edits, out)
            except ValueError as e:
                ap.error(f"{name}: {e}")
    results = {}
    for name, (folder, edited) in copies.items():
        cache = out / f"{name}.cache"
        compiled = _child(["compile"] + edited, folder, cache, a.timeout) if edited else {"compiled": 0}
        if "error" in compiled or a.prepare:
            results[name] = compiled
            print(f"{name}: {compiled}", flush=True)
            continue
        code = [str(out / ("".join(c if c.isalnum() else "_" for c in name) + ".code"))] if a.machine_code else []
        results[name] = _child(["probe", str(a.height), str(a.width), json.dumps(tunings[name])] + code, folder,
                               cache, a.timeout)
        print(f"{name}: {'done' if 'dispatches' in results[name] else results[name]['error']}", flush=True)
    if not a.prepare:
        device = next((v["device"] for v in results.values() if "device" in v), "no device")
        print(f"\n{device}, {a.height}x{a.width} batch 1, us a dispatch (registers an invocation)\n")
        print("\n".join(table(results)))
    return 1 if any("error" in v for v in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
