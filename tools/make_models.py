"""Write the quantized ONNX models of dmlvk_lab.onnx_models as .onnx files.

    python tools/make_models.py OUT_DIR

espcn_x2/x3/x4.onnx (float network quantized by onnxruntime's quantize_static), qconv_d2s.onnx,
s2d_stem.onnx, and torch_espcn_x2.onnx where PyTorch is installed."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import onnx  # noqa: E402

from dmlvk_lab import onnx_models as m  # noqa: E402


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[0]
    os.makedirs(out, exist_ok=True)
    made = {f"espcn_x{s}.onnx": m.quantize(m.espcn(s), m.calibration_frames()) for s in (2, 3, 4)}
    made["qconv_d2s.onnx"] = m.qconv_depth_to_space_chain()
    made["s2d_stem.onnx"] = m.space_to_depth_stem()
    torch_model = m.torch_espcn(2)
    if torch_model is not None:
        made["torch_espcn_x2.onnx"] = m.quantize(torch_model, m.calibration_frames())
    for name, model in made.items():
        path = os.path.join(out, name)
        onnx.save(model, path)
        print(f"{path}: {len(model.graph.node)} nodes ({', '.join(n.op_type for n in model.graph.node)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
