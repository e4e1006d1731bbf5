"""Reruns by content, never by clock: what makes a finished job stale, and what does not.

Snakemake reruns a job when an input is newer than its outputs (unless the input is small enough
to compare by checksum, at most 1 MB, and never for a folder), and when its script is newer
than its outputs. So a ``touch``, a copy that does not keep the files' times, a fresh clone or
data provisioned again with the same content would rerun a finished study, and a new model
written into the same folder would rerun nothing. The workflow goes by content instead:

* **Files read from outside ``results/``** (data files and folders, a local model folder, a GGUF
  file, a user's task YAMLs) are inputs marked ``ancient`` (their times never rerun anything) and
  reach their jobs as a :func:`digest` of their content in ``params`` (a changed byte reruns
  exactly the jobs that read it, and what follows from them). A digest is a BLAKE2b hash of the
  bytes (of a folder: of every file's relative path and bytes, hidden files and
  ``.snakemake_timestamp`` left out), cached on disk by the file's path, size, modification time
  and inode (:class:`DigestCache`; ``$MATHNEURO_CACHE`` or ``~/.cache/mathneuro``), so a multi-GB
  model folder is read once after it changes, and only its ``stat`` after that.
* **A rule's script** reaches its jobs as :func:`script_digest` in ``params`` (its code, without
  comments and docstrings), and the workflow's profile (``profiles/default``) leaves out
  Snakemake's ``code`` trigger, which compares the script's time. The library code a script runs
  is not a trigger, as before: ``python -m mathneuro.provenance`` lists what it has changed under.
* **Files the workflow writes** keep Snakemake's rule that an input newer than its outputs reruns
  them (a job rerun in an earlier, interrupted run must rerun what follows). A study copied
  without its times would then rerun from scratch, so :func:`settle_times` first sets every
  finished output whose time is later than the end of the job that wrote it (Snakemake's record in
  ``.snakemake/metadata``) back to that end: the times a copy lost, and nothing a job wrote.
"""

from __future__ import annotations

import atexit
import glob
import hashlib
import json
import os
import re
from base64 import urlsafe_b64decode
from collections.abc import Iterable, Mapping
from pathlib import Path

DIGEST_SIZE = 20
SKIPPED = (".snakemake_timestamp",)  # Snakemake's own time stamp in an output folder


def _file_digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, lambda: hashlib.blake2b(digest_size=DIGEST_SIZE)).hexdigest()


class StoredCache:
    """A dict kept in one JSON file of the cache folder, loaded on first use and written once at
    exit; two processes writing it at once lose at most each other's new entries."""

    def __init__(self, name: str, folder: Path | None = None):
        from mathneuro.configs import cache_folder

        self.file = (folder or cache_folder()) / name
        self._entries: dict | None = None
        self._dirty = False

    def _load(self) -> dict:
        if self._entries is None:
            try:
                self._entries = json.loads(self.file.read_text())
            except (OSError, ValueError):
                self._entries = {}
            atexit.register(self.save)
        return self._entries

    def get(self, key: str, make):
        """The value stored under ``key``, or ``make()``'s, stored."""
        entries = self._load()
        if key not in entries:
            entries[key] = make()
            self._dirty = True
        return entries[key]

    def save(self) -> None:
        if not self._dirty or self._entries is None:
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            partial = self.file.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps(self._entries))
            os.replace(partial, self.file)
            self._dirty = False
        except OSError:
            pass  # an unwritable cache costs reading the files again, nothing else


class DigestCache(StoredCache):
    """File digests by (real path, size, modification time in ns, inode): a file whose ``stat``
    is unchanged is not read again."""

    def __init__(self, folder: Path | None = None):
        super().__init__("content-digests.json", folder)

    def file_digest(self, path: Path) -> str:
        info = path.stat()
        key = f"{path.resolve()}|{info.st_size}|{info.st_mtime_ns}|{info.st_ino}"
        return self.get(key, lambda: _file_digest(path))


CACHE = DigestCache()


def digest(path: str | os.PathLike[str], cache: DigestCache | None = None) -> str:
    """The content digest of a file, or of a folder (every file below it by relative path, in
    sorted order; hidden files and Snakemake's time stamps left out). FileNotFoundError for a
    path that does not exist."""
    cache = cache or CACHE
    path = Path(path)
    if path.is_file():
        return cache.file_digest(path)
    if not path.is_dir():
        raise FileNotFoundError(f"no file or folder {path}")
    whole = hashlib.blake2b(digest_size=DIGEST_SIZE)
    for root, folders, files in os.walk(path):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or name in SKIPPED:
                continue
            file = Path(root, name)
            whole.update(f"{file.relative_to(path).as_posix()}\0{cache.file_digest(file)}\0".encode())
    return whole.hexdigest()


def digests(paths: Iterable[str | os.PathLike[str]], cache: DigestCache | None = None,
            root: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """``{path: digest}`` of every path, in sorted order (a job's ``content`` param); a path below
    ``root`` (the workflow's own files: the shipped toy, the project's task files) named relative
    to it, so that a checkout at another path reruns nothing."""
    named = {_relative(p, root): p for p in set(map(str, paths))}
    return {name: digest(named[name], cache) for name in sorted(named)}


def _relative(path: str, root: str | os.PathLike[str] | None) -> str:
    if root is None or not Path(path).is_absolute() or not Path(path).is_relative_to(root):
        return path
    return Path(path).relative_to(root).as_posix()


def script_digest(path: str | os.PathLike[str]) -> str:
    """A script's code, without its comments, docstrings and formatting (mathneuro.provenance)."""
    from mathneuro.provenance import code_hash

    return code_hash(Path(path))


# What the study reads from the machine, by content -----------------------------------------------

CONTENT = "content"  # results/content/<digest>/: links to the files a study reads from the machine
WILDCARDS = re.compile(r"\{[^}]*\}|[*?[]")


def static_root(pattern: str) -> str:
    """The folder of a path or glob above its first wildcard (``*?[`` or a ``{name}`` placeholder);
    of a plain path, its parent folder."""
    parts = Path(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if WILDCARDS.search(part)), len(parts) - 1)
    return str(Path(*parts[:fixed])) if fixed else "."


def matches(pattern: str) -> list[str]:
    """The files and folders a path or glob names (a placeholder matches anything), sorted."""
    if not WILDCARDS.search(pattern):
        return [pattern] if os.path.exists(pattern) else []
    return sorted(glob.glob(re.sub(r"\{[^}]*\}", "*", pattern)))


def link(pattern: str, results: str = "results", cache: DigestCache | None = None, role: str | None = None) -> str:
    """``pattern`` (a file, folder or glob outside the workflow) as the same pattern inside
    ``results/content/<digest>/``, a folder named by the content of everything the pattern names
    and holding a symbolic link to each, at its path below the pattern's :func:`static_root`:
    the same bytes at another path give the same folder, a changed byte another. With ``role``,
    the folder is ``results/content/<role>`` whatever the content (a folder of task files, whose
    readers digest the files they use: :func:`named_link`). The links are made (or pointed at
    the new place) here; ``pattern`` itself when it names nothing."""
    root, found = static_root(pattern), matches(pattern)
    if not found:
        return pattern
    named = {os.path.relpath(f, root): f for f in found}
    if role is None:
        whole = hashlib.blake2b(digest_size=DIGEST_SIZE)
        for name in sorted(named):
            whole.update(f"{Path(name).as_posix()}\0{digest(named[name], cache)}\0".encode())
    folder = Path(results, CONTENT, role or whole.hexdigest())
    for name, target in named.items():
        _point(folder / name, os.path.abspath(target))
    return str(folder / os.path.relpath(pattern, root))


def linked(path: str | os.PathLike[str], results: str = "results") -> bool:
    """Whether ``path`` lies below ``results/content/``: a link to what the study reads from the
    machine (its name changes with its content, or its readers digest it: its time reruns nothing)."""
    return Path(path).is_relative_to(Path(results, CONTENT))


def named_link(path: str | os.PathLike[str], results: str = "results") -> bool:
    """Whether ``path`` lies below a link made with a ``role`` (its name says nothing of its
    content: its readers take its digest)."""
    parts = Path(path).parts
    base = Path(results).parts
    return (len(parts) > len(base) + 2 and parts[:len(base) + 1] == (*base, CONTENT)
            and not re.fullmatch(r"[0-9a-f]{%d}" % (2 * DIGEST_SIZE), parts[len(base) + 1]))


def _point(path: Path, target: str) -> None:
    """A symbolic link at ``path`` to ``target``, made or replaced at once (never half made)."""
    if path.is_symlink() and os.readlink(path) == target:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.unlink(missing_ok=True)
    os.symlink(target, partial)
    os.replace(partial, path)


# Snakemake's records of finished jobs ------------------------------------------------------------


def recorded_outputs(metadata: str | os.PathLike[str]) -> dict[str, Mapping]:
    """Output path -> Snakemake's record of the job that wrote it, from a file-based
    ``.snakemake/metadata`` folder (a record's file name is the output's path, URL-safe base64,
    split into folders of ``@``-prefixed parts where it is too long)."""
    root = Path(metadata)
    out: dict[str, Mapping] = {}
    if not root.is_dir():
        return out
    for folder, _, files in os.walk(root):
        parts = [p[1:] for p in Path(folder).relative_to(root).parts]
        for name in files:
            try:
                path = urlsafe_b64decode("".join([*parts, name])).decode()
                out[path] = json.loads(Path(folder, name).read_text())
            except (ValueError, OSError):
                continue  # not a record of this format
    return out


def settle_times(metadata: str | os.PathLike[str] = ".snakemake/metadata", slack: float = 1.0) -> list[str]:
    """Set each finished output whose modification time is more than ``slack`` seconds after the
    recorded end of the job that wrote it back to that end (an output folder: its
    ``.snakemake_timestamp``), and return their paths. Outputs of unfinished (incomplete) jobs,
    and missing ones, are left alone. A job writes its outputs before it ends, so a later time
    comes from a copy or a touch, never from the job."""
    settled = []
    for path, record in recorded_outputs(metadata).items():
        end = record.get("endtime")
        if end is None or record.get("incomplete"):
            continue
        target = Path(path)
        if target.is_dir():
            target = target / ".snakemake_timestamp"
        try:
            if target.stat().st_mtime > end + slack:
                os.utime(target, (end, end))
                settled.append(path)
        except OSError:
            continue
    return settled
