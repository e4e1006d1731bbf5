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
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from collections.abc import Iterator
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

KEY = "mathneuro.code"
PACKAGE = Path(__file__).resolve().parent


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


def fingerprint() -> dict:
    """The version and the code hash of every mathneuro module this process has imported."""
    modules = {}
    for name, module in sorted(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (name == "mathneuro" or name.startswith("mathneuro.")) and file and Path(file).suffix == ".py":
            modules[name] = module_hash(file)
    return {"version": project_version(), "modules": modules}


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


def main(argv: list[str] | None = None) -> None:
    """``python -m mathneuro.provenance [results] [--why]``: the stale outputs, one per line."""
    args = sys.argv[1:] if argv is None else argv
    why = "--why" in args
    folders = [a for a in args if a != "--why"] or ["results"]
    for folder in folders:
        for path, modules in stale(folder).items():
            print(f"{path}\t{','.join(modules)}" if why else path)


if __name__ == "__main__":
    main()
