"""Running one model over many Vulkan devices or machines with an existing engine: Ray Data.

dmlvk schedules nothing itself. `ModelActor` is a Ray Data callable class: each actor holds one
`dmlvk.onnx.InferenceSession` on one Vulkan device, and `Dataset.map_batches` spreads the batches
over the actors (one per device; several machines where Ray's cluster spans them):

    import ray, dmlvk.scale
    ds = ray.data.from_numpy(frames)                          # a column "data" of (C, H, W) frames
    out = ds.map_batches(dmlvk.scale.ModelActor, fn_constructor_kwargs={"model": "espcn.onnx"},
                         concurrency=2, batch_size=8, batch_format="numpy",
                         num_gpus=1)                           # one GPU an actor; leave out on CPUs
    for batch in out.iter_batches(batch_format="numpy"): ...  # column "y": the model's output

`pip install dmlvk[ray]` installs Ray Data. Ray sets CUDA_VISIBLE_DEVICES for an actor that asks
for a GPU; `device="ray"` (the default) opens the Vulkan device of the same index among the
machine's devices (Vulkan and CUDA list NVIDIA GPUs in the same PCI order), and device 0 where the
actor has no GPU (lavapipe, say). Give `device=N` to choose it yourself."""
from __future__ import annotations

import os
from typing import Optional, Union

import numpy as np


def _ray_device_index() -> int:
    """The Vulkan device index for this Ray actor: its first assigned GPU, else 0."""
    try:
        import ray
        ids = ray.get_runtime_context().get_accelerator_ids().get("GPU") or []
    except Exception:       # not in a Ray worker
        ids = []
    if not ids:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
        ids = [v for v in visible if v.strip().isdigit()]
    return int(ids[0]) if ids else 0


class ModelActor:
    """One InferenceSession on one device, for `Dataset.map_batches` (batch_format="numpy").

    model: an ONNX model (path, bytes or ModelProto) that dmlvk.onnx runs; input_column: the
    batch's column fed to the model's one input (stacked along axis 0); output_column: where its
    first output (or `output`) goes; device: "ray" (the actor's GPU, see the module), or an index."""

    def __init__(self, model, input_column: str = "data", output_column: str = "y", output: Optional[str] = None,
                 device: Union[str, int] = "ray", host_quantization: bool = False):
        from .onnx import InferenceSession
        from .runtime.device import Device
        index = _ray_device_index() if device == "ray" else device
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"device must be 'ray' or a device index, got {device!r}")
        self.device = Device(index)
        self.session = InferenceSession(model, device=self.device, host_quantization=host_quantization)
        inputs = self.session.get_inputs()
        if len(inputs) != 1:
            raise ValueError(f"ModelActor runs one-input models; this one has {[i.name for i in inputs]}")
        self.input = inputs[0].name
        self.output = output or self.session.get_outputs()[0].name
        self.input_column, self.output_column = input_column, output_column

    def __call__(self, batch: dict) -> dict:
        if self.input_column not in batch:
            raise KeyError(f"the batch has no column {self.input_column!r}; its columns: {sorted(batch)}")
        x = np.ascontiguousarray(np.stack(list(batch[self.input_column])) if batch[self.input_column].dtype == object
                                 else batch[self.input_column])
        (y,) = self.session.run([self.output], {self.input: x})
        return {self.output_column: y}
