"""The validation table: each row's error, then the median error and share within 10% per group.

error = predicted / measured - 1 (negative: the model is too fast). Groups: source x regime, decode
context, tensor-parallel degree, accelerator, and the totals. Rows a calibration was fitted on are
kept apart: its "held-out" columns count only rows it never saw.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError
from harness.gpu_truth.predict import ORDER, CostChoice, context_regime, predict_ms, regime
from harness.gpu_truth.rows import DEFAULT_DIR, TruthRow

WITHIN = 0.10


@dataclass(frozen=True)
class Scored:
    row: TruthRow
    predicted_ms: float
    seen: bool  # among the rows the cost model was fitted on

    @property
    def error(self) -> float:
        return self.predicted_ms / self.row.ms - 1.0


@dataclass(frozen=True)
class Group:
    section: str
    key: str
    n: int
    median_error: float | None  # signed: which way the model leans
    median_abs: float | None
    within: float | None  # share of rows within 10%
    held_n: int
    held_median_error: float | None
    held_median_abs: float | None
    held_within: float | None

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()


def score(rows: Iterable[TruthRow], choice: CostChoice, directory: Path = DEFAULT_DIR) -> list[Scored]:
    return [Scored(r, predict_ms(r, choice.params_for(r.source), directory), choice.saw(r)) for r in rows]


def _stats(errors: list[float]) -> tuple[float | None, float | None, float | None]:
    if not errors:
        return None, None, None
    absolute = [abs(e) for e in errors]
    return statistics.median(errors), statistics.median(absolute), sum(a <= WITHIN for a in absolute) / len(errors)


def _group(section: str, key: str, scored: list[Scored]) -> Group:
    signed, absolute, within = _stats([s.error for s in scored])
    held = [s.error for s in scored if not s.seen]
    held_signed, held_abs, held_within = _stats(held)
    return Group(section, key, len(scored), signed, absolute, within, len(held), held_signed, held_abs, held_within)


SECTIONS: tuple[tuple[str, Callable[[TruthRow], str | None]], ...] = (
    ("source / regime", lambda r: f"{r.source} {r.origin}: {regime(r)}"),
    ("decode by context", context_regime),
    ("tensor parallel", lambda r: f"tp {r.tp}" if r.kind != "layer" else f"tp {r.tp} (layer GEMMs)"),
    ("accelerator", lambda r: r.hardware),
    ("phase", lambda r: r.phase or r.kind),
    ("accelerator / phase", lambda r: f"{r.hardware} {r.phase or r.kind}"),
)


def _order(key: str) -> tuple[str, int, str]:
    """Sources alphabetically, then regimes in ORDER, then the rest (tp 2 before tp 8: by number)."""
    for i, label in enumerate(ORDER):
        if key.endswith(label):
            return key[: -len(label)], i, ""
    head, _, tail = key.partition(" ")
    return head, int(tail.split()[0]) if tail[:1].isdigit() else 0, key


def groups(scored: list[Scored]) -> list[Group]:
    out = []
    for section, key_of in SECTIONS:
        keyed: dict[str, list[Scored]] = {}
        for s in scored:
            key = key_of(s.row)
            if key is not None:
                keyed.setdefault(key, []).append(s)
        out.extend(_group(section, k, keyed[k]) for k in sorted(keyed, key=_order))
    out.append(_group("total", "measured rows", [s for s in scored if s.row.origin == "measured"]))
    out.append(_group("total", "all rows", scored))
    return out


def require_regimes(rows: list[TruthRow], directory: Path) -> None:
    """Each kind of row present must cover its regimes: a regime with no rows cannot be reported."""
    present = {regime(r) for r in rows}
    kinds = {r.kind for r in rows} | {f"step {r.phase}" for r in rows if r.kind == "step"}
    expected = {
        "step prefill": ["prefill short (<=512 tok)", "prefill mid (513-4096 tok)", "prefill long (>4096 tok)"],
        "step decode": ["decode batch 1", "decode batch 2-16", "decode batch 17-64"],
    }
    for kind, regimes in expected.items():
        if kind in kinds:
            for name in regimes:
                if name not in present:
                    raise HarnessInputError(f"{directory}: regime {name!r} has no rows; the table needs each")


def format_table(groups_: list[Group], label: str, has_seen: bool) -> str:
    head = f"{'':<52}{'rows':>5}{'median':>9}{'|median|':>10}{'<=10%':>7}"
    if has_seen:
        head += f"{'held-out':>10}{'|median|':>10}{'<=10%':>7}"
    lines = [f"validation of {label} against public GPU times (error = predicted / measured - 1)", head]
    section = None
    for g in groups_:
        if g.section != section:
            section = g.section
            lines.append(f"{section}:")
        text = f"  {g.key:<50}{g.n:>5}{_pct(g.median_error, '+'):>9}{_pct(g.median_abs):>10}{_pct(g.within):>7}"
        if has_seen:
            text += f"{g.held_n:>10}{_pct(g.held_median_abs):>10}{_pct(g.held_within):>7}"
        lines.append(text)
    if has_seen:
        lines.append(
            "held-out: rows the calibration was not fitted on (the other half of its hardware's rows, "
            "every row of other hardware, and every mixed step)"
        )
    lines.append(
        "fit: values from the source's fitted formula, not single measurements (tests/fixtures/gpu_truth/SOURCE.md)"
    )
    return "\n".join(lines)


def _pct(value: float | None, sign: str = "") -> str:
    return "n/a" if value is None else f"{value:{sign}.0%}"
