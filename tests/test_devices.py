"""GPUs asked for are GPUs got: a clear stop without one, and one GPU per job on a workstation."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mathneuro.devices import NoGPUError, claim_gpus, require_gpus
from mathneuro.models import load_model

needs_no_cuda = pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="checks the stop on a machine without a GPU"
)


@needs_no_cuda
def test_a_job_that_asks_for_a_gpu_and_finds_none_stops_before_loading_naming_model_node_and_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    with pytest.raises(NoGPUError) as stop:
        load_model("no/such-model", device="auto", gpus=1)  # never read: the check comes first
    message = str(stop.value)
    assert "no/such-model" in message and socket.gethostname() in message and "'3'" in message


@needs_no_cuda
def test_running_on_the_cpu_on_purpose_is_allowed():
    require_gpus(1, "cpu", "toy")  # device: cpu with a GPU reserved: no stop
    require_gpus(0, "auto", "toy")  # no GPU asked for


# A job claiming GPUs: it reports each event as a JSON line ({"waiting": ...} the first time it
# finds too few free GPUs and sleeps to poll again; {"ids": ...} once it holds them; {"timeout": ...}),
# then holds its GPUs until its stdin closes, as a job holds them until it ends.
CLAIM = """
import json, sys, time
from pathlib import Path
from mathneuro.devices import claim_gpus
sleep = time.sleep
def waiting(seconds, told=[]):
    if not told:
        told.append(True)
        print(json.dumps({"waiting": True}), flush=True)
    sleep(seconds)
time.sleep = waiting  # claim_gpus sleeps only when it found too few free GPUs
try:
    ids = claim_gpus(int(sys.argv[1]), count=int(sys.argv[2]), lock_dir=Path(sys.argv[3]), wait_s=float(sys.argv[4]), poll_s=0.05)
    print(json.dumps({"ids": ids, "visible": __import__("os").environ.get("CUDA_VISIBLE_DEVICES")}), flush=True)
    sys.stdin.read()
except TimeoutError as err:
    print(json.dumps({"timeout": str(err)}), flush=True)
"""


def claim(n: int, count: int, lock_dir: Path, wait_s: float) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    return subprocess.Popen([sys.executable, "-c", CLAIM, str(n), str(count), str(lock_dir), str(wait_s)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


def answer(process: subprocess.Popen) -> dict:
    return json.loads(process.stdout.readline())


def outcome(process: subprocess.Popen) -> dict:
    """The claim's result (its GPUs or its timeout), past any report of waiting."""
    while "waiting" in (reply := answer(process)):
        pass
    return reply


def release(process: subprocess.Popen) -> None:
    """End a claiming job: its locks go with it."""
    process.stdin.close()
    assert process.wait(timeout=30) == 0


def test_concurrent_jobs_on_a_workstation_each_get_their_own_gpus(tmp_path):
    """Four GPUs (a fake count): two 1-GPU jobs and a 2-GPU job share them out; a fourth job
    waits until one finishes, then gets the GPU it freed."""
    first, second, pair = claim(1, 4, tmp_path, 5), claim(1, 4, tmp_path, 5), claim(2, 4, tmp_path, 5)
    late = impatient = None
    try:
        got = [outcome(p) for p in (first, second, pair)]
        ids = [g["ids"] for g in got]
        assert sorted(i for group in ids for i in group) == [0, 1, 2, 3]
        assert all(g["visible"] == ",".join(map(str, g["ids"])) for g in got)
        impatient = claim(1, 4, tmp_path, 0)
        assert "no 1 free GPU" in outcome(impatient).get("timeout", "")
        late = claim(1, 4, tmp_path, 60)
        assert answer(late) == {"waiting": True}  # every GPU held: it found none free and waits
        release(first)
        freed = answer(late)  # answered only now: the GPU the first job held is free
        assert freed["ids"] == ids[0] and freed["visible"] == str(ids[0][0])
        assert impatient.wait(timeout=30) == 0
        for process in (second, pair, late):
            release(process)
    finally:
        for process in (first, second, pair, late, impatient):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def test_nothing_is_claimed_under_a_scheduler_or_without_gpus(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # Slurm set it
    assert claim_gpus(1, count=4, lock_dir=tmp_path) is None and os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert claim_gpus(1, count=0, lock_dir=tmp_path) is None and "CUDA_VISIBLE_DEVICES" not in os.environ
    assert claim_gpus(0, count=4, lock_dir=tmp_path) is None
    with pytest.raises(ValueError, match="asks for 5 GPUs but this machine has 4"):
        claim_gpus(5, count=4, lock_dir=tmp_path)
