import os, numpy as np, dmlvk, kp
x = np.arange(64, dtype=np.float32).reshape(1, 16, 2, 2)
dmlvk.depth_to_space(x, 2)
pid = os.fork()
if pid == 0:
    try:
        m = kp.Manager(0)
        print("child: new kp.Manager ok", flush=True)
        t = m.tensor_t(np.zeros(4, np.uint32)); s = m.sequence(); s.eval(kp.OpTensorSyncDevice([t]))
        print("child: eval ok", flush=True)
    except Exception as e:
        print("child exception", e, flush=True)
    os._exit(0)
_, st = os.waitpid(pid, 0)
print("child status", os.waitstatus_to_exitcode(st))
