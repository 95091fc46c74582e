import time, sys, numpy as np
import dmlvk
from dmlvk import bench
dev = dmlvk.Device()
MiB = 1 << 20
t_start = time.time()
def rate(n, bufs, reps=10):
    t = bench.copy_seconds(dev, n, reps, bufs)
    return 2 * n / t["median_s"] / 1e9
# 1) fresh 1 GiB first
a, b = dev.buffer(1024 * MiB), dev.buffer(1024 * MiB)
print(f"{time.time()-t_start:5.1f}s first 1GiB copy {rate(1024*MiB,(a,b)):.0f}", flush=True)
print(f"{time.time()-t_start:5.1f}s 64MiB inside 1GiB bufs {rate(64*MiB,(a,b)):.0f}", flush=True)
del a, b
for pad in (0, 4096, 65536, 3 * MiB):
    a = dev.buffer(1024 * MiB + pad); b = dev.buffer(1024 * MiB + pad)
    print(f"{time.time()-t_start:5.1f}s 1GiB pad {pad}: {rate(1024*MiB,(a,b)):.0f}", flush=True)
    del a, b
for n in (64, 256, 512, 768):
    a = dev.buffer(n * MiB); b = dev.buffer(n * MiB)
    print(f"{time.time()-t_start:5.1f}s {n} MiB: {rate(n*MiB,(a,b)):.0f}", flush=True)
    del a, b
# 2) sustained: 64 MiB copies for 40 s
a, b = dev.buffer(64 * MiB), dev.buffer(64 * MiB)
while time.time() - t_start < 60:
    print(f"{time.time()-t_start:5.1f}s sustained 64MiB {rate(64*MiB,(a,b),50):.0f}", flush=True)
    time.sleep(2)
