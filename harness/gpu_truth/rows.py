"""The truth files (tests/fixtures/gpu_truth/, SOURCE.md there): step times, one layer's GEMMs, all-reduces.

Every file is read and checked before anything is predicted: a missing column, a value of the wrong type
or a model without a config is one line naming the file, row and field.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

from engines.errors import EngineInputError
from engines.sim.shape import ModelShape, load_shape
from harness.errors import HarnessInputError

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "gpu_truth"
PHASES = ("prefill", "decode")
ORIGINS = ("measured", "fit")


@dataclass(frozen=True)
class TruthRow:
    """One published time. `kind`: a whole step, one layer's GEMMs, or one all-reduce."""

    id: str
    kind: str  # "step", "mixed" (a chunk and decodes in one step), "layer" or "allreduce"
    source: str
    origin: str  # "measured", or "fit": a value computed from the source's fitted formula
    hardware: str
    tp: int
    ms: float
    model: str = ""  # step and layer rows
    phase: str = ""  # step rows: prefill or decode; mixed rows: mixed
    batch: int = 1  # step rows: sequences in the step; mixed rows: the decodes beside the chunk
    tokens: int = 1  # step rows: tokens per sequence (1 for decode); layer rows: GEMM rows; mixed: the chunk's
    context: int = 0  # decode rows: the mean cached context per sequence; mixed rows: the chunk's cached prefix
    decode_context: int = 0  # mixed rows: each decode's cached context
    nbytes: int = 0  # all-reduce rows: bytes per device

    @property
    def held_out(self) -> bool:
        """The split, fixed before any fit: a row is held out when its id's SHA-256 starts with an odd byte."""
        return hashlib.sha256(self.id.encode()).digest()[0] % 2 == 1


# file -> (kind, required columns and their types); every row but an all-reduce's (no model) starts with where
# it was measured
WHERE_COLUMNS: dict[str, type] = {"id": str, "source": str, "origin": str, "hardware": str, "model": str, "tp": int}
STEP_COLUMNS = {
    **WHERE_COLUMNS,
    "phase": str,
    "batch": int,
    "tokens": int,
    "context": int,
    "ms": float,
}
FILES: dict[str, tuple[str, dict[str, type]]] = {
    "steps.csv": ("step", STEP_COLUMNS),
    "batchmark-steps.csv": ("step", STEP_COLUMNS),  # measured here by `python -m harness.gpu_truth.probe`
    "batchmark-mixed.csv": (
        "mixed",
        {**WHERE_COLUMNS, "tokens": int, "context": int, "batch": int, "decode_context": int, "ms": float},
    ),
    "layers.csv": (
        "layer",
        {**WHERE_COLUMNS, "tokens": int, "ms": float},
    ),
    "allreduce.csv": (
        "allreduce",
        {"id": str, "source": str, "origin": str, "hardware": str, "tp": int, "bytes": int, "ms": float},
    ),
}


def load_truth(directory: Path = DEFAULT_DIR) -> list[TruthRow]:
    """Every row of the truth files under `directory` (each file optional, at least one present)."""
    if not directory.is_dir():
        raise HarnessInputError(f"{directory}: not a directory of truth files ({', '.join(FILES)})")
    rows: list[TruthRow] = []
    for name, (kind, columns) in FILES.items():
        path = directory / name
        if path.is_file():
            rows.extend(_read(path, kind, columns))
    if not rows:
        raise HarnessInputError(f"{directory}: no truth rows (expected {', '.join(FILES)})")
    ids = [r.id for r in rows]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise HarnessInputError(f"{directory}: row id {dup!r} appears twice")
    return rows


def _read(path: Path, kind: str, columns: dict[str, type]) -> list[TruthRow]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise HarnessInputError(f"{path}: missing column {missing[0]!r} (needs {', '.join(columns)})")
        rows = []
        for line, raw in enumerate(reader, start=2):
            values = {c: _value(raw.get(c), t, path, line, c) for c, t in columns.items()}
            rows.append(_row(values, kind, path, line))
    return rows


def _value(text: str | None, kind: type, path: Path, line: int, column: str) -> object:
    try:
        value = kind((text or "").strip())
    except ValueError:
        value = None
    if value is None or value == "" or (kind is not str and value <= 0 and column != "context"):
        raise HarnessInputError(f"{path}:{line}: field {column!r} {text!r} is not a positive {kind.__name__}")
    return value


def _row(v: dict, kind: str, path: Path, line: int) -> TruthRow:
    if v["origin"] not in ORIGINS:
        raise HarnessInputError(f"{path}:{line}: field 'origin' {v['origin']!r} is not one of {', '.join(ORIGINS)}")
    if kind == "step" and v["phase"] not in PHASES:
        raise HarnessInputError(f"{path}:{line}: field 'phase' {v['phase']!r} is not one of {', '.join(PHASES)}")
    common = {k: v[k] for k in ("id", "source", "origin", "hardware", "tp", "ms")}
    if kind == "allreduce":
        return TruthRow(kind=kind, nbytes=v["bytes"], **common)
    if kind == "layer":
        return TruthRow(kind=kind, model=v["model"], tokens=v["tokens"], **common)
    if kind == "mixed":
        return TruthRow(
            kind=kind,
            model=v["model"],
            phase="mixed",
            batch=v["batch"],
            tokens=v["tokens"],
            context=v["context"],
            decode_context=v["decode_context"],
            **common,
        )
    return TruthRow(
        kind=kind,
        model=v["model"],
        phase=v["phase"],
        batch=v["batch"],
        tokens=v["tokens"],
        context=v["context"],
        **common,
    )


def model_shape(name: str, directory: Path = DEFAULT_DIR) -> ModelShape:
    """The truth folder's models/NAME.json, else a config the simulator ships; neither: one line."""
    local = directory / "models" / f"{name}.json"
    try:
        return load_shape(str(local) if local.is_file() else name)
    except EngineInputError as e:
        raise HarnessInputError(f"{directory}: model {name!r}: {e}") from None
