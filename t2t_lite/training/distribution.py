"""--strategy: which tf.distribute strategy a run uses, and who writes its files."""

import json
import os

import tensorflow as tf

from t2t_lite.training.config import STRATEGIES


def make_strategy(name: str, devices: list[str] | None = None) -> tf.distribute.Strategy:
    """default: no distribution; one_device: devices[0] (default: the first GPU,
    else the CPU); mirrored: the named devices (default: every local GPU, else
    the CPU); multi_worker: MultiWorkerMirroredStrategy configured by TF_CONFIG.
    """
    devices = list(devices or [])
    if devices:
        check_devices(name, devices)
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(devices[0] if devices else _first(gpus))
    if name == "mirrored":
        return tf.distribute.MirroredStrategy(devices or None)
    if name == "multi_worker":
        check_tf_config()
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise ValueError(f"--strategy={name!r} is not one of {', '.join(STRATEGIES)}")


def check_devices(name: str, devices: list[str]) -> None:
    """--devices names devices this machine has, as many as the strategy takes."""
    if name in ("default", "multi_worker"):
        raise ValueError(f"--devices is for one_device and mirrored, not --strategy={name}")
    if name == "one_device" and len(devices) != 1:
        raise ValueError(f"--strategy=one_device runs on one device; --devices names {devices}")
    local = {_kind_and_index(d.name) for d in tf.config.list_logical_devices()}
    for device in devices:
        try:
            wanted = _kind_and_index(device)
        except ValueError:
            raise ValueError(f"--devices: {device!r} is not a device name like /gpu:0") from None
        if wanted not in local:
            have = ", ".join(sorted(f"/{kind.lower()}:{index}" for kind, index in local))
            raise ValueError(f"--devices: this machine has no {device!r}; it has {have}")


def _kind_and_index(name: str) -> tuple[str, int]:
    """ "/gpu:3", "GPU:3" or a full device name -> ("GPU", 3)."""
    spec = tf.DeviceSpec.from_string(name if "/" in name else f"/{name}")
    if not spec.device_type:
        raise ValueError(name)
    return spec.device_type.upper(), spec.device_index or 0


def _first(gpus: list) -> str:
    return gpus[0].name if gpus else "/cpu:0"


def check_tf_config() -> dict:
    """TF_CONFIG as multi_worker needs it: a cluster with workers and this task."""
    raw = os.environ.get("TF_CONFIG", "")
    if not raw:
        raise ValueError(
            "--strategy=multi_worker needs the TF_CONFIG environment variable, e.g. "
            '{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
            '"task": {"type": "worker", "index": 0}}'
        )
    try:
        config = json.loads(raw)
        workers = config["cluster"]["worker"]
        task_type, index = config["task"]["type"], int(config["task"]["index"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(
            f"TF_CONFIG is not valid ({err!r}): it needs cluster.worker and task.type/index"
        ) from None
    if task_type == "worker" and not 0 <= index < len(workers):
        raise ValueError(f"TF_CONFIG task.index={index} but cluster.worker has {len(workers)}")
    return config


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
    """Whether decisions must be agreed with other processes (a collective)."""
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True where checkpoints and summaries are written: the chief, or worker 0."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    if resolver.task_type == "chief":
        return True
    return not has_chief and resolver.task_type == "worker" and resolver.task_id == 0


def worker_dir(output_dir: str, strategy: tf.distribute.Strategy) -> str:
    """Where this worker saves: output_dir on the chief, a scratch dir elsewhere.

    Every worker must take part in a save (it is a collective operation);
    the others write beside the run and their copies are removed.
    """
    if is_chief(strategy):
        return output_dir
    resolver = strategy.cluster_resolver
    return os.path.join(output_dir, f".worker-{resolver.task_type}-{resolver.task_id}")
