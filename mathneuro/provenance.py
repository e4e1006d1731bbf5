"""Which code made an output, and which outputs the code has since changed under.

Every workflow output records a *code fingerprint*: the project version and, for each
``mathneuro`` module the job had imported when it wrote the output, a hash of that module's
code. The hash is taken over the module's syntax tree without docstrings, so editing comments,
docstrings or formatting changes no fingerprint; changing what the code does does.

``stale(results)`` compares every output's fingerprint with the checkout's and lists the outputs
made by code that has changed since. They are not rerun by themselves (a fingerprint is not a
rule parameter): a comment fixed in ``collect.py`` must not rerun days of GPU evaluations, and
what a changed module means for a result is for the researcher to judge. To rerun exactly the
listed outputs and what depends on them::

    snakemake --forcerun $(python -m mathneuro.provenance results)

Where the fingerprint lives: safetensors metadata (statistics, masks: key ``mathneuro.code``),
Parquet schema metadata (tables: key ``mathneuro.code``), a ``mathneuro_code`` entry in JSON files.

A fingerprint also names the versions that made the output (:func:`versions`): the project's code
(the commit of a git checkout, ``+modified`` when the checkout's code differs from it; else the
package version and a digest of its modules) and the installed torch, transformers, lm-eval and
Snakemake. The study's tables carry them as columns (:data:`VERSION_COLUMNS`, one value per row,
read from the file of the job that made the row: an edit table's, its evaluation's),
``mathneuro.summary`` says when a study's rows were made by different versions, and :func:`stale_rows` (``--rows``) counts a table's rows made by code
other than the checkout's.
"""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

KEY = "mathneuro.code"
PACKAGE = Path(__file__).resolve().parent
LIBRARIES = {"torch": "torch", "transformers": "transformers", "lm_eval": "lm_eval", "snakemake": "snakemake"}
VERSION_COLUMNS = ["code", *LIBRARIES]  # a table row's versions: column -> the fingerprint's value
# What the code version covers in a git checkout: the library, the workflow and its scripts.
CODE_PATHS = ("mathneuro", "workflow_scripts", "rules", "Snakefile", "pyproject.toml")


def project_version() -> str:
    try:
        return version("mathneuro")
    except PackageNotFoundError:
        return "unknown"


def code_hash(path: str | Path) -> str:
    """A hash of a module's code that ignores docstrings, comments and formatting."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree, annotate_fields=False).encode()).hexdigest()[:16]


module_hash = cache(code_hash)  # an imported module's code does not change within a process


def _git(root: Path, *args: str) -> str | None:
    """``git -C root args``'s output, or None where git or the checkout is missing."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@cache
def code_version(root: Path = PACKAGE.parent) -> str:
    """The project's code version: the commit of the git checkout ``root`` (``+modified`` when
    the code under :data:`CODE_PATHS` differs from it), else the package version and a digest of
    every module's code (an installed package)."""
    if (root / ".git").exists() and (commit := _git(root, "rev-parse", "--short=12", "HEAD")):
        changed = _git(root, "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
        return f"{commit}+modified" if changed else commit
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(f"{path.relative_to(PACKAGE)}:{module_hash(path)}".encode())
    return f"{project_version()}+{digest.hexdigest()[:12]}"


def library_versions() -> dict[str, str | None]:
    """The installed version of each library of :data:`LIBRARIES` (None: not installed)."""
    found = {}
    for column, distribution in LIBRARIES.items():
        try:
            found[column] = version(distribution)
        except PackageNotFoundError:
            found[column] = None
    return found


def fingerprint() -> dict:
    """The versions that made an output (:func:`code_version`, :func:`library_versions`) and the
    code hash of every mathneuro module this process has imported."""
    modules = {}
    for name, module in sorted(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (name == "mathneuro" or name.startswith("mathneuro.")) and file and Path(file).suffix == ".py":
            modules[name] = module_hash(file)
    return {"version": project_version(), "code": code_version(), "libraries": library_versions(),
            "modules": modules}


def versions(recorded: dict | None) -> dict[str, str | None]:
    """A recorded fingerprint's versions as :data:`VERSION_COLUMNS` (None where it names none: an
    output made before fingerprints held them)."""
    recorded = recorded or {}
    return {"code": recorded.get("code"), **{c: (recorded.get("libraries") or {}).get(c) for c in LIBRARIES}}


def current_hash(name: str) -> str | None:
    """The checkout's hash of module ``name`` (None if it no longer exists)."""
    relative = name.split(".")[1:] or ["__init__"]
    path = PACKAGE.joinpath(*relative).with_suffix(".py")
    if not path.is_file():
        path = PACKAGE.joinpath(*relative, "__init__.py")
    return module_hash(path) if path.is_file() else None


def changed_modules(recorded: dict) -> list[str]:
    """The modules whose code differs between a recorded fingerprint and the checkout."""
    return sorted(name for name, digest in recorded.get("modules", {}).items() if current_hash(name) != digest)


def read_fingerprint(path: str | Path) -> dict | None:
    """The fingerprint an output records, or None (not a stamped output, or made before stamps)."""
    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as handle:
            raw = (handle.metadata() or {}).get(KEY)
    elif path.suffix == ".parquet":
        import pyarrow.parquet as pq

        raw = (pq.read_schema(path).metadata or {}).get(KEY.encode())
    elif path.suffix == ".json":
        raw = json.loads(path.read_text()).get("mathneuro_code")
        return raw if isinstance(raw, dict) else None
    else:
        return None
    return json.loads(raw) if raw else None


def write_parquet(frame, path: str | Path) -> None:
    """``frame.to_parquet(path)`` with this process's fingerprint in the schema metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), KEY.encode(): json.dumps(fingerprint()).encode()})
    pq.write_table(table, str(path))


def outputs(results: str | Path) -> Iterator[Path]:
    for pattern in ("*.safetensors", "*.parquet", "*.json"):
        yield from sorted(Path(results).rglob(pattern))


def stale(results: str | Path) -> dict[Path, list[str]]:
    """Outputs under ``results`` made by code that has changed since: path -> changed modules."""
    found = {}
    for path in outputs(results):
        recorded = read_fingerprint(path)
        if recorded is not None and (changed := changed_modules(recorded)):
            found[path] = changed
    return found


def stale_rows(table: pd.DataFrame) -> pd.Series:
    """Which rows of a table (a frame with a ``code`` column) were made by code other than this
    checkout's (:func:`code_version`): a boolean Series; rows that name no code count as other."""
    return table["code"].astype("string").fillna("") != code_version()


def other_code(results: str | Path) -> list[Path]:
    """Outputs under ``results`` whose fingerprint names a code version other than the checkout's
    (:func:`code_version`); outputs made before fingerprints named one are not listed."""
    return [path for path in outputs(results)
            if (code := versions(read_fingerprint(path))["code"]) is not None and code != code_version()]


FLAGS = ("--why", "--rows", "--other-code")


def main(argv: list[str] | None = None) -> None:
    """``python -m mathneuro.provenance [results] [--why]``: the stale outputs, one per line.
    ``--rows``: for each table under the folders whose rows name their code, how many rows were
    made by code other than this checkout's, and by which. ``--other-code``: every output made by
    code other than this checkout's, one per line (for ``snakemake --forcerun``)."""
    args = sys.argv[1:] if argv is None else argv
    folders = [a for a in args if a not in FLAGS] or ["results"]
    for folder in folders:
        if "--rows" in args:
            _print_stale_rows(Path(folder))
        elif "--other-code" in args:
            for path in other_code(folder):
                print(path)
        else:
            for path, modules in stale(folder).items():
                print(f"{path}\t{','.join(modules)}" if "--why" in args else path)


def _print_stale_rows(folder: Path) -> None:
    import pandas as pd

    for path in sorted(folder.rglob("*.parquet")):
        if path.stem.endswith("_summary") or "code" not in pq_columns(path):  # a summary's rows join repeats'
            continue
        table = pd.read_parquet(path, columns=["code"])
        other = table.loc[stale_rows(table), "code"].fillna("(not recorded)")
        if len(other):
            counts = ", ".join(f"{code} {n}" for code, n in other.value_counts().items())
            print(f"{path}\t{len(other)} of {len(table)} rows made by other code ({counts}); this checkout: "
                  f"{code_version()}")


def pq_columns(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_schema(path).names


if __name__ == "__main__":
    main()
