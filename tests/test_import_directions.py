"""Dependencies flow one way. Imports are read with `ast` (every `import` statement a module runs, at its top
or inside a function; `if TYPE_CHECKING:` blocks are type hints, not dependencies):

- `engines` and `workloads` import nothing of ours above them (engines: not `harness`, `workloads` or
  `reports`; workloads: not `harness`, `engines` or `reports`);
- `reports` reads records and metrics only: of `harness`, just `harness.metrics` and the record schema
  `harness.records`, and nothing of `engines`;
- the CLI sits on top: only `harness.cli` imports `reports`, nothing imports `harness.cli`, and no command
  module imports another (they share `harness.cli.args`);
- no import cycles between our modules.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engines", "workloads", "harness", "reports")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts).removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _owner(name: str) -> str:
    """The module of ours that `import name` loads (`a.b.c` where `c` is a function: `a.b`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


class _Imports(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found.update(a.name for a in node.names if a.name.split(".")[0] in PACKAGES)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        assert node.level == 0, "relative imports are not used"
        if node.module and node.module.split(".")[0] in PACKAGES:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                self.found.add(full if full in MODULES else node.module)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8")))
        graph[module] = {_owner(name) for name in visitor.found} - {module, ""}
    return graph


GRAPH = _graph()


def _edges(source: str) -> list[tuple[str, str]]:
    return sorted((m, t) for m, targets in GRAPH.items() if m == source or m.startswith(source + ".") for t in targets)


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize(
    ("source", "forbidden"),
    [("engines", ("harness", "workloads", "reports")), ("workloads", ("harness", "engines", "reports"))],
)
def test_the_lower_packages_import_nothing_above_them(source, forbidden):
    bad = [(m, t) for m, t in _edges(source) if any(_in(t, f) for f in forbidden)]
    assert not bad, bad


def test_reports_read_records_and_metrics_only():
    # and the judge's comparisons: reports render its numbers, they compute no statistics of their own
    allowed = ("reports", "harness.metrics", "harness.records", "harness.judge")
    bad = [(m, t) for m, t in _edges("reports") if not any(_in(t, a) for a in allowed)]
    assert not bad, bad


def test_reports_compute_no_statistics():
    """Tests, intervals and p-values are the judge's (harness.judge) or plain metrics (harness.metrics):
    computed once in harness and passed to reports as data, so reports/ imports no statistics library."""
    bad = []
    for module, path in MODULES.items():
        if not _in(module, "reports"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [(module, n) for n in names if n.split(".")[0] in ("scipy", "statsmodels")]
    assert not bad, bad


def test_the_cli_sits_on_top():
    into_cli = [
        (m, t) for m, targets in GRAPH.items() for t in targets if _in(t, "harness.cli") and not _in(m, "harness.cli")
    ]
    assert not into_cli, into_cli
    into_reports = [(m, t) for m, t in _edges("harness") if _in(t, "reports") and not _in(m, "harness.cli")]
    assert not into_reports, into_reports
    commands = {
        m for m in MODULES if m.startswith("harness.cli.") and m not in ("harness.cli.args", "harness.cli.__main__")
    }
    across = [(m, t) for m in commands for t in GRAPH[m] if t in commands]
    assert not across, across


def test_no_import_cycles():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                cycles.append(sorted([v, *component]))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    assert not cycles, cycles


def test_the_checker_sees_what_it_forbids():
    """The rules above could pass vacuously if the parser missed imports: it must see the known edges."""
    assert "engines.api" in GRAPH["engines.inprocess"]
    assert "harness.metrics.columns" in GRAPH["reports.load"]
    assert "workloads" in GRAPH["harness.loadgen.replay"]  # an import inside a function counts
    assert "workloads.model" not in GRAPH["workloads.fingerprint"]  # a TYPE_CHECKING import does not


def test_the_judge_stands_below_the_gate_and_the_study():
    allowed = ("harness.judge", "harness.metrics", "harness.records", "harness.errors")
    bad = [(m, t) for m, t in _edges("harness.judge") if not any(_in(t, a) for a in allowed)]
    assert not bad, bad
