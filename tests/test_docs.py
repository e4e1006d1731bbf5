"""Every command the README and docs/ show works as written, and every link between them resolves.

The commands are read from the fenced code blocks of README.md and docs/*.md: each line (lines
ending in ``\\`` joined), split at ``&&``, ``||``, ``;`` and ``|``, comments dropped; a part whose
program is ``snakemake`` or ``python`` (``.venv/bin/snakemake`` and ``.venv/bin/python`` too) is a
command. They are checked on a copy of the repository's files (``git ls-files --cached --others
--exclude-standard``: the tracked files and the untracked ones git does not ignore, so it works
before a commit), with what the set-up leaves beside them linked in: ``models/`` (the SmolLM2 GGUF
file of ``ci/fetch_smollm2.sh``), ``../shared`` (the machine's local data) and the user profile
``slurm`` (``ci/install_profile.sh``); the hub cache is the test session's fake one
(``conftest.hub_cache``).

- A ``snakemake`` command is dry-run as written, with ``--dry-run --quiet rules`` added: its
  config, profile and targets must build a DAG of at least one job (a clean checkout has nothing
  finished). This checks the config, the checks made before any job, the profile and the target
  names, not the jobs themselves. The dry runs start together, two at a time, each in a copy of
  its own (a paper config's DAG takes about 10 s to build). A command whose config reads what
  the set-up or the machine did not provide (the SmolLM2 file, ``../shared``) is skipped, saying so.
- A ``python`` command runs with its arguments as written, in the copy, with
  ``argparse.ArgumentParser.parse_args`` wrapped so that the program stops right after its own
  parser has accepted them: the module or script must exist and its parser accept the arguments
  (argparse rejects them with exit 2). A program that parses no arguments with argparse runs to
  its end and must succeed; only cheap ones that need no results may appear so (today
  ``mathneuro.provenance``, which lists nothing when ``results/`` is absent).
- Commands that cannot be checked so are listed in ``EXEMPT`` with the reason: they need a
  finished study, the hub, or a shell substitution. An exempt command that the docs no longer
  show fails the test (the list stays true), and so does a new command that is neither checked nor
  exempt.
"""

from __future__ import annotations

import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from dag import code_env

from mathneuro.configs import compose

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHARED = REPO.parent / "shared"

EXEMPT = {
    ".venv/bin/snakemake --report results/report.html":
        "needs a finished default study: the report gathers its figures and tables",
    ".venv/bin/snakemake --report results/llama.html --configfile configs/models/llama-3.2-1b-it.yaml":
        "needs a finished Llama 3.2 1B study (and its model from the hub)",
    ".venv/bin/snakemake --cores all --forcerun $(.venv/bin/python -m mathneuro.provenance results)":
        "a shell substitution over a finished study's outputs; its two halves are checked apart "
        "(`python -m mathneuro.provenance results --why`, the dry run of `snakemake --cores all`)",
    ".venv/bin/snakemake --cores all --forcerun $(.venv/bin/python -m mathneuro.provenance results --other-code)":
        "a shell substitution over a finished study's outputs; its halves are checked apart as above",
}


@dataclass(frozen=True)
class Command:
    text: str  # as written, whitespace normalized: the name EXEMPT knows it by
    program: str  # "snakemake" or "python"
    args: tuple[str, ...]
    where: str  # the first place it is shown

    @property
    def substituted(self) -> bool:
        return "$(" in self.text or "`" in self.text


def _parts(line: str) -> list[str]:
    """A shell line split at unquoted control operators, its comment dropped (``$(...)`` kept whole)."""
    parts, current, quote, depth, i = [], "", None, 0, 0
    while i < len(line):
        c = line[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif line.startswith("$(", i):
            depth += 1
            current += "$("
            i += 2
            continue
        elif c == ")" and depth:
            depth -= 1
        elif not depth and c == "#" and (not current or current[-1].isspace()):
            break
        elif not depth and (line.startswith("&&", i) or line.startswith("||", i)):
            parts.append(current)
            current, i = "", i + 2
            continue
        elif not depth and c in ";|":
            parts.append(current)
            current, i = "", i + 1
            continue
        current += c
        i += 1
    return [p.strip() for p in [*parts, current] if p.strip()]


def _program(word: str) -> str | None:
    name = os.path.basename(word)
    if name == "snakemake":
        return "snakemake"
    return "python" if re.fullmatch(r"python(3(\.\d+)?)?", name) else None


def _fenced_lines(path: Path):
    """(line number, logical line) of every fenced code block's lines, ``\\`` continuations joined."""
    fence, pending, start = None, "", 0
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        stripped = raw.strip()
        if fence is None:
            if stripped.startswith(("```", "~~~")):
                fence = stripped[:3]
            continue
        if stripped.startswith(fence):
            fence = None
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        yield start, pending + stripped
        pending = ""


def doc_commands() -> list[Command]:
    """Every snakemake and python command of the docs, once each (the first place it is shown)."""
    found: dict[str, Command] = {}
    for path in DOCS:
        for number, line in _fenced_lines(path):
            for part in _parts(line.removeprefix("$ ")):
                words = part.split()
                while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):
                    words = words[1:]  # environment assignments before the program
                if not words or not (program := _program(words[0])):
                    continue
                text = " ".join(words)
                args = () if "$(" in text else tuple(shlex.split(text)[1:])
                found.setdefault(text, Command(text, program, args, f"{path.relative_to(REPO)}:{number}"))
    return list(found.values())


COMMANDS = doc_commands()
CHECKED = [c for c in COMMANDS if c.text not in EXEMPT]


def test_the_docs_show_the_readmes_two_commands_and_more():
    """The README's test command is `.ci/run`'s, verbatim; its demo command is among those checked."""
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci in [line for _, line in _fenced_lines(REPO / "README.md")]
    texts = {c.text for c in COMMANDS}
    assert ".venv/bin/snakemake --cores all" in texts  # the demo's, after `bash ci/setup.sh &&`
    assert ".venv/bin/python -m mathneuro.summary results/tables/toy" in texts
    assert len(CHECKED) >= 10, [c.text for c in COMMANDS]


def test_every_exempt_command_is_still_shown():
    """The exemptions stay true: each names a command the docs show."""
    shown = {c.text for c in COMMANDS}
    assert not [text for text in EXEMPT if text not in shown], "EXEMPT names commands no doc shows any more"


def test_every_command_is_checked_or_exempt():
    """A command that cannot be checked as written (a shell substitution, a report of a finished
    study) must be exempt with its reason; every other one is checked below."""
    unchecked = [f"{c.where}: {c.text}" for c in CHECKED if c.substituted or "--report" in c.args]
    assert not unchecked, "add these to EXEMPT with the reason, or make them checkable"


# --- The copies the commands run in ----------------------------------------------------------------

WORKERS = min(2, os.cpu_count() or 1)  # dry runs at once, each in a copy of its own


@dataclass(frozen=True)
class Checkout:
    repo: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory, hub_cache) -> list[Checkout]:
    """The repository's files (tracked, and untracked but not ignored) copied, once per worker,
    with what the set-up leaves beside them linked in; and the environment commands run in."""
    root = tmp_path_factory.mktemp("checkout")
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    if SHARED.is_dir():
        (root / "shared").symlink_to(SHARED)  # ../shared/data, the machine's local data, for every copy
    copies = []
    for worker in range(WORKERS):
        repo = root / f"repo{worker}"
        for name in filter(None, listed.split("\0")):
            source = REPO / name
            if source.is_file():  # a tracked file deleted in the working tree is not there
                (repo / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, repo / name)
        if (REPO / "models").is_dir():
            (repo / "models").symlink_to(REPO / "models")  # ci/fetch_smollm2.sh's GGUF file
        profiles = root / f"config{worker}" / "snakemake"
        profiles.mkdir(parents=True)
        (profiles / "slurm").symlink_to(repo / "profiles" / "slurm")  # as ci/install_profile.sh links it
        env = code_env(repo)
        env.update(XDG_CONFIG_HOME=str(profiles.parent), HF_HUB_CACHE=str(hub_cache))
        copies.append(Checkout(repo, env))
    return copies


def _missing_inputs(command: Command, repo: Path) -> str | None:
    """What the set-up or the machine has not provided for a command's config, if anything."""
    args = list(command.args)
    configfile = args[args.index("--configfile") + 1] if "--configfile" in args else "config.yaml"
    try:
        config = compose([repo / configfile])
    except ValueError:
        return None  # a config that cannot be read: the dry run says so, as it would to a reader
    if "../shared/" in yaml.safe_dump(config) and not SHARED.is_dir():
        return f"{configfile} reads ../shared, which this machine lacks"
    for label, model in config["models"].items():
        if model.get("gguf") and model["path"].startswith("models/") and not (REPO / model["path"]).is_dir():
            return f"model {label}: {model['path']} is fetched by the set-up (bash ci/fetch_smollm2.sh)"
    return None


def _dry_run(command: Command, free: queue.Queue) -> subprocess.CompletedProcess:
    checkout = free.get()
    try:
        run = [sys.executable, "-m", "snakemake", *command.args, "--dry-run", "--quiet", "rules"]
        return subprocess.run(run, cwd=checkout.repo, env=checkout.env, capture_output=True, text=True, timeout=600)
    finally:
        free.put(checkout)


@pytest.fixture(scope="module")
def dry_runs(request, checkouts) -> dict[str, Future]:
    """The dry runs of every selected snakemake command, started together, WORKERS at a time
    (a paper config's DAG takes about 10 s to build)."""
    selected = [item.callspec.params["command"] for item in request.session.items
                if getattr(item, "function", None) is test_snakemake_command_plans_a_dag]
    free: queue.Queue = queue.Queue()
    for checkout in checkouts:
        free.put(checkout)
    with ThreadPoolExecutor(WORKERS) as pool:
        yield {c.text: pool.submit(_dry_run, c, free) for c in selected
               if not _missing_inputs(c, checkouts[0].repo)}


@pytest.mark.workflow
@pytest.mark.parametrize("command", [c for c in CHECKED if c.program == "snakemake"], ids=lambda c: c.text)
def test_snakemake_command_plans_a_dag(command, checkouts, dry_runs):
    if missing := _missing_inputs(command, checkouts[0].repo):
        pytest.skip(missing)
    done = dry_runs[command.text].result()
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{command.where}: {command.text}\n{output[-6000:]}"
    jobs = re.search(r"^total\s+(\d+)$", output, re.M)
    assert jobs and int(jobs.group(1)) > 0, f"{command.where}: {command.text} plans no job\n{output[-3000:]}"


# Runs a python command as written, but stops it once argparse has accepted its arguments.
HARNESS = r"""
import argparse, os, runpy, sys

_parse = argparse.ArgumentParser.parse_args

def _parsed(self, args=None, namespace=None):
    namespace = _parse(self, args, namespace)  # argparse's own: exit 2 on arguments it rejects
    print("test_docs: parsed", sorted(vars(namespace)), flush=True)
    os._exit(0)

argparse.ArgumentParser.parse_args = _parsed
if sys.argv[1] == "-m":
    sys.argv = sys.argv[2:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
print("test_docs: ran to its end", flush=True)
"""


@pytest.mark.parametrize("command", [c for c in CHECKED if c.program == "python"], ids=lambda c: c.text)
def test_python_command_exists_and_accepts_its_arguments(command, checkouts):
    repo, env = checkouts[0].repo, checkouts[0].env
    args = list(command.args)
    if args[0] == "-m":
        assert len(args) > 1, f"{command.where}: `python -m` without a module"
    else:
        assert (repo / args[0]).is_file(), f"{command.where}: no script {args[0]} in the repository"
    done = subprocess.run([sys.executable, "-c", HARNESS, *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{command.where}: {command.text}\n{output[-4000:]}"
    assert "test_docs: parsed" in done.stdout or "test_docs: ran to its end" in done.stdout, output[-4000:]


# --- Links ---------------------------------------------------------------------------------------


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces to -)."""
    seen: dict[str, int] = {}
    anchors, fence = set(), False
    for line in path.read_text().splitlines():
        if line.strip().startswith(("```", "~~~")):
            fence = not fence
        if fence or not (heading := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def test_every_relative_link_of_the_docs_resolves():
    broken = []
    for path in DOCS:
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            if not linked.exists():
                broken.append(f"{path.relative_to(REPO)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{path.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
