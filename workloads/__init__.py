"""Workloads for batchmark: the sample library. Bundled real traces, readers for user traces, synthetic
generators, transforms, and prompts of exact token counts, with one override table (`options.py`).
Deterministic for a given spec and seed; no torch, no network. A workload may suggest a closed loop; the
scenario itself is the load generator's run setting. Imports: numpy, pandas, tokenizers and this package
only; nothing of `engines`, `harness` or `reports`.

    from workloads import load_workload
    w = load_workload("azure-conv", duration_s=600, time_scale=2.0)
    w.describe()["mean_rate_rps"], w.fingerprint()
"""

from __future__ import annotations

from workloads.build import load_workload
from workloads.errors import WorkloadError
from workloads.model import Workload, WorkloadRequest
from workloads.ops import (
    clip_to_context,
    first_requests,
    override_rate,
    sample_requests,
    spread_ties,
    time_scale,
    time_window,
    to_closed_loop,
)
from workloads.presets import list_presets
from workloads.prompts import token_id_prompts
from workloads.readers import read_azure, read_burstgpt, read_mooncake, read_trace
from workloads.text_prompts import text_prompts
from workloads.tokenizer import TokenizerAdapter, as_tokenizer

__all__ = [
    "TokenizerAdapter",
    "Workload",
    "WorkloadError",
    "WorkloadRequest",
    "as_tokenizer",
    "clip_to_context",
    "first_requests",
    "list_presets",
    "load_workload",
    "override_rate",
    "read_azure",
    "read_burstgpt",
    "read_mooncake",
    "read_trace",
    "sample_requests",
    "spread_ties",
    "text_prompts",
    "time_scale",
    "time_window",
    "to_closed_loop",
    "token_id_prompts",
]
