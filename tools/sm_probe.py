"""Two probes of what one SM of a GPU gives the convolution kernels (the shaders in tools/probes/):

- residency: how many workgroups of 256 invocations an SM holds at once for a given shared-memory
  size, from the time of a latency-bound kernel (tools/probes/sm_resident.comp) at 1-8 workgroups
  an SM: where the time steps up, workgroups no longer fit side by side;
- halo taps: the operations a second of conv.coopmat.halo's inner loop (tools/probes/halo_taps.comp:
  A and B fragments from shared memory as the kernel lays them out), against the same loop with A,
  then both, kept in registers (the model benchmark's int8 peak).

    python tools/sm_probe.py [--sms 132] [--out FILE.json] [--prepare]

--prepare compiles the probes only (a machine without the GPU). Cooperative matrices (16 x 16 x 32
int8, subgroups of 32) are needed for the second probe; without them it is left out.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from dmlvk_lab.shader_ablation import make_copy  # noqa: E402

PROBES = ROOT / "tools" / "probes"
SHARED_KIB = (1, 16, 24, 32, 40, 46)
PER_SM = (1, 2, 3, 4, 8)
HALO_STEPS = 64
HALO_WORKGROUPS_AN_SM = 8
HALO_TAPS_SHARED = 16 * (10 * 34 * 5 + 32 * 37)      # halo_taps.comp's window and filter rows
HALO_MODES = {0: "A and B from shared memory", 1: "A in registers, B from shared memory", 2: "both in registers"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sms", type=int, default=132, help="the GPU's SMs (workgroup counts are multiples of it)")
    ap.add_argument("--out", help="write the figures as JSON here too")
    ap.add_argument("--prepare", action="store_true", help="compile the probes only")
    a = ap.parse_args(argv)
    # a copy of dmlvk's shaders with the probes beside them (DMLVK_SHADER_DIR), for this run only
    with tempfile.TemporaryDirectory(prefix="sm_probe_") as tmp:
        folder, _ = make_copy("shaders", [], Path(tmp))
        for probe in PROBES.glob("*.comp"):
            shutil.copy(probe, folder)
        os.environ["DMLVK_SHADER_DIR"] = str(folder)
        return probe_device(a)


def probe_device(a) -> int:
    """The probes (compiled only with --prepare) on the default device, shaders from DMLVK_SHADER_DIR."""
    sys.path.insert(0, str(ROOT))
    from dmlvk.runtime import compiler
    if a.prepare:
        for name in ("sm_resident", "halo_taps"):
            print(f"{name}: {len(compiler.compile_shader(name))} bytes of SPIR-V")
        return 0
    import numpy as np
    import dmlvk
    from dmlvk.runtime.commands import time as time_dispatches
    from dmlvk.runtime.kernel import Kernel
    dev = dmlvk.default_device()
    operands = dev.upload(np.random.default_rng(0).integers(0, 2 ** 31, 256, dtype=np.uint32))
    # the residency probe's one int an invocation, the taps probe's 16 x 16 ints a subgroup
    result = dev.buffer(max(a.sms * max(PER_SM) * 256, a.sms * HALO_WORKGROUPS_AN_SM * 8 * 256) * 4)
    from dmlvk_lab.bench_layers import own_int8_matrices
    out = {"device": str(dev), "residency_us": {}, "halo_taps_tops": {}}
    print(f"{out['device']}: latency-bound kernel, us, at workgroups an SM (256 invocations each)")
    for kib in SHARED_KIB:
        if not dev.capabilities.fits_shared(kib * 1024):
            print(f"  {kib:3d} KiB of shared memory: over the device's maxComputeSharedMemorySize")
            continue
        row = {}
        for k in PER_SM:
            kernel = Kernel(shader="sm_resident", spec=(2048, kib * 1024 // 16), push=(), count=a.sms * k * 256,
                            slots=(0, 1), local_size=256, variant="residency probe")
            row[k] = float(np.median(time_dispatches(dev, [(kernel, (operands, result))], 10))) * 1e6
        out["residency_us"][kib] = row
        print(f"  {kib:3d} KiB of shared memory: " + "  ".join(f"{k}: {t:.1f}" for k, t in row.items()), flush=True)
    if not own_int8_matrices(dev.capabilities) or not dev.capabilities.fits_shared(HALO_TAPS_SHARED):
        print("halo taps: left out (no 16 x 16 x 32 int8 cooperative matrices of the device's own, or too "
              "little shared memory a workgroup)")
    else:
        workgroups = a.sms * HALO_WORKGROUPS_AN_SM
        ops = workgroups * 8 * HALO_STEPS * 9 * 2 * 4 * 2 * 16 * 16 * 32
        for mode, what in HALO_MODES.items():
            kernel = Kernel(shader="halo_taps", spec=(HALO_STEPS, mode), push=(), count=workgroups * 256,
                            slots=(0, 1), local_size=256, variant="halo taps probe")
            t = float(np.median(time_dispatches(dev, [(kernel, (operands, result))], 20)))
            out["halo_taps_tops"][what] = ops / t / 1e12
            print(f"halo taps, {what}: {ops / t / 1e12:.0f} TOPS", flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
