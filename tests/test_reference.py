"""The library's documentation: its reference (mathneuro.reference, pdoc) builds without a warning,
with a page for every module and every exported name documented by its docstring; every exported
function and class has one; every cross reference of the docstrings resolves; and the README's
library snippet runs as written, printing what its comments show."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

import mathneuro
from mathneuro import reference
from mathneuro.masks import ParameterMask

from dag import REPO

VALUES = {"METHODS", "SCOPES", "STATISTICS"}  # exported values, not functions or classes: their modules document them


def _source_modules() -> list[str]:
    """The package's modules as the files show them: every ``.py`` under ``mathneuro/`` whose
    folders are packages (have an ``__init__.py``), none of whose parts starts with ``_``
    (an ``__init__.py`` is its package)."""
    names = []
    for path in sorted((REPO / "mathneuro").rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        folders = [REPO.joinpath(*parts[:i]) for i in range(1, len(parts))]
        if not all((folder / "__init__.py").is_file() for folder in folders):
            continue  # a task folder's utils.py (lm_tasks), not a module of the package
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            names.append(".".join(parts))
    return sorted(names)


def _summary(doc: str) -> str:
    """A docstring's first paragraph as the reference shows its text: ``literals`` unquoted,
    whitespace collapsed."""
    first = inspect.cleandoc(doc).split("\n\n")[0]
    return " ".join(first.replace("``", "").split())


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}  # no end tag


class _Sections(HTMLParser):
    """The text of a pdoc page: of each top-level ``<section id=...>`` (an exported name), and of
    the rendered docstrings (``<div class="docstring">``) within it; the module's own docstring
    under the id ``""``."""

    def __init__(self):
        super().__init__()
        self.text: dict[str, list[str]] = {}
        self.docstrings: dict[str, list[str]] = {}
        self._section, self._section_depth, self._docstring_depth, self._depth = "", 0, 0, 0

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        self._depth += 1
        attrs = dict(attrs)
        if tag == "section" and not self._section and attrs.get("id"):
            self._section, self._section_depth = attrs["id"], self._depth
        if tag == "div" and "docstring" in (attrs.get("class") or "").split() and not self._docstring_depth:
            self._docstring_depth = self._depth

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if self._depth == self._docstring_depth:
            self._docstring_depth = 0
        if self._depth == self._section_depth:
            self._section, self._section_depth = "", 0
        self._depth -= 1

    def handle_data(self, data):
        self.text.setdefault(self._section, []).append(data)
        if self._docstring_depth:
            self.docstrings.setdefault(self._section, []).append(data)


def _flat(found: dict[str, list[str]]) -> dict[str, str]:
    return {key: " ".join("".join(parts).split()) for key, parts in found.items()}  # (entities decoded by HTMLParser)


def _page(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(text, docstring text) of a pdoc page by section id, whitespace collapsed."""
    parser = _Sections()
    parser.feed(path.read_text(encoding="utf-8"))
    return _flat(parser.text), _flat(parser.docstrings)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list[str]]:
    out = tmp_path_factory.mktemp("reference")
    return out, reference.build(out)


def test_the_reference_builds_without_a_warning(built):
    out, warnings = built
    assert warnings == []
    assert (out / "index.html").is_file()


def test_every_module_has_a_page_with_its_docstring(built):
    out, _ = built
    modules = _source_modules()
    assert reference.public_modules() == modules
    assert {"mathneuro", "mathneuro.select", "mathneuro.study.klabels", "mathneuro.reference"} <= set(modules)
    index = (out / "index.html").read_text(encoding="utf-8")
    missing, undocumented = [], []
    for name in modules:
        page = out / f"{name.replace('.', '/')}.html"
        if not page.is_file() or f'href="{name.replace(".", "/")}.html"' not in index:
            missing.append(name)
            continue
        doc = inspect.getdoc(importlib.import_module(name))
        if not doc or _summary(doc) not in _page(page)[1].get("", ""):
            undocumented.append(name)
    assert missing == [], "modules without a page in the reference (or not linked from its index)"
    assert undocumented == [], "module pages without their module's docstring"


def test_every_exported_name_is_documented_with_its_docstring(built):
    out, _ = built
    text, docstrings = _page(out / "mathneuro.html")
    assert sorted(set(text) - {""}) == mathneuro.__all__  # a section for each exported name, no other
    for name in mathneuro.__all__:
        value = getattr(mathneuro, name)
        if name in VALUES:
            shown = value if isinstance(value, tuple) else list(value)  # the value pdoc prints: a tuple's items, a dict's keys
            assert all(repr(item) in text[name] for item in shown), (name, text[name][:300])
        else:
            assert _summary(value.__doc__) in docstrings.get(name, ""), (name, docstrings.get(name))


@pytest.mark.parametrize("name", mathneuro.__all__)
def test_every_exported_function_and_class_has_a_docstring(name):
    """What the package exports is a function or class with a docstring of its own (a dataclass's
    generated signature does not count), or one of the VALUES its module documents."""
    value = getattr(mathneuro, name)
    if name in VALUES:
        assert not callable(value) and not inspect.isclass(value)
        return
    assert inspect.isfunction(value) or inspect.isclass(value), f"{name} is neither a function nor a class: add it to VALUES"
    doc = vars(value).get("__doc__") if inspect.isclass(value) else value.__doc__
    assert doc and doc.strip() and not doc.startswith(f"{name}("), f"mathneuro.{name} has no docstring"


ROLE = re.compile(r":(?:func|class|mod|data|meth|attr|exc):`~?([^`]+)`")  # a docstring's cross reference
_MISSING = object()


def _resolves(target: str, scopes: list[object]) -> bool:
    """Whether a cross reference names something: an attribute path from one of ``scopes`` (its
    class, its module), else a module path and attributes (``mathneuro.masks.overlap``), else a
    builtin's (``str.format``)."""
    def walk(obj, names):
        for name in names:
            obj = getattr(obj, name, _MISSING)
        return obj is not _MISSING

    names = target.split(".")
    if any(walk(scope, names) for scope in scopes):
        return True
    for i in range(len(names), 0, -1):
        try:
            module = importlib.import_module(".".join(names[:i]))
        except ImportError:
            continue
        return walk(module, names[i:])
    return walk(builtins, names)


def _cross_references(name: str) -> list[tuple[str, str, list[object]]]:
    """(where, target, scopes) of every cross reference in a module's docstrings."""
    module = importlib.import_module(name)
    found = []

    def visit(node, scopes, where):
        for target in ROLE.findall(ast.get_docstring(node) or ""):
            found.append((where, target, scopes))
        for child in node.body:
            if isinstance(child, ast.ClassDef):
                cls = getattr(scopes[0], child.name, None)
                visit(child, [cls, *scopes] if cls is not None else scopes, f"{where}.{child.name}")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, scopes, f"{where}.{child.name}")

    visit(ast.parse(Path(module.__file__).read_text(encoding="utf-8")), [module], name)
    return found


def test_every_cross_reference_of_the_docstrings_resolves():
    """A :func:`name` (:class:, :meth:, :data:, :mod:...) in a docstring names something that
    exists: pdoc links what it finds and shows the rest as plain code, without a warning, so a
    renamed function would leave dead references in the reference."""
    references = [ref for name in reference.public_modules() for ref in _cross_references(name)]
    assert len(references) > 50  # the docstrings do cross-reference (87 when this test was written)
    broken = [f"{where}: {target}" for where, target, scopes in references if not _resolves(target, scopes)]
    assert broken == []


# --- The README's snippet ------------------------------------------------------------------------


def _python_blocks(path: Path) -> list[str]:
    """The fenced ```python blocks of a Markdown file, as written."""
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.M | re.S)


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


def test_the_readmes_library_snippet_runs_and_prints_what_it_shows(monkeypatch, capsys):
    """The snippet runs from the repository's root in a fresh namespace; what each ``print`` line
    shows in its comment is what it prints (numbers within 20 %: thread counts move float sums);
    the pruned set is math-specific (math's answers suffer, reading's hardly) and leaving the
    ``with`` block restores the exact model."""
    (snippet,) = _python_blocks(REPO / "README.md")
    monkeypatch.chdir(REPO)
    namespace: dict = {"__name__": "readme_snippet"}
    exec(compile(snippet, "README.md (As a library)", "exec"), namespace)

    printed = capsys.readouterr().out.strip().splitlines()
    shown = re.findall(r"^print\(.*\)\s+#\s*(.+)$", snippet, flags=re.M)
    assert len(printed) == len(shown) == 2, printed
    for line, comment in zip(printed, shown):
        got, expected = _numbers(line), _numbers(comment)
        assert len(got) == len(expected) and all(math.isclose(g, e, rel_tol=0.2, abs_tol=0.005)
                                                 for g, e in zip(got, expected)), (line, comment)

    math_set, unedited, pruned = namespace["math_set"], namespace["unedited"], namespace["pruned"]
    assert isinstance(math_set, ParameterMask) and 0 < math_set.count() < 0.05 * math_set.numel()
    assert math_set.count() < namespace["top"]["math"].count()  # TopK(math) less reading's
    assert pruned["math"] > 10 * unedited["math"] and pruned["reading"] < 1.5 * unedited["reading"]
    fresh = type(namespace["model"]).from_pretrained(REPO / "mathneuro" / "toy_model").state_dict()
    assert all(torch.equal(value, fresh[name]) for name, value in namespace["model"].state_dict().items())
