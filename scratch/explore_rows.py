import sys, itertools, numpy as np
import dmlvk
from dmlvk import bench
from dmlvk.ops import depth_space as dsm
from dmlvk.runtime.device import Kernel
dev = dmlvk.Device()
MiB = 1 << 20
variants = [(256, 1), (256, 2), (256, 4), (128, 4), (512, 2), (1024, 1)]
for nbytes in (64 * MiB, 1024 * MiB):
    src, dst = dev.buffer(nbytes), dev.buffer(nbytes)
    line = []
    for local, ch in variants:
        bench.COPY_LOCAL, bench.COPY_CHUNKS = local, ch
        t = bench.copy_seconds(dev, nbytes, 10, (src, dst))
        line.append(f"{2*nbytes/t['median_s']/1e9:6.0f}")
    print(f"copy {nbytes//MiB:5d} MiB  " + " ".join(line), flush=True)
    cases = [c for c in bench.depth_space_cases([nbytes], extra=nbytes == 64 * MiB)]
    for case in cases:
        desc = bench.depth_space_desc(case)
        line = []
        for local, ch in variants:
            dsm.ROWS_LOCAL, dsm.ROWS_CHUNKS = local, ch
            op = dev.create_operator(desc)
            op.time([src], [dst], 2)
            t = np.median(op.time([src], [dst], 10))
            line.append(f"{2*desc.input_tensor.total_bytes/t/1e9:6.0f}")
        print(f"{case[0]:>18} {'d2s' if case[1] else 's2d'} eb{case[2].bits//8} B{case[3]} {case[4].name[:3]} {desc.kernel().shader[-4:]} " + " ".join(line), flush=True)
    del src, dst
