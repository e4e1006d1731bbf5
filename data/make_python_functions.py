"""Write data/python_functions.jsonl: top-level Python functions, with their docstrings, from
CPython's standard library as installed (no download), one JSON record a line:
{"module": ..., "name": ..., "code": ...}. The shipped file was written by CPython 3.11.7:

    .venv/bin/python data/make_python_functions.py

Another Python version writes other functions (its standard library's source differs); the
script says so and writes them anyway. The source is the Python Software Foundation's, under the
PSF License Agreement (data/LICENSE-Python.txt, the LICENSE.txt of the same installation); the
modules are a fixed list of pure-Python ones whose files name no copyright holder but the PSF
(checked below)."""

from __future__ import annotations

import ast
import json
import re
import sys
import sysconfig
from pathlib import Path

MADE_WITH = (3, 11, 7)
OUT = Path(__file__).resolve().parent / "python_functions.jsonl"
MODULES = [
    "argparse", "base64", "bdb", "bisect", "calendar", "cmd", "code", "codeop", "colorsys",
    "configparser", "contextlib", "copy", "csv", "dataclasses", "datetime", "difflib", "dis",
    "doctest", "email.utils", "enum", "filecmp", "fileinput", "fnmatch", "fractions", "ftplib",
    "functools", "genericpath", "getopt", "gettext", "glob", "graphlib", "gzip", "heapq", "html",
    "imaplib", "inspect", "json", "keyword", "linecache", "locale", "mailbox", "mimetypes",
    "netrc", "ntpath", "operator", "os", "pathlib", "pdb", "pickle", "plistlib", "posixpath",
    "pprint", "pydoc", "queue", "quopri", "random", "reprlib", "sched", "secrets", "selectors",
    "shlex", "shutil", "smtplib", "stat", "statistics", "string", "stringprep", "sysconfig",
    "tempfile", "threading", "timeit", "tokenize", "traceback", "types", "typing", "urllib.parse",
    "uuid", "warnings", "wave", "weakref", "webbrowser",
]
MIN_CHARS, MAX_CHARS = 200, 1200  # a function's source, docstring included: ~60 to ~400 tokens
COPYRIGHT = re.compile(r"copyright\b.*\d{4}|\(c\) copyright", re.IGNORECASE)  # a holder's notice


def module_file(module: str) -> Path:
    """The module's source file in the running Python's standard library (a package's __init__.py)."""
    base = Path(sysconfig.get_paths()["stdlib"]) / module.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def functions(module: str) -> list[dict[str, str]]:
    """The module's top-level functions with a docstring and MIN_CHARS..MAX_CHARS of source, in
    file order."""
    source = module_file(module).read_text(encoding="utf-8")
    for line in source.splitlines():
        if COPYRIGHT.search(line) and "Python Software Foundation" not in line:
            raise SystemExit(f"{module}: {line.strip()!r}: a copyright holder other than the PSF")
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node):
            code = ast.get_source_segment(source, node, padded=False)
            if node.decorator_list:  # the decorators too: they start the function's text
                first = node.decorator_list[0]
                code = "\n".join(source.splitlines()[first.lineno - 1:node.end_lineno])
            if MIN_CHARS <= len(code) <= MAX_CHARS:
                found.append({"module": module, "name": node.name, "code": code})
    return found


def records() -> list[dict[str, str]]:
    """Every module's functions, in MODULES' order, each source text once (posixpath and ntpath
    share some functions)."""
    found, seen = [], set()
    for module in MODULES:
        for record in functions(module):
            if record["code"] not in seen:
                seen.add(record["code"])
                found.append(record)
    return found


def main() -> None:
    if sys.version_info[:3] != MADE_WITH:
        print(f"python {sys.version.split()[0]}, not {'.'.join(map(str, MADE_WITH))}: its standard "
              "library differs, and so will the records", file=sys.stderr)
    found = records()
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in found), encoding="utf-8")
    print(f"wrote {OUT.name}: {len(found)} functions from {len({r['module'] for r in found})} modules, "
          f"{OUT.stat().st_size / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
