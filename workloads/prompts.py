"""Token-id prompts of exact lengths for in-process engines.

Ids are drawn, seeded, from the vocabulary minus the ids to avoid (special tokens). A request with Mooncake
`prefix_hash_ids` gets one block of ids per hash id, the same block wherever that id appears, so requests
that share leading hash ids share leading tokens and a prefix cache can reuse them; the last block is cut to
the request's input length. A later turn of a session (`workloads/sessions.py`) is its previous turn's
prompt, that turn's answer (seeded ids of the answer's length) and its own new ids; a sub-agent (branch >= 1)
opens with the session's shared blocks and is no part of the history.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from workloads.errors import WorkloadError
from workloads.model import Workload

BLOCK_TOKENS = 512
BLOCK_STREAM = 7  # seed-sequence tags: a block's ids never depend on which request uses it first
REQUEST_STREAM = 8
ANSWER_STREAM = 9


def block_seed(seed: int, hash_id: int) -> list[int]:
    return [seed, BLOCK_STREAM, hash_id % 2**63]


def request_seed(seed: int, index: int) -> list[int]:
    return [seed, REQUEST_STREAM, index]


def allowed_ids(vocab_size: int, avoid_ids: Iterable[int]) -> np.ndarray:
    avoid = np.fromiter((int(i) for i in avoid_ids), dtype=np.int64)
    allowed = np.setdiff1d(np.arange(vocab_size, dtype=np.int64), avoid)
    if len(allowed) == 0:
        raise WorkloadError(f"no token ids left to draw from (vocab_size {vocab_size})", field="avoid_ids")
    return allowed


def token_id_prompts(
    workload: Workload,
    vocab_size: int,
    seed: int,
    avoid_ids: Iterable[int] = (),
    block_tokens: int = BLOCK_TOKENS,
) -> dict[str, list[int]]:
    """request_id -> exactly `input_tokens` ids (prefix blocks shared as described above)."""
    allowed = allowed_ids(vocab_size, avoid_ids)
    blocks: dict[int, np.ndarray] = {}

    def block(hash_id: int) -> np.ndarray:
        if hash_id not in blocks:
            rng = np.random.default_rng(block_seed(seed, hash_id))
            blocks[hash_id] = allowed[rng.integers(0, len(allowed), block_tokens)]
        return blocks[hash_id]

    prompts: dict[str, list[int]] = {}
    history: dict[str, tuple[list[int], int, int]] = {}  # session -> (last prompt, its answer length, its index)
    for index, request in enumerate(workload.requests):
        n = request.input_tokens
        if request.session is not None and request.turn > 0 and not request.branch and not request.fresh:
            before, answer, parent = history[request.session]
            answer_ids = allowed[np.random.default_rng([seed, ANSWER_STREAM, parent]).integers(0, len(allowed), answer)]
            new = allowed[
                np.random.default_rng(request_seed(seed, index)).integers(0, len(allowed), n - len(before) - answer)
            ]
            prompts[request.request_id] = before + answer_ids.tolist() + new.tolist()
            history[request.session] = (prompts[request.request_id], request.output_tokens, index)
            continue
        parts = [block(h) for h in request.prefix_hash_ids[: math.ceil(n / block_tokens)]]
        have = len(parts) * block_tokens
        if have < n:  # no (or too few) prefix blocks: the rest is this request's own
            rng = np.random.default_rng(request_seed(seed, index))
            parts.append(allowed[rng.integers(0, len(allowed), n - have)])
        prompts[request.request_id] = np.concatenate(parts)[:n].tolist()
        if request.session is not None and not request.branch:  # a sub-agent's prompt is no part of the history
            history[request.session] = (prompts[request.request_id], request.output_tokens, index)
    return prompts
