"""Which GPUs a model job uses: the ones it asked for, or a clear stop.

* ``require_gpus``: a job whose model asks for GPUs (``gpus > 0``) and does not run on the CPU on
  purpose (``device: cpu``) stops before loading anything when no CUDA device is visible, naming
  the model, the node and ``CUDA_VISIBLE_DEVICES``; a misconfigured node would otherwise run an
  8B evaluation on its CPUs for days.
* ``claim_gpus``: on a workstation (no Slurm), concurrent jobs would all land on ``cuda:0``.
  A job claims ``n`` of the machine's GPUs by locking one file per GPU (``fcntl``, released when
  the process ends, even when it is killed) and sets ``CUDA_VISIBLE_DEVICES`` to them before CUDA
  starts. Under Slurm, which sets ``CUDA_VISIBLE_DEVICES`` itself, or when it is already set,
  nothing is claimed.
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path


class NoGPUError(RuntimeError):
    pass


def require_gpus(gpus: int, device: str, model: str) -> None:
    """Raise ``NoGPUError`` if the job asked for GPUs, may use one, and sees none."""
    import torch

    if gpus > 0 and device != "cpu" and not torch.cuda.is_available():
        raise NoGPUError(
            f"model {model!r} asks for {gpus} GPU(s) but node {socket.gethostname()} shows no CUDA device "
            f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')!r}); "
            "set the model's device: cpu to run it on the CPU on purpose"
        )


def visible_gpu_count() -> int:
    """GPUs on this machine, from nvidia-smi (without starting CUDA in this process); 0 if none."""
    try:
        listed = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in listed.stdout.splitlines()) if listed.returncode == 0 else 0


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"mathneuro-gpus-{os.getuid()}"


def claim_gpus(n: int, *, count: int | None = None, lock_dir: Path | None = None, wait_s: float = 3600,
               poll_s: float = 1.0) -> list[int] | None:
    """Claim ``n`` GPUs of ``count`` (default: ``visible_gpu_count()``) and expose only them.

    Returns the claimed indices (also set as ``CUDA_VISIBLE_DEVICES``), or None when nothing is
    claimed: ``n`` is 0, ``CUDA_VISIBLE_DEVICES`` is already set (Slurm sets it), or the machine
    has no GPU. Waits up to ``wait_s`` for others to free enough GPUs, then raises TimeoutError.
    The locks live as long as this process (file descriptors kept open on purpose).
    """
    if n <= 0 or os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return None
    count = visible_gpu_count() if count is None else count
    if count == 0:
        return None
    if n > count:
        raise ValueError(f"a job asks for {n} GPUs but this machine has {count}")
    lock_dir = lock_dir or default_lock_dir()
    lock_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    while True:
        held = []
        for index in range(count):
            handle = open(lock_dir / f"gpu{index}.lock", "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            held.append((index, handle))
            if len(held) == n:
                _HELD.extend(handle for _, handle in held)
                ids = [index for index, _ in held]
                os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, ids))
                return ids
        for _, handle in held:  # not enough free: give back what we took, wait, retry
            handle.close()
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {n} free GPU(s) of {count} within {wait_s:.0f} s (locks in {lock_dir})")
        time.sleep(poll_s)


_HELD: list = []  # open lock files: the claim lasts as long as the process
