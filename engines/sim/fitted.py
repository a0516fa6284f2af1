"""The fitted cost model: step time as a linear function of the step's work, fitted on a real trace.

    step = c0 + c_p x prefill tokens + c_c x prefill chunks + c_d x decode sequences
              + c_pp x prompt pad rows + c_h x held rows                      (rows through the layers)
              + c_dk x keys read by one-row chunks                            (the paged kernel: decode, held)
              + c_s x pairs among a prefill chunk's own rows, pad included    (causal / masked SDPA)
              + c_x x prefill chunk rows x their earlier context              (chunk x context: chunked prefill)

Version 3 (issue 30) makes the decode price piecewise-linear in context: the keys read by one-row chunks are split
at fixed knots, each segment priced on its own (each price >= 0, so the price never falls with context, but it
may bend either way), in place of the one `c_dk`:
              + c_dk0 x keys up to 256 a row + c_dk1 x keys 256..1,024 a row + c_dk2 x keys past 1,024 a row
One line in context did not fit single-sequence decode on the second fidelity suite's fit run (-17% to +18%
across context bins, the fixed cost per step inflated to make up for it). The knots are fixed in advance from the
embedded model's cache against this machine's L2 (2 MiB a core), not fitted: a token's K and V take 2 KiB a layer
(8 KiB over the 4 layers), so a sequence's whole cache leaves L2 past 256 tokens, and one layer's past 1,024. The
trace records only the sum of a step's one-row keys and its count of one-row chunks (decode rows and held slots),
so the split is of rows at the step's mean context (exact for one row, and for rows all within one segment).
Profiles of versions 1 and 2 still load and price as before.

Each attention term is the work of one kernel as `engines.model_runner` runs it (`engines.step_features`
counts them): a static batch's prompts padded to the longest are one causal SDPA over the padded rows, so
its prefill pairs count the pad rows' pairs too, and its per-pair price is the continuous engine's, not a
price that soaks up the padding. Profiles of version 1 priced every pair alike (`attended_context`); they
still load and run, and say which features they do not know.

Non-negative least squares (scipy's NNLS) on every traced step of a batchmark run, in-process or
served: each trace record carries the step's counts and its measured duration. A feature that is zero
throughout the trace (no static batch, so no pad rows) says nothing about its price; it is priced as its
nearest measured kin (a prompt's pad row as a prefill token, a held slot's row as a decode sequence, a
context pair as a chunk's own pair: what the in-process runner computes for them) and the profile says so.
A feature that varies too little to separate from the others is an error naming it. The time between
back-to-back steps (publishing events, writing the trace) is measured too and added after every simulated
step, and what the model leaves unexplained is kept to be replayed (`engines.sim.noise`). The span of each
regressor over the fitted steps is kept too: beyond it the fit extrapolates (`engines.sim.fit_range` counts
such steps).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engines.errors import EngineInputError
from engines.sim.files import read_json_object
from engines.sim.noise import STEP_CLASSES, keep_blocks, step_class, step_noise
from engines.sim.shape_speed import shape_levels
from engines.step_features import FEATURE_NAMES, StepFeatures

MAX_STEP_S = 1e6  # no step, nor any one regressor's share of it, takes eleven days

PROFILE_VERSION = 3
REGRESSORS_V2 = (
    "prefill_tokens",
    "prefill_chunks",
    "decode_seqs",
    "prompt_pad_rows",
    "held_rows",
    "decode_context",
    "prefill_self_pairs",
    "prefill_context_pairs",
)
# version 3: the decode price bends where a row's cache leaves L2 (the module's docstring); fixed, not fitted
DECODE_KNOTS = (256, 1024)
SEGMENTS = ("decode_context_to_256", "decode_context_256_1024", "decode_context_past_1024")
REGRESSORS = tuple(n for n in REGRESSORS_V2 if n != "decode_context") + SEGMENTS


def decode_segments(keys: Any, rows: Any) -> tuple[Any, Any, Any]:
    """`keys` read by `rows` one-row chunks split at DECODE_KNOTS, each row at the mean context (numbers or arrays)."""
    low, high = DECODE_KNOTS
    first = np.minimum(keys, low * rows)
    last = np.maximum(0, keys - high * rows)
    return first, keys - first - last, last


# version 1: every attention pair at one price; a profile of it (or a fit on a trace without the split) lacks these
REGRESSORS_V1 = ("prefill_tokens", "prefill_chunks", "decode_seqs", "attended_context", "prompt_pad_rows", "held_rows")
FORMS = {1: REGRESSORS_V1, 2: REGRESSORS_V2, 3: REGRESSORS}
SPLIT_FEATURES = ("decode_context", "prefill_self_pairs", "prefill_context_pairs")
# the attention kernels' prices of each split form (what `sim fit --attention-from` takes from another profile)
ATTENTION = {2: SPLIT_FEATURES, 3: ("prefill_self_pairs", "prefill_context_pairs", *SEGMENTS)}
# the price of a feature never seen: what the runner computes for it
KIN = {"prompt_pad_rows": "prefill_tokens", "held_rows": "decode_seqs", "prefill_context_pairs": "prefill_self_pairs"}
MIN_STEPS = 50
MIN_DISTINCT = 2  # one value is no variation; two fit a slope (a continuous engine at low load: 0 or 1 prefill chunk)
_F = {name: i for i, name in enumerate(FEATURE_NAMES)}


def regressors(features: np.ndarray, version: int = PROFILE_VERSION) -> np.ndarray:
    """The regressor columns of step features (rows of FEATURE_NAMES) in `version`'s form: prompt pad rows
    are the pad rows that are not held slots."""
    f = features.astype(np.float64)
    names = FORMS[version]
    columns = {name: f[:, _F[name]] for name in names if name != "prompt_pad_rows" and name not in SEGMENTS}
    columns["prompt_pad_rows"] = f[:, _F["padded_rows"]] - f[:, _F["held_rows"]]
    one_row = f[:, _F["decode_seqs"]] + f[:, _F["held_rows"]]
    columns.update(zip(SEGMENTS, decode_segments(f[:, _F["decode_context"]], one_row), strict=True))
    return np.column_stack([columns[name] for name in names])


@dataclass
class FittedCost:
    """A fitted profile: `step_time(features)` in seconds, plus the engine shape it was measured on."""

    intercept_s: float
    coefficients: dict[str, float]  # seconds per unit of each regressor
    step_gap_s: float = 0.0
    engine: dict[str, Any] = field(default_factory=dict)  # kv bytes per token, block size, model, context
    fit: dict[str, Any] = field(default_factory=dict)  # quality and provenance
    noise: dict[str, list[float]] = field(default_factory=dict)  # engines.sim.noise
    kind: str = "fitted"
    dispatch_s: float = 0.0  # arrival at an idle engine -> its admitting step starts (harness/simulation.py)
    # the form: 1 prices every attention pair alike (REGRESSORS_V1), 2 the decode keys at one price (REGRESSORS_V2);
    # a fit writes PROFILE_VERSION, a profile built by hand is version 2 unless it says otherwise
    version: int = 2

    def __post_init__(self) -> None:
        self.regressors = FORMS[self.version]
        if set(self.coefficients) - set(self.regressors):  # a price the form never charges would vanish unseen
            raise ValueError(
                f"coefficients {sorted(set(self.coefficients) - set(self.regressors))} are not "
                f"regressors of profile version {self.version}"
            )
        self._coef = tuple(float(self.coefficients.get(name, 0.0)) for name in self.regressors)

    def step_time(self, f: StepFeatures) -> float:
        if self.version == 1:
            p, c, d, a, pp, h = self._coef
            prefill, chunks, decode, pad, held, attended = f[:6]
            return (
                self.intercept_s + p * prefill + c * chunks + d * decode + a * attended + pp * (pad - held) + h * held
            )
        prefill, chunks, decode, pad, held = f[:5]
        if self.version == 2:
            p, c, d, pp, h, dk, s, x = self._coef
            return (
                self.intercept_s
                + p * prefill
                + c * chunks
                + d * decode
                + pp * (pad - held)
                + h * held
                + dk * f.decode_context
                + s * f.prefill_self_pairs
                + x * f.prefill_context_pairs
            )
        p, c, d, pp, h, s, x, k0, k1, k2 = self._coef
        # decode_segments' split in plain scalars: this runs once per simulated step, numpy's scalar calls would
        # cost more than the step's whole price (tests/sim/test_profile_v3.py checks the two agree)
        keys = f.decode_context
        low, high = DECODE_KNOTS
        first = min(keys, low * (decode + held))
        last = max(0, keys - high * (decode + held))
        return (
            self.intercept_s
            + p * prefill
            + c * chunks
            + d * decode
            + pp * (pad - held)
            + h * held
            + k0 * first
            + k1 * (keys - first - last)
            + k2 * last
            + s * f.prefill_self_pairs
            + x * f.prefill_context_pairs
        )

    def price_steps(self, features: np.ndarray) -> np.ndarray:
        """Each step's price, noise aside, for rows of FEATURE_NAMES (`step_time` on arrays)."""
        return self.intercept_s + regressors(features, self.version) @ np.asarray(self._coef)

    def regressor_values(self, f: StepFeatures) -> tuple[int, ...]:
        """The step's value of each regressor, in `self.regressors`' order."""
        prefill, chunks, decode, pad, held, attended = f[:6]
        if self.version == 1:
            return prefill, chunks, decode, attended, pad - held, held
        if self.version == 2:
            return (
                prefill,
                chunks,
                decode,
                pad - held,
                held,
                f.decode_context,
                f.prefill_self_pairs,
                f.prefill_context_pairs,
            )
        segments = tuple(int(v) for v in decode_segments(f.decode_context, decode + held))
        return (prefill, chunks, decode, pad - held, held, f.prefill_self_pairs, f.prefill_context_pairs, *segments)

    @property
    def unknown_features(self) -> tuple[str, ...]:
        """The features this profile's form cannot price apart ("feature unknown"): a version-1 profile's
        attention is one term."""
        return () if self.version >= 2 else SPLIT_FEATURES

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "profile_version": self.version,
            "intercept_s": self.intercept_s,
            "coefficients": self.coefficients,
            "step_gap_s": self.step_gap_s,
            "dispatch_s": self.dispatch_s,
            "engine": self.engine,
            "fit": self.fit,
            "noise": self.noise,
        }

    def describe(self) -> dict[str, Any]:
        described = self.to_json()
        described["noise"] = {k: f"{len(v)} values" for k, v in self.noise.items()}  # the manifest stays small
        return described

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2, allow_nan=False) + "\n", encoding="utf-8")


def load_profile(path: str | Path) -> FittedCost:
    path = Path(path)
    data = read_json_object(path, "profile")
    if data.get("kind") != "fitted":
        raise EngineInputError(f"{path}: not a batchmark step-time profile (write one with `batchmark sim fit`)")
    version = data.get("profile_version")
    if version not in FORMS or isinstance(version, bool):
        raise EngineInputError(f"{path}: profile_version {version!r}, expected one of {', '.join(map(str, FORMS))}")
    names = FORMS[version]
    coefficients = data.get("coefficients")
    if not isinstance(coefficients, dict) or set(coefficients) - set(names):
        raise EngineInputError(f"{path}: field 'coefficients' must map {', '.join(names)} to seconds")
    # a fit is non-negative (nnls): a negative or NaN time would run virtual time backwards or poison every sum
    seconds = {f"coefficients.{k}": v for k, v in coefficients.items()}
    seconds.update({key: data.get(key) for key in ("intercept_s", "step_gap_s")})
    seconds["dispatch_s"] = data.get("dispatch_s", 0.0)  # a profile written before it was measured: none
    for key, value in seconds.items():
        # bounded, not only finite: a JSON integer is exact, so 10**400 < inf held and float() overflowed later
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_STEP_S:
            raise EngineInputError(f"{path}: field {key!r} must be seconds 0..{MAX_STEP_S:g}, got {value!r}")
    dispatch = seconds["dispatch_s"]
    fit = data.get("fit") or {}
    if not isinstance(fit, dict):
        raise EngineInputError(f"{path}: field 'fit' must be an object")
    try:
        read_ranges(fit, names)  # checked here, so a bad range is one line before any step runs
    except EngineInputError as exc:
        raise EngineInputError(f"{path}: {exc}") from None
    noise = data.get("noise") or {}
    if not isinstance(noise, dict) or not all(isinstance(v, list) for v in noise.values()):
        raise EngineInputError(f"{path}: field 'noise' must map series names to lists of numbers")
    factors = noise.get("step_class_factors")
    bins = sum(1 for key in noise if key.startswith("step_ratio_"))
    if factors is not None and (
        len(factors) != bins * STEP_CLASSES
        or not all(isinstance(f, int | float) and not isinstance(f, bool) and 0 < f < math.inf for f in factors)
    ):
        raise EngineInputError(
            f"{path}: field 'noise.step_class_factors' must hold {bins * STEP_CLASSES} positive numbers "
            f"({STEP_CLASSES} per step_ratio_ bin), got {len(factors)} values"
        )
    return FittedCost(
        float(data["intercept_s"]),
        {k: float(v) for k, v in coefficients.items()},
        float(data["step_gap_s"]),
        data.get("engine") or {},
        fit,
        noise,
        dispatch_s=float(dispatch),
        version=version,
    )


@dataclass
class TraceSteps:
    """Steps of one or more traces as arrays: features (n x len(FEATURE_NAMES)), durations, gaps."""

    features: np.ndarray
    duration_s: np.ndarray
    gaps_s: np.ndarray  # time from a step's end to the next one's start, where the engine had work left
    sources: list[str]
    split: bool = True  # every trace counts the attention by kernel (SPLIT_FEATURES); else the fit is version 1


def fit_steps(steps: TraceSteps, fixed: Mapping[str, float] | None = None, version: int | None = None) -> FittedCost:
    """Non-negative least squares of duration on the regressors; errors name an unusable feature. `fixed` prices
    some regressors beforehand (seconds per unit, e.g. the attention kernels' prices from another engine's fit on
    the same model): their share is taken off each step and the rest is fitted. `version` fits an older form
    (2: one decode price in context); a trace without the attention split fits version 1 whatever it says. Asked
    for no version, a trace whose decode rows never split at the knots apart from their count (every step's mean
    context past 256, so its first segment is 256 x the rows) fits version 2 and the profile says why."""
    if version is not None or not steps.split:
        return _fit_form(steps, fixed, version or PROFILE_VERSION)
    try:
        return _fit_form(steps, fixed, PROFILE_VERSION)
    except _Dependent as exc:
        try:
            profile = _fit_form(steps, fixed, 2)
        except _Dependent:
            raise exc from None
        profile.fit["form"] = f"version 2: {exc.used} are linearly dependent in the version-3 form"
        return profile


class _Dependent(EngineInputError):
    def __init__(self, message: str, used: str) -> None:
        super().__init__(message)
        self.used = used


def _fit_form(steps: TraceSteps, fixed: Mapping[str, float] | None, version: int) -> FittedCost:
    from scipy.optimize import nnls

    n = len(steps.duration_s)
    where = ", ".join(steps.sources)
    if n < MIN_STEPS:
        raise EngineInputError(f"sim fit: {where}: {n} traced steps with features, need at least {MIN_STEPS}")
    version = version if steps.split else 1
    if version not in FORMS:
        raise EngineInputError(f"sim fit: profile version {version}, expected one of {', '.join(map(str, FORMS))}")
    names = FORMS[version]
    fixed = dict(fixed or {})
    if set(fixed) - set(names):
        raise EngineInputError(
            f"sim fit: {where}: cannot fix {', '.join(sorted(set(fixed) - set(names)))}: "
            f"the traces fit the version-{version} form ({', '.join(names)})"
        )
    x_all = regressors(steps.features, version)
    known = x_all @ np.array([fixed.get(name, 0.0) for name in names])  # the fixed terms' share of each step
    columns = [np.ones(n)]
    used: list[str] = []
    absent: list[str] = []
    for name, values in zip(names, x_all.T, strict=True):
        if name in fixed:
            continue
        if not values.any():
            absent.append(name)
            continue
        distinct = np.unique(values).size
        if distinct < MIN_DISTINCT:
            raise EngineInputError(
                f"sim fit: {where}: feature {name!r} has no variation to fit ({distinct} distinct value"
                f"{'s' if distinct != 1 else ''} over {n} steps); record a run with more varied load"
            )
        used.append(name)
        columns.append(values)
    x = np.column_stack(columns)
    scale = np.abs(x).max(axis=0)
    # unweighted: the mean step, so throughput, is unbiased
    solution, _ = nnls(x / scale, steps.duration_s - known)
    coef = solution / scale
    if np.linalg.matrix_rank(x / scale) < x.shape[1]:
        raise _Dependent(
            f"sim fit: {where}: features {', '.join(used)} are linearly dependent here; "
            "record a run that mixes prefill and decode",
            ", ".join(used),
        )
    predicted = x @ coef + known
    resid = steps.duration_s - predicted
    total = float(np.sum((steps.duration_s - steps.duration_s.mean()) ** 2))
    coefficients = {name: 0.0 for name in names} | {name: float(v) for name, v in fixed.items()}
    coefficients.update({name: float(c) for name, c in zip(used, coef[1:], strict=True)})
    borrowed = {name: KIN[name] for name in absent if name in KIN and KIN[name] not in absent}
    for name, kin in borrowed.items():  # a row nobody measured costs what the row it computes like costs
        coefficients[name] = coefficients[kin]
    gap = _mean_gap(steps.gaps_s)
    fit = {
        "steps": n,
        "sources": steps.sources,
        "regressors": used,
        "fixed": sorted(fixed),
        "absent": absent,
        "borrowed": borrowed,
        "r2": 1.0 - float(np.sum(resid**2)) / total if total > 0 else None,
        "rmse_s": float(np.sqrt(np.mean(resid**2))),
        "mean_step_s": float(steps.duration_s.mean()),
        "total_error": float(predicted.sum() / steps.duration_s.sum() - 1.0),
        "back_to_back_gaps": int(steps.gaps_s.size),
        "ranges": fitted_ranges(x_all, names),
        "unknown": [] if steps.split else list(SPLIT_FEATURES),
        "padding": padding_shares(steps.features),
        # the fit runs' level at each step shape: a later run's speed against them (engines/sim/shape_speed.py)
        "shape_levels": shape_levels(steps.features, steps.duration_s, predicted),
    }
    rows = steps.features[:, _F["decode_seqs"]] + steps.features[:, _F["held_rows"]]
    classes = np.array([step_class(p, r) for p, r in zip(steps.features[:, _F["prefill_tokens"]], rows, strict=True)])
    noise = step_noise(predicted, steps.duration_s, classes)
    if steps.gaps_s.size:
        noise["gap_s"] = keep_blocks(steps.gaps_s)
    return FittedCost(float(coef[0]), coefficients, gap, {}, fit, noise, version=version)


def padding_shares(features: np.ndarray) -> dict[str, float | None]:
    """How much of what the fitted steps computed was padding: the share of prefill rows that were prompt pad
    rows, and of prefill attention pairs that were pad rows' (None: the trace has no such work)."""
    f = features.astype(np.float64)
    pad_rows = float((f[:, _F["padded_rows"]] - f[:, _F["held_rows"]]).sum())
    rows = pad_rows + float(f[:, _F["prefill_tokens"]].sum())
    pairs = float(f[:, _F["prefill_self_pairs"]].sum() + f[:, _F["prefill_context_pairs"]].sum())
    return {
        "prefill_rows": pad_rows / rows if rows else None,
        "prefill_pairs": float(f[:, _F["pad_pairs"]].sum()) / pairs if pairs else None,
    }


def fitted_ranges(columns: np.ndarray, names: tuple[str, ...] = REGRESSORS) -> dict[str, dict[str, float]]:
    """Per regressor (columns of `regressors`, named `names`): its smallest non-zero and its largest value over the
    fitted steps (0, 0: never seen). Beyond the largest the fit extrapolates (`engines.sim.fit_range` counts such
    steps)."""
    ranges = {}
    for name, values in zip(names, columns.T, strict=True):
        nonzero = values[values > 0]
        ranges[name] = {"min": float(nonzero.min()) if nonzero.size else 0.0, "max": float(values.max())}
    return ranges


def read_ranges(fit: dict[str, Any], names: tuple[str, ...] = REGRESSORS) -> dict[str, tuple[float, float]] | None:
    """The (min, max) per regressor (`names`: the profile's form) a profile's `fit` table records; None: written
    before ranges were."""
    ranges = fit.get("ranges")
    if ranges is None:
        return None
    try:
        out = {name: (float(ranges[name]["min"]), float(ranges[name]["max"])) for name in names}
    except (KeyError, TypeError, ValueError):
        raise EngineInputError(f"field 'fit.ranges' must map {', '.join(names)} to {{min, max}}") from None
    if not all(0 <= low <= high < math.inf for low, high in out.values()):
        raise EngineInputError("field 'fit.ranges': every range must be 0 <= min <= max, finite")
    return out


def _mean_gap(gaps: np.ndarray) -> float:
    """Mean gap between back-to-back steps, the slowest 1% left out (a pause of the shared machine,
    not the loop's cost)."""
    if gaps.size == 0:
        return 0.0
    keep = gaps[gaps <= np.percentile(gaps, 99)]
    return float(max(0.0, keep.mean()))
