"""The keyed block manager's LRU in segments (engines/block_segments.py) against the per-block manager it replaced
(tests/engines/block_manager_reference.py, frozen): the same calls on both, their whole state compared after
every call (free stack, refcounts, the LRU's live order, every block's key or hash, counts, tables, prefix
hits), through preemptions, resumes, shared blocks, the hashes coming on, and resets; and whole simulations
with preemptions, byte for byte."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from engines.api import Request
from engines.block_manager import BlockManager
from engines.sequence import Sequence
from engines.sim.engine import SimEngine
from harness.engine_specs import build_engine, parse_engine_specs
from harness.loadgen.virtual import run_virtual_open_loop
from tests.engines import block_manager_reference as reference
from tests.engines.test_block_keys import SPEC, admit, distinct_schedule, grow, release, shared_schedule

Manager = BlockManager | reference.BlockManager


def keys(blocks: Manager) -> list[Any]:
    """Each block's name: None, ("key", its sequence, its position) while keyed, or its hash."""
    return [
        None if h is None else ("key", h[0].request.request_id, blocks._pos[b]) if isinstance(h, list) else h
        for b, h in enumerate(blocks._hash_of)
    ]


def state(blocks: Manager, seqs: list[Sequence]) -> tuple[object, ...]:
    return (
        blocks._free,
        blocks._refs,
        blocks.evictable(),
        keys(blocks),
        None if blocks._by_first is None else {k: (e[0].request.request_id, e[2]) for k, e in blocks._by_first.items()},
        sorted(blocks._cached.items()),
        blocks.num_free,
        blocks.num_used,
        blocks.num_cached,
        blocks.evictions,
        [(s.block_table, s.num_committed_blocks, s.num_computed_tokens, s.block_hashes) for s in seqs],
    )


def drive(seed: int, chunks: list[int] | None = None) -> tuple[int, int, int]:
    """Seeded calls on a new and a reference manager: admissions (prefix hits, own or shared), growth a token or a
    chunk at a time (a decode run's single blocks, a prefill's several), preemptions re-admitted, finishes, resets,
    and in some drives prompts sharing a first token or a whole prefix. Returns (keyed hits, shared-mode calls,
    resets with blocks in use). With `chunks`, prompts and chunks are long (up to 12 blocks: a prefill chunk's
    bulk allocation and commit) in larger pools, and `chunks` counts the keyed multi-block allocations that take
    blocks from the free stack and evictions at once, and those that evict from more than one segment."""
    rng = random.Random(seed)
    bs, n = rng.choice([1, 2, 4]), rng.choice([6, 16, 40] if chunks is None else [16, 40, 90])
    managers = (BlockManager(n, bs, prefix_caching=True), reference.BlockManager(n, bs, prefix_caching=True))
    seqs: tuple[list[Sequence], list[Sequence]] = ([], [])
    live: list[int] = []
    waiting: list[int] = []
    share = rng.random()  # the chance that a new prompt copies a live one's leading tokens (the hashes come on)
    share = 0.0 if share < 0.5 else share
    counts = [0, 0, 0]
    longest = 4 * bs if chunks is None else 24 * bs
    for step in range(300):
        op = rng.random()
        if op < 0.03:
            counts[2] += bool(live)
            for m in managers:
                m.reset()
        elif op < 0.2 or not (live or waiting):
            if live and rng.random() < share:
                parent = seqs[0][rng.choice(live)].token_ids
                tokens = list(parent[: rng.randint(1, len(parent))]) + rng.choices(range(3), k=rng.randint(0, bs))
            else:
                tokens = [1000 * (len(seqs[0]) + 1), *rng.choices(range(3), k=rng.randint(0, longest))]
            for k in range(2):
                seqs[k].append(Sequence.from_request(Request(f"s{len(seqs[k])}", list(tokens), 50), 0, 0.0))
            waiting.append(len(seqs[0]) - 1)
        elif op < 0.45 and waiting:
            i = waiting[0]
            on = managers[0]._by_first is not None
            hit = [admit(m, seqs[k][i]) for k, m in enumerate(managers)]
            assert hit[0] == hit[1], step
            counts[0] += bool(on and hit[0])
            if hit[0] is not None:
                live.append(waiting.pop(0))
        elif op < 0.8 and live:
            i = rng.choice(live)
            if chunks is None:
                grow(managers, [s[i] for s in seqs], rng.choice([1, 1, 1, 2 * bs + 1]))
            else:
                tokens = rng.choice([1, rng.randint(2, 12 * bs)])
                count_chunk(managers[0], seqs[0][i], tokens, chunks)
                grow(managers, [s[i] for s in seqs], tokens)
        elif live:
            i = live.pop(rng.randrange(len(live)))
            release(managers, [s[i] for s in seqs])
            if rng.random() < 0.6:  # preempted: it comes back for its own blocks
                waiting.append(i)
        counts[1] += managers[0]._by_first is None
        assert state(managers[0], seqs[0]) == state(managers[1], seqs[1]), (seed, step)
        for i in waiting:  # what each waiting sequence would find now (and, keyed, the entry it would start)
            assert managers[0].match_prefix(seqs[0][i]) == managers[1].match_prefix(seqs[1][i]), (seed, step)
        assert state(managers[0], seqs[0]) == state(managers[1], seqs[1]), (seed, step)
    return counts[0], counts[1], counts[2]


def test_random_drives_keep_the_per_block_state() -> None:
    drives = [drive(seed) for seed in range(120)]
    assert sum(hits for hits, _, _ in drives) > 100  # resumed sequences found their own blocks while keyed
    assert sum(bool(shared) for _, shared, _ in drives) > 20  # the hashes came on mid-drive
    assert sum(resets for _, _, resets in drives) > 50  # resets with blocks in use (shared ones among them)


def count_chunk(blocks: BlockManager, seq: Sequence, tokens: int, counts: list[int]) -> None:
    """Counts (in `counts`) a keyed allocation of `tokens` more that takes blocks from the free stack and
    evictions at once, and one that evicts from more than one segment."""
    need = blocks.blocks_needed(seq, tokens)
    if blocks._by_first is None or need < 2 or not blocks.can_allocate(need):
        return
    evict = need - len(blocks._free)
    counts[0] += bool(blocks._free) and evict > 0
    segments = blocks._segments.segments
    counts[1] += bool(segments) and evict > len(segments[0].blocks) - segments[0].start


def test_random_chunk_drives_keep_the_per_block_state() -> None:
    chunks = [0, 0]
    drives = [drive(seed, chunks) for seed in range(1000, 1120)]
    assert sum(hits for hits, _, _ in drives) > 50  # resumed sequences found their own blocks while keyed
    assert sum(bool(shared) for _, shared, _ in drives) > 20  # the hashes came on mid-drive
    assert chunks[0] > 100  # chunks taken from the free stack and the LRU in one allocation
    assert chunks[1] > 100  # chunks evicted from several segments in one allocation


def simulate(schedule: list, oracle: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bytes, int]:
    """(request records, step trace, evictions) of one simulation on the new or the reference manager."""
    (parsed,) = parse_engine_specs([SPEC], {})
    engine = build_engine(parsed, None)
    assert isinstance(engine, SimEngine)
    if oracle:
        engine.blocks.__class__ = reference.BlockManager  # type: ignore[assignment]  # the scheduler's object too
    steps: list[bytes] = []
    engine.set_step_sink(lambda record: steps.append(orjson.dumps(record)))
    records: list[bytes] = []
    run_virtual_open_loop(engine, schedule, lambda r: records.append(orjson.dumps(r.to_json())), label="e")
    return b"\n".join(records), b"\n".join(steps), engine.blocks.evictions


@pytest.mark.parametrize("schedule", [distinct_schedule, shared_schedule])
def test_simulations_with_preemptions_are_the_per_block_ones(schedule: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    records, steps, evictions = simulate(schedule(), False, monkeypatch)
    assert b'"preempt"' in steps and evictions > 100
    assert (records, steps, evictions) == simulate(schedule(), True, monkeypatch)
