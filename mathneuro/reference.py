"""The library's reference: one HTML page per module of ``mathneuro``, made from its docstrings by
pdoc (the ``dev`` extra). Build it with::

    .venv/bin/python -m mathneuro.reference docs/reference

and open ``docs/reference/index.html`` (``docs/reference/`` is ignored by git). The ``mathneuro``
page lists the names the package exports; each module's page documents its own. A build that pdoc
warns about (a module it cannot import, an annotation it cannot read) writes the pages and fails,
naming the warnings; ``tests/test_reference.py`` builds it so.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

PACKAGE = __name__.split(".")[0]  # the package this module is in


def public_modules() -> list[str]:
    """The package and every module under it, by name, none of whose parts starts with ``_``."""
    package = importlib.import_module(PACKAGE)
    found = pkgutil.walk_packages(package.__path__, f"{PACKAGE}.")
    return [PACKAGE, *sorted(m.name for m in found if not any(part.startswith("_") for part in m.name.split(".")))]


def build(out_dir: str | Path) -> list[str]:
    """Write the reference of :func:`public_modules` into ``out_dir``; return pdoc's warnings.

    Every module is imported first, as a user imports it: an import that fails raises here, and
    pdoc documents the modules as loaded (it would otherwise import them with subprocesses stubbed
    out, which changes what third-party imports such as matplotlib's font cache do). ``index.html``
    lists every module with a search box: pdoc's own index would redirect to the ``mathneuro``
    page, whose ``__all__`` lists the exported names and so no module.
    """
    import pdoc
    import pdoc.render

    modules = public_modules()
    for name in modules:
        importlib.import_module(name)
    out_dir = Path(out_dir)
    pdoc.render.configure(docformat="restructuredtext")  # the docstrings' double-backquoted literals, roles
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*modules, output_directory=out_dir)
        index = pdoc.render.env.get_template("index.html.jinja2").render(
            all_modules=dict.fromkeys(modules), root_module_name=None)
    (out_dir / "index.html").write_text(index, encoding="utf-8")
    return [f"{w.category.__name__}: {w.message}" for w in caught]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mathneuro.reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", help="the folder to write the HTML pages into, e.g. docs/reference")
    args = parser.parse_args(argv)
    problems = build(args.out_dir)
    for problem in problems:
        print(f"mathneuro.reference: {problem}", file=sys.stderr)
    print(f"reference written to {Path(args.out_dir) / 'index.html'}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
