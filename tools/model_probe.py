import numpy as np, sys
sys.path.insert(0, ".")
from dmlvk import Device, onnx_models as M
from dmlvk.onnx import InferenceSession
from dmlvk.bench import Timer
dev = Device()
s = InferenceSession(M.quantize(M.espcn(2), M.calibration_frames()), device=dev)
x = np.concatenate(M.calibration_frames(1, 540, 960, seed=3))
s.run(None, {"x": x})
plan = next(iter(s._plans.values()))
prog, _, _, _, disp = plan._programs[1]
timer = Timer(dev, 10, 0.3)
for k, bufs in disp:
    t = timer(lambda n: dev.time([(k, bufs)], n))["median_s"]
    print(f"{k.shader:28s} count {k.count:10d} spec {k.spec} {t*1e6:8.1f} us")
