"""How often, and how far, a simulated engine's steps fell outside the range its fitted profile was measured
on (`engines.sim.fit_range` counts them; the manifest carries the counts): one warning line, or none."""

from __future__ import annotations

from typing import Any

from engines.sim.fit_range import LABELS


def range_check(engine: dict[str, Any]) -> dict[str, Any] | None:
    """The engine's range check, or None: not a fitted profile, or no step counted (a description taken before
    the run, or a manifest written before the check existed)."""
    check = (engine.get("cost_model") or {}).get("range_check")
    return check if isinstance(check, dict) and check.get("steps") else None


def range_unknown(engine: dict[str, Any]) -> bool:
    """The engine ran on a profile that records no fitted range (written before ranges were)."""
    check = range_check(engine)
    return check is not None and check.get("fitted") is None


def features_unknown(engine: dict[str, Any]) -> str | None:
    """For an engine on a version-1 profile (every attention pair at one price): the features it does not know,
    or None."""
    from engines.sim.fitted import FORMS, SPLIT_FEATURES

    cost = engine.get("cost_model") or {}
    version = cost.get("profile_version")
    if cost.get("kind") != "fitted" or version not in FORMS or version >= 2:
        return None
    return ", ".join(SPLIT_FEATURES)


def range_text(engine: dict[str, Any]) -> str | None:
    """'prefill tokens per step up to 512 vs fitted 16-64 (8.0x) in 12% of steps (40 of 333): extrapolated',
    one clause per regressor beyond its fitted maximum; None when every step was inside (or nothing is known)."""
    check = range_check(engine)
    if check is None or check.get("fitted") is None or not check.get("outside"):
        return None
    clauses = []
    for name, out in check["outside"].items():
        low, high = check["fitted"][name]
        fitted = f"fitted {low:,.0f}-{high:,.0f} ({out['ratio']:.1f}x)" if out.get("ratio") else "never seen in the fit"
        clauses.append(
            f"{LABELS.get(name, name)} up to {out['largest']:,.0f} vs {fitted} in {_share(out['share'])} "
            f"of steps ({out['steps']} of {check['steps']})"
        )
    return "; ".join(clauses) + ": extrapolated"


def _share(share: float) -> str:
    return f"{share:.0%}" if share >= 0.01 else f"{share:.2%}"
