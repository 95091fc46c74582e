"""dmlvk.scale with Ray Data: two actors, each a session on its own device handle, map the batches
of a dataset through the model; every frame's output equals a session's run on it."""
import os

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the [ray] extra (Ray Data) is not installed")

import dmlvk  # noqa: E402
import dmlvk.scale  # noqa: E402
from dmlvk_lab import onnx_models as models  # noqa: E402

pytestmark = pytest.mark.host      # Ray's scheduling


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             object_store_memory=256 << 20)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True     # frames in order
    ctx.wait_for_min_actors_s = 120                 # both actors ready before the first block goes out
    yield
    ray.shutdown()


def test_two_actors_map_a_dataset_through_the_model(ray_cluster, tmp_path):
    import onnx
    path = tmp_path / "espcn.onnx"
    onnx.save(models.quantize(models.espcn(2), models.calibration_frames()), path)
    frames = np.concatenate(models.calibration_frames(10, 12, 16, seed=5))         # (10, 1, 12, 16)
    ds = ray.data.from_numpy([frames[i:i + 2] for i in range(0, 10, 2)])          # 5 blocks
    class Tagged(dmlvk.scale.ModelActor):         # each output row tagged with its actor's process
        def __call__(self, batch):
            out = super().__call__(batch)
            out["pid"] = np.full(len(out["y"]), os.getpid())
            return out

    # Two actors, one block in flight each: with both ready, the blocks go to both.
    pool = ray.data.ActorPoolStrategy(size=2, max_tasks_in_flight_per_actor=1)
    out = ds.map_batches(Tagged, fn_constructor_kwargs={"model": str(path)}, compute=pool, batch_size=2,
                         batch_format="numpy", num_cpus=1)
    batches = list(out.iter_batches(batch_format="numpy", batch_size=None))
    got = np.concatenate([b["y"] for b in batches])
    session = dmlvk.onnx.InferenceSession(str(path))
    want = np.concatenate([session.run(None, {"x": f[None]})[0] for f in frames])
    assert got.shape == (10, 1, 24, 32) and np.array_equal(got, want)
    pids = {int(p) for b in batches for p in b["pid"]}
    assert len(pids) == 2 and os.getpid() not in pids, pids     # two actors, a session each


def test_actor_arguments(tmp_path):
    import onnx
    path = tmp_path / "espcn.onnx"
    onnx.save(models.quantize(models.espcn(2), models.calibration_frames()), path)
    actor = dmlvk.scale.ModelActor(str(path), input_column="frames", device=0)
    x = np.concatenate(models.calibration_frames(2, 8, 8, seed=1))
    assert actor({"frames": x})["y"].shape == (2, 1, 16, 16)
    with pytest.raises(KeyError, match="no column 'frames'"):
        actor({"data": x})
    with pytest.raises(TypeError, match="device must be"):
        dmlvk.scale.ModelActor(str(path), device="gpu0")
