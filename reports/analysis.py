"""Everything the report, the Markdown summary and the exports share: load once, analyse once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.metrics.prefix_cache import PrefixCacheView, prefix_cache_views
from reports.compare import Comparison, compare_runs
from reports.load import EngineRun, RunData, load_runs
from reports.style import series_colors
from reports.verdict import Verdict, verdict


@dataclass
class Analysis:
    """Everything the report, the exports and the Markdown summary show, computed once."""

    runs: list[RunData]
    series: list[EngineRun]  # one per engine per run (its first trial), in run then engine order
    comparisons: list[Comparison]
    verdict: Verdict
    colors: dict[str, str]

    @property
    def labels(self) -> list[str]:
        return [er.label for er in self.series]

    @property
    def banner(self) -> str | None:
        """Runs that replayed different workloads compared side by side: said first, wherever shown."""
        prints = {run.label: run.fingerprint for run in self.runs}
        if len(set(prints.values())) < 2:
            return None
        shown = ", ".join(f"{label}: {(fp or 'not recorded')[:12]}" for label, fp in prints.items())
        return (
            f"These runs replayed different workloads (workload fingerprints {shown}): their differences "
            "mix the engines with the workloads, so no comparison here isolates the engine."
        )

    @property
    def prefix_cache(self) -> list[PrefixCacheView]:
        """Each engine's prefix-cache hit rates and TTFT by turn, as the console says them (first trials)."""
        return [
            view
            for run in self.runs
            for view in prefix_cache_views(
                {er.label: er.summary for er in run.primary()}, (run.metrics or {}).get("prefix_cache_predicted")
            )
        ]

    @property
    def title(self) -> str:
        return "batchmark report: " + " vs ".join(dict.fromkeys(run.workload_name for run in self.runs))


def analyse(run_dirs: list[Path] | Path, *, labels: list[str] | None = None) -> Analysis:
    """Load `run_dirs` (one directory or several), compare their engines, reach the verdict."""
    dirs = [Path(run_dirs)] if isinstance(run_dirs, str | Path) else [Path(p) for p in run_dirs]
    runs = load_runs(dirs, labels)
    series = [er for run in runs for er in run.primary()]
    comparisons = compare_runs(runs)
    return Analysis(
        runs, series, comparisons, verdict(runs, series, comparisons), series_colors([er.label for er in series])
    )
