"""Where a name in the config points: a path on this machine, or a Hugging Face hub repository,
and whether an offline machine has that repository in its cache.

``snakemake prefetch`` fills the cache (``huggingface_hub``'s, ``$HF_HUB_CACHE``) on a machine
with internet; with ``offline: true`` every model job reads that cache only. A repository the cache
does not hold would fail in the job, after minutes of start-up on a cluster; :func:`cache_problem`
says so before any job, naming the repository and the cache folder it looked in.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

OFFLINE_FLAGS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")  # "name" or "org/name"


def is_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")


def go_offline() -> None:
    """Set the Hugging Face offline flags for this process: read the cache, never the network."""
    for flag in OFFLINE_FLAGS:
        os.environ[flag] = "1"


def hub_cache() -> Path:
    """The hub cache folder the Hugging Face libraries read (``$HF_HUB_CACHE``, ``$HF_HOME/hub``...)."""
    from huggingface_hub import constants

    return Path(os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE)


def is_repo_id(name: str) -> bool:
    """``name`` can name a hub repository (``org/name`` or ``name``): not a path that starts with
    ``/``, ``.`` or ``~`` or has more than one part."""
    return bool(_REPO_ID.match(name))


def cached(repo_id: str, *, repo_type: str = "model", revision: str | None = None, filename: str | None = None) -> bool:
    """The cache holds ``filename`` of the repository at ``revision`` (default: what ``main``
    resolved to when it was fetched); without ``filename``, any snapshot of it."""
    from huggingface_hub import try_to_load_from_cache

    cache = hub_cache()
    if filename is not None:
        found = try_to_load_from_cache(repo_id, filename, cache_dir=cache, revision=revision, repo_type=repo_type)
        return isinstance(found, str)
    folder = cache / f"{repo_type}s--{repo_id.replace('/', '--')}" / "snapshots"
    if revision is not None and (folder / revision).is_dir():
        return True
    ref = cache / f"{repo_type}s--{repo_id.replace('/', '--')}" / "refs" / (revision or "main")
    try:
        return (folder / ref.read_text().strip()).is_dir()
    except OSError:
        return False


def cache_problem(key: str, repo_id: str, *, repo_type: str = "model", revision: str | None = None,
                  filename: str | None = None) -> str | None:
    """Why an offline job could not read hub repository ``repo_id`` (None if the cache holds it):
    the message names the config key, the repository and the cache folder, and how to fill it."""
    if cached(repo_id, repo_type=repo_type, revision=revision, filename=filename):
        return None
    what = f"{repo_type} {repo_id!r}" + (f" (file {filename})" if filename else "") + (
        f" at revision {revision}" if revision else "")
    here = Path(repo_id).resolve()
    return (f"{key}: {what} is not in the Hugging Face cache {hub_cache()}, and there is no folder {here}; "
            "with offline: true, fetch it first on a machine with internet: "
            "snakemake prefetch --configfile <this config> (docs/real-models.md: Machines without the hub)")
