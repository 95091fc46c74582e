"""Memory over a long run: N executions of a tiny DEPTH_TO_SPACE1, each with fresh dmlvk.Buffers,
printing the process's resident memory every N/10 executions (python tools/memory_soak.py [N])."""
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dmlvk  # noqa: E402
from dmlvk import DataType as DT, DepthSpaceOrder as O, TensorDesc as TD  # noqa: E402


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main(n: int) -> None:
    dev = dmlvk.Device()
    op = dev.create_operator(dmlvk.DepthToSpace1Desc(TD(DT.FLOAT32, (1, 4, 2, 2)), TD(DT.FLOAT32, (1, 1, 4, 4)),
                                                     2, O.DEPTH_COLUMN_ROW))
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    t0 = time.time()
    print(f"{dev.name}: {n} executions with fresh buffers")
    for i in range(n + 1):
        if i % (n // 10) == 0:
            print(f"{i:8d} executions  {rss_mib():8.1f} MiB resident  {time.time() - t0:6.1f} s", flush=True)
        src, dst = dev.upload(x), dev.buffer(64)
        op.execute([src], [dst])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
