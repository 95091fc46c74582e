"""Where a tiny submission's time goes on a device: kp-level submit and wait split, fence poll
lengths, a barrier-only sequence against a one-dispatch one. Prints one line per probe."""
import sys
import time

import numpy as np

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.abspath(__file__))))
import dmlvk  # noqa: E402
from dmlvk import DataType as DT, DepthSpaceOrder as O, TensorDesc as TD  # noqa: E402
from dmlvk.runtime.commands import Program  # noqa: E402
from dmlvk.runtime.device import set_fence_spin_us  # noqa: E402
from dmlvk.runtime import kompute as kp  # noqa: E402


def best_median(fn, rounds=5, calls=300):
    out = []
    for _ in range(rounds):
        for _ in range(20):
            fn()
        ts = []
        for _ in range(calls):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        out.append(np.median(ts) * 1e6)
    return min(out)


dev = dmlvk.Device()
op = dev.create_operator(dmlvk.DepthToSpace1Desc(TD(DT.FLOAT32, (1, 4, 2, 2)), TD(DT.FLOAT32, (1, 1, 4, 4)), 2,
                                                 O.DEPTH_COLUMN_ROW))
a, b = dev.upload(np.arange(16, dtype=np.float32)), dev.buffer(64)
one = Program(dev, [(op.kernels[0], (a, b))], barriers=False)
barrier_only = dev.manager.sequence()
barrier_only.record(kp.OpPipelineBarrier(0x40, 0x20, 0x800, 0x800))
for spin in (0, 50, 200, 1000):
    set_fence_spin_us(spin)
    print(f"spin {spin:4d} us: one dispatch {best_median(one.sequence.eval):6.1f} us, "
          f"barrier only {best_median(barrier_only.eval):6.1f} us")
set_fence_spin_us(None)
sub, wait = [], []
for _ in range(2000):
    t0 = time.perf_counter()
    one.sequence.eval_async()
    t1 = time.perf_counter()
    one.sequence.eval_await()
    t2 = time.perf_counter()
    sub.append(t1 - t0)
    wait.append(t2 - t1)
print(f"submit {np.median(sub) * 1e6:.1f} us, wait {np.median(wait) * 1e6:.1f} us (medians)")
