"""Host copies of frames into and out of staging: from PARALLEL_COPY_BYTES on, in pieces of at least
COPY_PIECE bytes on a pool of threads (numpy copies without the GIL), so that the page faults of a
fresh output array and the copy itself (a frame's float32 staging is memory the device maps) use
several cores."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

PARALLEL_COPY_BYTES = 1 << 20
COPY_PIECE = 256 << 10


class CopyPool:
    """The copy threads (min(8, CPUs)), made at first use and kept."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pool = None

    def executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1),
                                                thread_name_prefix="dmlvk-copy")
            return self._pool

    def copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        """dst[...] = src for C-contiguous arrays of one size."""
        threads = min(8, os.cpu_count() or 1, src.nbytes // COPY_PIECE)
        if src.nbytes < PARALLEL_COPY_BYTES or threads < 2:
            np.copyto(dst, src)
            return
        d, s = dst.reshape(-1).view(np.uint8), src.reshape(-1).view(np.uint8)
        bounds = [len(s) * i // threads // 4096 * 4096 for i in range(threads)] + [len(s)]
        pool = self.executor()
        done = [pool.submit(np.copyto, d[a:b], s[a:b]) for a, b in zip(bounds[1:-1], bounds[2:])]
        np.copyto(d[:bounds[1]], s[:bounds[1]])          # the first piece on this thread
        for f in done:
            f.result()


POOL = CopyPool()          # one for the process: every plan's copies share its threads
