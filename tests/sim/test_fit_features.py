"""The fit's attention terms (issue 30): each kernel's work is its own term, counted from real plans the way the
schedulers build them, and a fit on a trace whose true coefficients are known recovers every one. A static
trace (prompts padded to the longest, held slots) and a continuous one (chunked prefill over long contexts),
both timed by one law, give the same per-pair prices: what the engine computes is what is priced."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pytest import CaptureFixture

from engines.api import Request
from engines.plan import Chunk, StepPlan
from engines.sequence import Sequence
from engines.sim.fitted import REGRESSORS_V2, FittedCost, TraceSteps, fit_steps, load_profile, regressors
from engines.step_features import FEATURE_NAMES, step_features
from harness.cli import main
from harness.metrics.simulation import manifest_notices

# one machine's law, per unit of each regressor (seconds); the attention terms in the tens of nanoseconds
LAW = {
    "prefill_tokens": 40e-6,
    "prefill_chunks": 300e-6,
    "decode_seqs": 150e-6,
    "prompt_pad_rows": 40e-6,
    "held_rows": 150e-6,
    "decode_context": 30e-9,
    "prefill_self_pairs": 60e-9,
    "prefill_context_pairs": 90e-9,
}
INTERCEPT = 2e-3
PAIRS = ("decode_context", "prefill_self_pairs", "prefill_context_pairs")


def seq(computed: int, outputs: int = 0) -> Sequence:
    """A sequence whose next chunk starts at `computed` (the counts read only where a chunk starts)."""
    s = Sequence.from_request(Request("r", [1], 8), 0, 0.0)
    for _ in range(outputs):
        s.append_token(5)
    s.num_computed_tokens = computed
    return s


def timed(plans: list[StepPlan], seed: int, noise: float = 0.0) -> TraceSteps:
    """The plans' counts, each step timed by LAW (times 1 + noise x a normal draw)."""
    rng = np.random.default_rng(seed)
    x = np.array([step_features(plan) for plan in plans], dtype=np.int64)
    durations = INTERCEPT + regressors(x, 2) @ np.array([LAW[name] for name in REGRESSORS_V2])
    durations = durations * (1 + noise * rng.standard_normal(len(plans)))
    return TraceSteps(x, durations, np.full(len(plans) - 1, 1e-4), ["synthetic"])


def continuous_plans(n: int = 400, seed: int = 0) -> list[StepPlan]:
    """Continuous batching's steps: up to 32 decodes at contexts to 8k, beside up to two prefill chunks of a
    512-token budget, each a prompt's first chunk or a later one attending over up to 8k of earlier context."""
    rng = np.random.default_rng(seed)
    plans = []
    for _ in range(n):
        chunks = [Chunk(seq(int(rng.integers(16, 8192)), 1), 1, True) for _ in range(int(rng.integers(0, 33)))]
        for _ in range(int(rng.integers(0, 3))):
            start = int(rng.integers(0, 8192)) if rng.random() < 0.6 else 0
            chunks.append(Chunk(seq(start), int(rng.integers(1, 513)), bool(rng.random() < 0.5)))
        plans.append(StepPlan(chunks))
    return plans


def static_plans(n: int = 400, seed: int = 1) -> list[StepPlan]:
    """Static batching's steps: a batch's first step, its prompts right-padded to the longest (one causal SDPA
    over the padded rows), and decode steps in which finished members hold their slots with a pad row."""
    rng = np.random.default_rng(seed)
    plans = []
    for _ in range(n):
        size = int(rng.integers(1, 17))
        if rng.random() < 0.3:
            prompts = rng.integers(8, 2048, size)
            longest = int(prompts.max())
            plans.append(StepPlan([Chunk(seq(0), int(p), True, num_pad=longest - int(p)) for p in prompts]))
            continue
        held = int(rng.integers(0, size))
        chunks = [Chunk(seq(int(rng.integers(16, 4096)), 1), 1, True) for _ in range(size - held)]
        chunks += [Chunk(seq(int(rng.integers(16, 4096)), 3), 0, False, num_pad=1) for _ in range(held)]
        plans.append(StepPlan(chunks))
    return plans


def test_the_counts_are_what_the_runner_computes() -> None:
    # a 3-token prompt padded to 5 beside a 5-token one: one causal SDPA over 2 x 5 rows, 15 pairs each
    padded = step_features(StepPlan([Chunk(seq(0), 3, True, num_pad=2), Chunk(seq(0), 5, True)]))
    assert (padded.prefill_self_pairs, padded.pad_pairs, padded.prefill_context_pairs) == (30, 15 - 6, 0)
    # a 4-row chunk after 6 cached tokens: SDPA with a mask over all 10 keys, for each of the 4 rows
    chunk = step_features(StepPlan([Chunk(seq(6), 4, True)]))
    assert (chunk.prefill_self_pairs, chunk.prefill_context_pairs, chunk.decode_context) == (16, 24, 0)
    # a decode at context 12 and a held slot at context 9: the paged kernel reads 13 and 9 keys
    rows = step_features(StepPlan([Chunk(seq(12, 2), 1, True), Chunk(seq(9, 3), 0, False, num_pad=1)]))
    assert (rows.decode_context, rows.prefill_self_pairs) == (13 + 9, 0)


def test_a_continuous_fit_recovers_every_term() -> None:
    profile = fit_steps(timed(continuous_plans(), seed=0), version=2)
    assert profile.version == 2 and profile.intercept_s == pytest.approx(INTERCEPT, rel=1e-6)
    for name in ("prefill_tokens", "prefill_chunks", "decode_seqs", *PAIRS):
        assert profile.coefficients[name] == pytest.approx(LAW[name], rel=1e-6), name
    assert profile.fit["absent"] == ["prompt_pad_rows", "held_rows"] and profile.fit["unknown"] == []
    assert profile.fit["ranges"]["prefill_context_pairs"]["max"] > 512 * 4096  # chunks over long contexts seen


def test_a_static_fit_prices_padding_as_computed() -> None:
    profile = fit_steps(timed(static_plans(), seed=1), version=2)
    for name in ("decode_seqs", "prompt_pad_rows", "held_rows", "decode_context", "prefill_self_pairs"):
        assert profile.coefficients[name] == pytest.approx(LAW[name], rel=1e-6), name
    # no chunk ever attends over earlier context in a static batch: priced as a chunk's own pair, said so
    assert profile.fit["borrowed"] == {"prefill_context_pairs": "prefill_self_pairs"}
    assert 0.2 < profile.fit["padding"]["prefill_rows"] < 0.8 and profile.fit["padding"]["prefill_pairs"] > 0.2


def test_both_engines_fit_one_price_per_pair_where_one_price_did_not() -> None:
    """The same law timing both engines' steps (2% noise), fitted apart (one profile per engine): the current form
    gives both engines the law's price per prefill pair; the version-1 form, every pair at one price, puts them
    more than a quarter apart (it blends the paged kernel's keys with SDPA's pairs in each engine's own mix, and
    misses the pad rows' own triangle)."""
    cont, static = timed(continuous_plans(), 0, noise=0.02), timed(static_plans(), 1, noise=0.02)
    new = [fit_steps(t, version=2).coefficients["prefill_self_pairs"] for t in (cont, static)]
    assert new == pytest.approx([LAW["prefill_self_pairs"]] * 2, rel=0.1)
    old = []
    for t in (cont, static):
        t.split = False
        old.append(fit_steps(t).coefficients["attended_context"])
    assert max(old) / min(old) > 1.25, old


def test_the_profile_prices_long_chunked_prompts_as_the_law_does() -> None:
    """A 4,096-token prompt in eight chunks of 512, each over the chunks before it: priced by the law."""
    profile = fit_steps(timed(continuous_plans(), seed=0), version=2)
    chunks = [step_features(StepPlan([Chunk(seq(k * 512), 512, k == 7)])) for k in range(8)]
    assert [f.prefill_context_pairs for f in chunks] == [k * 512 * 512 for k in range(8)]
    law = FittedCost(INTERCEPT, LAW)
    assert sum(map(profile.step_time, chunks)) == pytest.approx(sum(map(law.step_time, chunks)), rel=1e-6)


def _run_dir(tmp: Path, name: str, split: bool) -> Path:
    """A run directory of one continuous engine whose step trace holds `continuous_plans` timed by LAW, with the
    attention split by kernel or (`split` False) as traces were written before it was."""
    run = tmp / name
    (run / "steps").mkdir(parents=True)
    engine = {
        "name": "continuous",
        "kind": "continuous",
        "kv_bytes_per_token": 1000,
        "kv_blocks": 512,
        "options": {"continuous": {"max_running": 32, "max_batched_tokens": 512}, "kv": {"block_size": 16}},
        "model": {"source": "synthetic", "config": {"max_position_embeddings": 16384}},
    }
    (run / "manifest.json").write_text(json.dumps({"engines": [engine]}))
    steps = timed(continuous_plans(), seed=0)
    t, lines = 0.0, []
    for f, d in zip(steps.features.tolist(), steps.duration_s.tolist(), strict=True):
        row = dict(zip(FEATURE_NAMES, f, strict=True))
        row["padded_tokens"], row["idle_slots"] = row.pop("padded_rows"), row.pop("held_rows")
        if not split:
            for key in (*PAIRS, "pad_pairs"):
                del row[key]
        lines.append(json.dumps(row | {"t_start": t, "t_end": t + d, "num_running": 1, "finished": []}))
        t += d + 1e-4
    (run / "steps" / "continuous-t0.jsonl").write_text("\n".join(lines) + "\n")
    return run


def test_an_old_trace_fits_the_old_form_and_says_feature_unknown(tmp_path: Path, capsys: CaptureFixture) -> None:
    old, new = _run_dir(tmp_path, "old", split=False), _run_dir(tmp_path, "new", split=True)
    assert main(["sim", "fit", str(old), "-o", str(tmp_path / "old.json")]) == 0
    printed = capsys.readouterr().out
    assert "decode_context, prefill_self_pairs, prefill_context_pairs: feature unknown" in printed
    profile = load_profile(tmp_path / "old.json")
    assert profile.version == 1 and "attended_context" in profile.coefficients
    # a simulated engine on it says so, once, beside its other notices
    notices = manifest_notices({"engines": [{"name": "a", "simulated": True, "cost_model": profile.describe()}]})
    assert [n for n in notices if n.startswith("FEATURES: a: decode_context")], notices
    assert main(["sim", "fit", str(new), "-o", str(tmp_path / "new.json")]) == 0
    assert "feature unknown" not in capsys.readouterr().out
    assert load_profile(tmp_path / "new.json").coefficients["prefill_context_pairs"] == pytest.approx(
        LAW["prefill_context_pairs"], rel=1e-6
    )
    described = {"name": "b", "simulated": True, "cost_model": load_profile(tmp_path / "new.json").describe()}
    assert not [n for n in manifest_notices({"engines": [described]}) if n.startswith("FEATURES")]


def test_attention_prices_can_come_from_another_engine_s_profile(tmp_path: Path, capsys: CaptureFixture) -> None:
    new = _run_dir(tmp_path, "new", split=True)
    source = FittedCost(0.0, {"decode_context": 1e-9, "prefill_self_pairs": 2e-9, "prefill_context_pairs": 3e-9})
    source.save(tmp_path / "source.json")
    out = tmp_path / "fixed.json"
    assert main(["sim", "fit", str(new), "--attention-from", str(tmp_path / "source.json"), "-o", str(out)]) == 0
    assert "attention priced from" in capsys.readouterr().out
    fixed = load_profile(out)
    assert [fixed.coefficients[name] for name in PAIRS] == [1e-9, 2e-9, 3e-9]
    assert fixed.fit["fixed"] == sorted(PAIRS) and fixed.fit["fixed_from"] == str(tmp_path / "source.json")
    # a version-1 profile has no such prices: one line, exit 2
    assert main(["sim", "fit", str(_run_dir(tmp_path, "old", split=False)), "-o", str(tmp_path / "o.json")]) == 0
    capsys.readouterr()
    assert main(["sim", "fit", str(new), "--attention-from", str(tmp_path / "o.json"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "feature unknown" in err, err
