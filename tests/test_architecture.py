"""The import graph is the architecture (docs: README "Code layout").

- ``apm`` is the shared contract: it imports no other package of this project (``apm.cli``
  names the components' CLIs as strings and imports them lazily).
- Each component imports the contract and, where data flows from storage to it, ``storage``;
  never another component, never ``launch`` (not even its CLI: launch hands a component what
  it needs from the machine, the aggregator's jars say, and runs peers such as Alertmanager
  itself), and never ``bench``.
- ``launch`` (running the platform on one machine) sits above the components; ``bench`` above
  everything. Neither is imported by product code.

And each package's docstring is a true map: it names every module and subpackage it holds.
No product module imports another module's private (``_``) name: what is shared is public, in
the module that owns it (``launch/jvm.py`` for the JVM helpers, say).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = "apm"
COMPONENTS = {"agent", "ingest", "storage", "aggregator", "dashboard", "loadgen", "alerting"}
# Where data flows from one component to another inside a process: the results store.
MAY_IMPORT = {
    "aggregator": {"storage"},
    # The dashboard shows and edits alert rules through alerting's rulebook.
    "dashboard": {"storage", "alerting"},
    # Alerting reads stored results through storage.
    "alerting": {"storage"},
}
FIRST_PARTY = {CONTRACT, *COMPONENTS, "launch", "bench", "tests"}


def _imports(path: Path) -> set[str]:
    """First-party top-level packages a module imports, at any depth (lazy imports too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found |= {n.split(".")[0] for n in names} & FIRST_PARTY
    return found


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_the_tree_has_the_packages_this_test_knows():
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert packages == FIRST_PARTY, "a new top-level package needs a place in this test"


def test_the_contract_imports_no_component():
    bad = {str(p.relative_to(ROOT)): _imports(p) - {CONTRACT} for p in _modules(CONTRACT)}
    assert not {k: v for k, v in bad.items() if v}


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_a_component_imports_the_contract_and_storage_only(component: str):
    allowed = {CONTRACT, component, *MAY_IMPORT.get(component, ())}
    bad = {}
    for path in _modules(component):
        extra = _imports(path) - allowed
        if extra:
            bad[str(path.relative_to(ROOT))] = extra
    assert not bad


def test_launch_is_above_the_components_and_below_the_benchmarks():
    bad = {str(p.relative_to(ROOT)): _imports(p) & {"bench", "tests"} for p in _modules("launch")}
    assert not {k: v for k, v in bad.items() if v}


def test_nothing_outside_the_tests_imports_them():
    for package in FIRST_PARTY - {"tests"}:
        for path in _modules(package):
            assert "tests" not in _imports(path), path


def test_no_module_imports_another_modules_private_names():
    bad = []
    for package in FIRST_PARTY - {"tests"}:
        for path in _modules(package):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                    continue
                if node.module.split(".")[0] not in FIRST_PARTY:
                    continue
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    bad.append(f"{path.relative_to(ROOT)}: {node.module} {private}")
    assert not bad, bad


# A module is named in a map as ``name``, ``name.py`` or ``name/`` (any of several in one
# pair of double backquotes), or as :mod:`.name` / :mod:`~package.name`.
_NAMED = re.compile(r"``([^`]+)``")
_MOD = re.compile(r":mod:`~?([\w.]+)`")


def _named(package: Path) -> set[str]:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    names = {ref.split(".")[-1] for ref in _MOD.findall(doc)}
    for quoted in _NAMED.findall(doc):
        for word in re.split(r"[\s,]+", quoted):
            word = word.rstrip("/")
            names.add(word.removesuffix(".py"))
    return names


def _packages() -> list[Path]:
    return sorted(
        p.parent for top in FIRST_PARTY - {"tests"} for p in (ROOT / top).rglob("__init__.py")
    )


def test_each_package_map_names_every_module():
    """Its own docstring, or its parent package's (the dashboard's map names its pages'),
    names each module and subpackage; ``__main__`` is the package run as a command."""
    missing = {}
    for package in _packages():
        named = _named(package)
        if package.parent != ROOT:
            named |= _named(package.parent)
        members = {p.stem for p in package.glob("*.py")} - {"__init__", "__main__"}
        members |= {p.parent.name for p in package.glob("*/__init__.py")}
        if left := sorted(members - named):
            missing[str(package.relative_to(ROOT))] = left
    assert not missing, f"package maps that leave modules out: {missing}"
