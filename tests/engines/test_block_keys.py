"""Keys without hashes (engines/block_manager.py's note): while no two sequences share a first token, a cached
block is named by its (sequence, position) pair instead of a hash; the run must be the one that hashes every
block, byte for byte, preemptions (a resumed sequence finding its own blocks) included, and the hashes must
come on as soon as two sequences could share a prefix."""

from __future__ import annotations

import random
from collections.abc import Sequence as Sequence_
from typing import Any

import orjson
import pytest

from engines.api import Request
from engines.block_manager import BlockManager
from engines.sequence import Sequence
from engines.sim.engine import SimEngine
from harness.engine_specs import build_engine, parse_engine_specs
from harness.loadgen import Scheduled
from harness.loadgen.replay import distinct_prompt
from harness.loadgen.virtual import run_virtual_open_loop

MATCH = BlockManager.match_prefix  # unwrapped: each run below counts its own hits
SPEC = "sim:model=llama-3.1-8b,hardware=h100,kv_blocks=60"  # a pool so small that sequences are preempted


def distinct_schedule() -> list[Scheduled]:
    """Prompts that share nothing (the stand-ins of a workload without shared prefixes), arriving in bursts."""
    return [
        Scheduled(
            Request(f"r{i}", distinct_prompt(i, 16 + 37 * (i % 7)), 20 + 23 * (i % 5), ignore_eos=True), 0.02 * (i // 6)
        )
        for i in range(48)
    ]


def shared_schedule() -> list[Scheduled]:
    """Prompts that share a 64-token system prefix."""
    return [
        Scheduled(
            Request(f"r{i}", list(range(64)) + [1000 + i] * (16 + 37 * (i % 7)), 30, ignore_eos=True), 0.02 * (i // 6)
        )
        for i in range(48)
    ]


def simulate(
    schedule: list[Scheduled], keyed: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[bytes, bytes, list[int], BlockManager]:
    """(request records, step trace, the length of each prefix hit found, the block manager) of one run."""
    monkeypatch.setattr(BlockManager, "keys_without_hashes", keyed)
    hits: list[int] = []

    def counted(self: BlockManager, seq: Sequence) -> list[int]:
        found = MATCH(self, seq)
        if found:
            hits.append(len(found))
        return found

    monkeypatch.setattr(BlockManager, "match_prefix", counted)
    (parsed,) = parse_engine_specs([SPEC], {})
    engine = build_engine(parsed, None)
    assert isinstance(engine, SimEngine)
    steps: list[bytes] = []
    engine.set_step_sink(lambda record: steps.append(orjson.dumps(record)))
    records: list[bytes] = []
    run_virtual_open_loop(engine, schedule, lambda r: records.append(orjson.dumps(r.to_json())), label="e")
    return b"\n".join(records), b"\n".join(steps), hits, engine.blocks


def test_prompts_sharing_nothing_run_as_with_hashes_through_preemptions(monkeypatch: pytest.MonkeyPatch) -> None:
    records, steps, hits, blocks = simulate(distinct_schedule(), True, monkeypatch)
    assert blocks._by_first is not None and not blocks._cached  # no hash was made: the keys were taken
    hashed = simulate(distinct_schedule(), False, monkeypatch)
    assert hashed[3]._by_first is None and hashed[3]._cached
    assert b'"preempt"' in steps  # sequences were preempted ...
    assert hits and hits == hashed[2]  # ... and, resumed, found their own blocks, as with hashes
    assert b'"prefix_cached_blocks":0' not in steps.split(b"\n")[-1]
    assert records == hashed[0]
    assert steps == hashed[1]


def test_prompts_sharing_a_prefix_turn_the_hashes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    records, steps, hits, blocks = simulate(shared_schedule(), True, monkeypatch)
    assert blocks._by_first is None and blocks._cached  # the second prompt turned the hashes on
    assert len(hits) >= 40  # the shared prefix was found
    assert (records, steps, hits) == simulate(shared_schedule(), False, monkeypatch)[:3]


def admit(blocks: BlockManager, seq: Sequence) -> int | None:
    """The schedulers' admission (match, take, allocate) and the whole prompt computed and committed: the
    length of the prefix hit, None when the blocks are not there."""
    hit = blocks.match_prefix(seq)
    need = blocks.blocks_for_tokens(seq.num_tokens) - len(hit)
    if not blocks.can_allocate(need + blocks.reactivated(hit)):
        return None
    blocks.take_prefix(seq, hit)
    blocks.allocate(seq, need)
    seq.num_computed_tokens = seq.num_tokens
    blocks.commit(seq)
    return len(hit)


def grow(managers: Sequence_[Any], seqs: list[Sequence], tokens: int) -> None:
    """One sequence (its copy on each manager) computes `tokens` more, its new blocks allocated and committed."""
    for m, seq in zip(managers, seqs, strict=True):
        need = m.blocks_needed(seq, tokens)
        if m.can_allocate(need):
            m.allocate(seq, need)
            seq.token_ids.extend([7] * tokens)
            seq.num_computed_tokens += tokens
            m.commit(seq)


def release(managers: Sequence_[Any], seqs: list[Sequence]) -> None:
    """One sequence (its copy on each manager) finishes or is preempted: its blocks freed."""
    for m, seq in zip(managers, seqs, strict=True):
        m.free(seq)
        seq.num_computed_tokens = 0


def state(blocks: BlockManager, seqs: list[Sequence]) -> tuple[object, ...]:
    return (
        blocks._free,
        blocks._refs,
        blocks.evictable(),  # the LRU's live order (a keyed manager keeps it in segments, with no stale entries)
        blocks.num_free,
        blocks.num_cached,
        blocks.evictions,
        [(s.block_table, s.num_committed_blocks, s.num_computed_tokens) for s in seqs],
    )


def drive(seed: int) -> tuple[int, bool]:
    """Admissions, growth by a token or a chunk, commits, preemptions (free, then admitted again: its own blocks
    found), finishes and resets, the same on a keyed and a hashing manager, their states compared after each
    call; in half the drives the sequences come with one first token from the middle on (the hashes on from
    then). Returns (prefix hits while keyed, whether the hashes came on)."""
    rng = random.Random(seed)
    bs, n = rng.choice([1, 2, 4]), rng.choice([8, 16, 40])
    keyed, hashing = BlockManager(n, bs, prefix_caching=True), BlockManager(n, bs, prefix_caching=True)
    hashing.keys_without_hashes = False
    hashing.reset()
    managers, seqs = (keyed, hashing), ([], [])  # type: ignore[var-annotated]
    live: list[int] = []
    waiting: list[int] = []
    shared_from = rng.choice([None, 60])
    keyed_hits = 0
    for step in range(150):
        op = rng.random()
        if step == 100 and rng.random() < 0.3:
            for m in managers:
                m.reset()
        if op < 0.2 or not (live or waiting):
            first = 0 if shared_from is not None and step >= shared_from else 1000 * (len(seqs[0]) + 1)
            tokens = [first, *rng.choices(range(3), k=rng.randint(0, 3 * bs))]
            for k in range(2):
                seqs[k].append(Sequence.from_request(Request(f"s{len(seqs[k])}", list(tokens), 50), 0, 0.0))
            waiting.append(len(seqs[0]) - 1)
        elif op < 0.45 and waiting:
            i = waiting[0]
            on = keyed._by_first is not None
            hit = [admit(m, seqs[k][i]) for k, m in enumerate(managers)]
            assert hit[0] == hit[1], step
            keyed_hits += bool(on and hit[0])
            if hit[0] is not None:
                live.append(waiting.pop(0))
        elif op < 0.8 and live:
            i = rng.choice(live)
            grow(managers, [s[i] for s in seqs], rng.choice([1, 1, 1, bs + 1]))
        elif live:
            i = live.pop(rng.randrange(len(live)))
            release(managers, [s[i] for s in seqs])
            if rng.random() < 0.6:  # preempted: admitted again later
                waiting.append(i)
        assert state(keyed, seqs[0]) == state(hashing, seqs[1]), step
        if shared_from is None or step < shared_from:
            assert keyed._by_first is not None and not keyed._cached  # no hash made while first tokens differ
    return keyed_hits, keyed._by_first is None


def test_random_drives_keep_the_state_of_hashes() -> None:
    drives = [drive(seed) for seed in range(40)]
    assert sum(hits for hits, _ in drives) > 20  # resumed sequences found their own blocks while keyed
    assert sum(on for _, on in drives) > 5  # and the hashes came on mid-drive, the state still the same


def test_a_block_back_at_another_position_of_its_sequence_is_no_hit_there() -> None:
    """A sequence's block evicted, then handed back to it for another position and committed there: the stale
    entry for its old position must not be found (the hash of that position is not the block's)."""
    hits = []
    for keyed in (True, False):
        blocks = BlockManager(4, 1, prefix_caching=True)
        blocks.keys_without_hashes = keyed
        blocks.reset()
        a = Sequence.from_request(Request("a", [100, 1, 2, 3, 4], 5), 0, 0.0)
        x = Sequence.from_request(Request("x", [200, 9], 5), 1, 0.0)
        blocks.allocate(a, 4)  # positions 0-3: blocks 0-3
        a.num_computed_tokens = 4
        blocks.commit(a)
        blocks.free(a)  # preempted: its blocks in the LRU, the last first
        blocks.allocate(x, 2)  # takes blocks 3 and 2 (their keys gone), computes nothing
        blocks.free(x)  # uncached: back to the pool, block 3 on top
        hit = blocks.match_prefix(a)
        assert hit == [0, 1]
        blocks.take_prefix(a, hit)
        blocks.allocate(a, 1)  # position 2: block 3, whose old position (3) still lists it
        a.num_computed_tokens = 3
        blocks.commit(a)
        assert a.block_table == [0, 1, 3]
        blocks.free(a)
        hits.append(blocks.match_prefix(a))
        assert blocks.num_cached == 3
    assert hits == [[0, 1, 3], [0, 1, 3]]


def test_a_reset_forgets_the_first_tokens_seen() -> None:
    """A trial after a reset sends the same prompts again: the keys stay (no sequence of the last trial can hold
    a block of this one's)."""
    blocks = BlockManager(8, 2, prefix_caching=True)
    for trial in range(2):
        seq = Sequence.from_request(Request(f"t{trial}", [100, 1, 2, 3], 5), trial, 0.0)
        assert admit(blocks, seq) == 0
        blocks.free(seq)
        assert blocks._by_first is not None and blocks.num_cached == 2
        blocks.reset()


def test_a_sequence_whose_last_key_is_evicted_is_forgotten() -> None:
    """Its tokens are not kept once nothing of it can be found; found again, it finds nothing, as with hashes."""
    blocks = BlockManager(2, 1, prefix_caching=True)
    a = Sequence.from_request(Request("a", [100, 1, 5], 5), 0, 0.0)
    b = Sequence.from_request(Request("b", [200, 1, 5], 5), 1, 0.0)
    a.token_ids.pop()  # two tokens computed, both blocks committed
    b.token_ids.pop()
    assert admit(blocks, a) == 0
    blocks.free(a)
    assert list(blocks._by_first or {}) == [100]
    assert admit(blocks, b) == 0  # evicts both of a's blocks
    assert list(blocks._by_first or {}) == [200] and blocks.num_cached == 2
    blocks.free(b)
    assert blocks.match_prefix(a) == [] and list(blocks._by_first or {}) == [200, 100]
