"""Token-length distributions for synthetic workloads (input or output lengths).

Every draw is an int64 array of lengths >= 1 (a request cannot have an empty prompt or generate nothing),
except for a count that may be 0 (`parse_length(..., least=0)`: a spec's `reasoning_tokens`, where 0 is a plain
request); `min` / `max` clip where a distribution allows them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from workloads.errors import WorkloadError
from workloads.options import MAX_TOKENS


class LengthDist(Protocol):
    """A distribution of token lengths a synthetic tenant draws from."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray: ...
    def to_spec(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Fixed:
    """Every length the same."""

    value: int

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.value, dtype=np.int64)

    def to_spec(self) -> dict[str, Any]:
        return {"dist": "fixed", "value": self.value}


@dataclass(frozen=True)
class Uniform:
    """Lengths uniform between low and high, inclusive."""

    low: int
    high: int  # inclusive

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(self.low, self.high + 1, n, dtype=np.int64)

    def to_spec(self) -> dict[str, Any]:
        return {"dist": "uniform", "low": self.low, "high": self.high}


@dataclass(frozen=True)
class Normal:
    """Lengths from a normal distribution, rounded and clipped to [min, max]."""

    mean: float
    std: float
    min: int = 1
    max: int | None = None

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return _clip(np.rint(rng.normal(self.mean, self.std, n)), self.min, self.max)

    def to_spec(self) -> dict[str, Any]:
        return {"dist": "normal", "mean": self.mean, "std": self.std, "min": self.min, "max": self.max}


@dataclass(frozen=True)
class LogNormal:
    """Lengths from a log-normal distribution given its median and sigma, clipped to [min, max]."""

    median: float  # exp(mu): easier to pick than mu
    sigma: float
    min: int = 1
    max: int | None = None

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return _clip(np.rint(rng.lognormal(np.log(self.median), self.sigma, n)), self.min, self.max)

    def to_spec(self) -> dict[str, Any]:
        return {"dist": "lognormal", "median": self.median, "sigma": self.sigma, "min": self.min, "max": self.max}


@dataclass(frozen=True)
class Empirical:
    """Lengths resampled from a bundled trace's input or output column."""

    trace: str  # a bundled trace name
    field: str  # "input" or "output"

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        from workloads.bundled import read_bundled

        pool = read_bundled(self.trace).frame[f"{self.field}_tokens"].to_numpy()
        return rng.choice(pool, n).astype(np.int64)

    def to_spec(self) -> dict[str, Any]:
        return {"dist": "empirical", "trace": self.trace, "field": self.field}


@dataclass(frozen=True)
class Mixture:
    """Lengths from several distributions, each chosen with its weight."""

    weights: tuple[float, ...]  # normalised to sum to 1
    components: tuple[LengthDist, ...]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        which = rng.choice(len(self.components), n, p=np.asarray(self.weights))
        out = np.empty(n, dtype=np.int64)
        for i, component in enumerate(self.components):
            mask = which == i
            out[mask] = component.sample(rng, int(mask.sum()))
        return out

    def to_spec(self) -> dict[str, Any]:
        return {
            "dist": "mixture",
            "components": [{"weight": w, **c.to_spec()} for w, c in zip(self.weights, self.components, strict=True)],
        }


def _clip(values: np.ndarray, low: int, high: int | None) -> np.ndarray:
    # MAX_TOKENS is a backstop: parse_length refuses parameters that reach it, so only a freak draw is cut,
    # and nothing overflows int64 (a lognormal median of 1e308 once gave lengths of -9.2e18)
    top = MAX_TOKENS if high is None else min(high, MAX_TOKENS)
    # `low` is the parsed `min`, at least `parse_length`'s `least` (1 for lengths; the dataclasses default to 1)
    return np.clip(np.nan_to_num(values, nan=low, posinf=top), low, top).astype(np.int64)


KEYS = {
    "fixed": {"value"},
    "uniform": {"low", "high"},
    "normal": {"mean", "std", "min", "max"},
    "lognormal": {"median", "sigma", "min", "max"},
    "empirical": {"trace", "field"},
    "mixture": {"components"},
}


def parse_length(value: Any, field: str, *, least: int = 1) -> LengthDist:
    """From a spec value: a bare integer (fixed) or a table with `dist` and its parameters. Every draw is
    >= `least`: 1 for a length; 0 for a count such as `reasoning_tokens` (its integer parameters may be 0)."""

    def fail(what: str, key: str | None = None) -> WorkloadError:
        return WorkloadError(what, field=f"{field}.{key}" if key else field)

    def number(table: dict[str, Any], key: str, *, integer: bool = False, positive: bool = True) -> Any:
        if key not in table:
            raise fail(f"missing {key!r}", key)
        v = table[key]
        positive = positive and not (integer and least == 0)  # a count's value, low, high, min, max may be 0
        ok = isinstance(v, int) if integer else isinstance(v, int | float)
        if isinstance(v, bool) or not ok or (positive and not v > 0) or (not positive and not v >= 0):
            kind = "an integer" if integer else "a number"
            raise fail(f"expected {kind} {'> 0' if positive else '>= 0'}, found {v!r}", key)
        if not v <= MAX_TOKENS:  # NaN and inf fail here too
            raise fail(f"must be <= {MAX_TOKENS:,} tokens, found {v!r}", key)
        return v

    if isinstance(value, int) and not isinstance(value, bool):
        value = {"dist": "fixed", "value": value}
    if not isinstance(value, dict):
        raise fail(f"expected a token count or a table with 'dist', found {value!r}")
    dist = value.get("dist")
    if dist not in KEYS:
        raise fail(f"unknown dist {dist!r}; expected one of {', '.join(KEYS)}", "dist")
    extra = sorted(set(value) - KEYS[dist] - {"dist", "weight"})
    if extra:
        raise fail(f"unknown key {extra[0]!r} for dist {dist!r}; expected {', '.join(sorted(KEYS[dist]))}", extra[0])
    low = number(value, "min", integer=True) if "min" in value else least
    high = number(value, "max", integer=True) if value.get("max") is not None else None
    if dist == "fixed":
        return Fixed(number(value, "value", integer=True))
    if dist == "uniform":
        lo, hi = number(value, "low", integer=True), number(value, "high", integer=True)
        if hi < lo:
            raise fail(f"high ({hi}) is below low ({lo})", "high")
        return Uniform(lo, hi)
    if dist == "normal":
        normal = Normal(float(number(value, "mean")), float(number(value, "std", positive=False)), low, high)
        _bounded_tail(normal.mean + 6 * normal.std, high, fail)
        return normal
    if dist == "lognormal":
        sigma = float(number(value, "sigma", positive=False))
        if sigma > 20:
            raise fail(f"must be <= 20 (a spread of e^20 in lengths), found {sigma!r}", "sigma")
        lognormal = LogNormal(float(number(value, "median")), sigma, low, high)
        _bounded_tail(lognormal.median * math.exp(6 * sigma), high, fail)
        return lognormal
    if dist == "empirical":
        return _parse_empirical(value, field, fail)
    return _parse_mixture(value, field, fail, least)


def _bounded_tail(far: float, high: int | None, fail: Any) -> None:
    """Without a `max`, the far tail (6 sd) must stay below MAX_TOKENS, or draws would be cut there silently."""
    if high is None and far > MAX_TOKENS:
        raise fail(f"draws would reach {far:.3g} tokens, above {MAX_TOKENS:,}: set max")


def _parse_empirical(value: dict[str, Any], field: str, fail: Any) -> Empirical:
    from workloads.bundled import BUNDLED

    trace = value.get("trace")
    if trace not in BUNDLED:
        raise fail(f"unknown trace {trace!r}; expected one of {', '.join(BUNDLED)}", "trace")
    # Default to the slot being filled, also inside a mixture ("tenants[0].output.components[1]").
    role = value.get("field", "output" if "output" in field.split(".") else "input")
    if role not in ("input", "output"):
        raise fail(f"expected 'input' or 'output', found {role!r}", "field")
    return Empirical(trace, role)


def _parse_mixture(value: dict[str, Any], field: str, fail: Any, least: int) -> Mixture:
    parts = value.get("components")
    if not isinstance(parts, list) or not parts:
        raise fail("a mixture needs a non-empty list of components", "components")
    weights = []
    for i, part in enumerate(parts):
        w = part.get("weight") if isinstance(part, dict) else None
        if isinstance(w, bool) or not isinstance(w, int | float) or not w > 0:
            raise fail(f"component {i} needs a weight > 0, found {w!r}", "components")
        weights.append(float(w))
    components = tuple(parse_length(p, f"{field}.components[{i}]", least=least) for i, p in enumerate(parts))
    total = sum(weights)
    return Mixture(tuple(w / total for w in weights), components)
