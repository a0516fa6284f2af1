"""Run validity: conditions under which the numbers of a run should not be trusted as they stand.

Each flag names the check, how many requests tripped it, a few example request ids and a message
saying what it means. A run with flags is still summarised: the flags travel with the numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.frame import list_lengths
from harness.metrics.latency import succeeded

DEFAULT_LAG_THRESHOLD_S = 0.005  # in-process load generator; an HTTP client may need more
PROMPT_TOLERANCE = 1  # tokens: a BOS added by the server is not a wrong prompt
MAX_EXAMPLES = 5
CHECKS = (
    "schedule_lag",
    "ignore_eos_length",
    "output_token_count",
    "output_over_max_tokens",
    "prompt_token_count",
    "token_times_count",
    "truncated_records",
)


@dataclass(frozen=True)
class ValidityFlag:
    """A reason to distrust a run's numbers, with how many requests show it and examples."""

    name: str
    count: int
    message: str
    example_ids: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _examples(records: pd.DataFrame, mask: pd.Series, order: pd.Series | None = None) -> list[str]:
    hits = records.loc[mask, "request_id"]
    if order is not None:
        hits = hits.loc[order[mask].sort_values(ascending=False).index]
    return [str(v) for v in hits.head(MAX_EXAMPLES)]


def validity_flags(records: pd.DataFrame, *, lag_threshold_s: float = DEFAULT_LAG_THRESHOLD_S) -> list[ValidityFlag]:
    """The flags that fired (an empty list means every check in `CHECKS` passed)."""
    flags: list[ValidityFlag] = []
    lag = records["t_sent"] - records["t_scheduled"]
    if lag.notna().any():
        p99 = float(np.nanquantile(lag.to_numpy(dtype=np.float64), 0.99))
        if p99 > lag_threshold_s:
            late = lag > lag_threshold_s
            flags.append(
                ValidityFlag(
                    "schedule_lag",
                    int(late.sum()),
                    f"schedule lag p99 {p99 * 1e3:.2f} ms > {lag_threshold_s * 1e3:g} ms: the load generator "
                    "fell behind its schedule, so the offered load was lower than intended",
                    _examples(records, late, lag),
                )
            )
    ok = succeeded(records)
    eos = ok & records["ignore_eos"] & (records["output_tokens"] != records["max_tokens"])
    if eos.any():
        flags.append(
            ValidityFlag(
                "ignore_eos_length",
                int(eos.sum()),
                "ignore_eos requests produced a token count other than max_tokens: output lengths "
                "are not the ones the workload specified",
                _examples(records, eos),
            )
        )
    engine = records["engine_output_tokens"]
    bad = engine.notna() & (engine != records["output_tokens"])
    if bad.any():
        flags.append(
            ValidityFlag(
                "output_token_count",
                int(bad.sum()),
                "harness output_tokens disagrees with the engine's engine_output_tokens: tokens were lost, "
                "duplicated or counted with a different tokenizer",
                _examples(records, bad),
            )
        )
    prompt = prompt_token_agreement(records)
    if prompt["off"]:
        flags.append(
            ValidityFlag(
                "prompt_token_count",
                prompt["off"],
                f"{prompt['share_off']:.1%} of the requests the engine counted have a prompt length off by more "
                f"than {PROMPT_TOLERANCE} token from the one intended: the target tokenizes differently (another "
                "tokenizer or chat template: see --tokenizer)",
                _examples(records, prompt["mask"]),
            )
        )
    claimed = records["engine_output_tokens"]
    over = claimed.notna() & (claimed > records["max_tokens"])
    if over.any():
        flags.append(
            ValidityFlag(
                "output_over_max_tokens",
                int(over.sum()),
                "the engine reported more output tokens than max_tokens allowed (a server's usage numbers "
                "cannot be trusted); the harness counted at most max_tokens for them",
                _examples(records, over),
            )
        )
    n_times = pd.Series(list_lengths(records["token_times"]), index=records.index)
    bad_times = n_times != records["output_tokens"]
    if bad_times.any():
        flags.append(
            ValidityFlag(
                "token_times_count",
                int(bad_times.sum()),
                "len(token_times) differs from output_tokens: token timings are incomplete",
                _examples(records, bad_times),
            )
        )
    skipped = records.attrs.get("skipped_lines") or []
    if skipped:
        flags.append(
            ValidityFlag(
                "truncated_records",
                len(skipped),
                "records.jsonl ended in an unparseable line (a crashed run?); that record was skipped",
                [],
            )
        )
    return flags


def prompt_token_agreement(records: pd.DataFrame) -> dict[str, Any]:
    """The engine's (a server's usage.prompt_tokens) prompt count against the intended one, per request.

    One token either way is tolerated: a server may add a BOS the prompt did not carry. `share_off` is the
    share of the requests the engine counted that are off by more; None when it counted none.
    """
    engine = records["engine_prompt_tokens"]
    counted = engine.notna()
    mask = counted & ((engine - records["prompt_tokens"]).abs() > PROMPT_TOLERANCE)
    n, off = int(counted.sum()), int(mask.sum())
    return {"checked": n, "off": off, "share_off": off / n if n else None, "mask": mask}


def validity(records: pd.DataFrame, *, lag_threshold_s: float = DEFAULT_LAG_THRESHOLD_S) -> dict[str, Any]:
    flags = validity_flags(records, lag_threshold_s=lag_threshold_s)
    prompt = prompt_token_agreement(records)
    return {
        "valid": not flags,
        "checks": list(CHECKS),
        "lag_threshold_s": lag_threshold_s,
        "flags": [f.to_json() for f in flags],
        # the validity figure of the prompt cross-check: share of counted requests off by > 1 token
        "prompt_tokens": {k: prompt[k] for k in ("checked", "off", "share_off")} | {"tolerance": PROMPT_TOLERANCE},
    }
