"""What one engine step computes, in the units step-time models use.

The real engines write these counts into every step-trace record, so a trace can be fitted
(`engines.sim.fitted`); the simulator computes the same counts from the same plan to predict the
step's time, so a fitted profile is evaluated on exactly what it was fitted on. Counted from the
plan before the step runs, while each sequence's `num_computed_tokens` is still where its chunk
starts.

A chunk of one row that extends a sequence with output is a *decode* sequence; anything else that
computes tokens is a *prefill* chunk (a prompt, a piece of one, a recompute after preemption). Pad
rows (static batching's: a short prompt padded to the batch's longest, a finished member held in its
slot) are counted apart, with no kind: they run the layers but produce no token.

Attention is counted twice over. `attended_context` is every (query row, key) pair in one sum, as profiles
of version 1 priced it. The three attention terms after it split those pairs by the kernel that computes them
(`engines.model_runner`), so that a fit prices each on its own and a static batch pays for what it computes:
- `decode_context`: keys read by one-row chunks (a decode row, a held slot's pad row): the paged kernel, one
  row at a time, memory-bound;
- `prefill_self_pairs`: pairs among a prefill chunk's own rows. A chunk that starts at position 0 runs one
  causal SDPA over its rows, pad rows included (a static batch's prompts, padded to the longest, are one
  [batch, heads, longest, dim] call): longest x (longest + 1) / 2 pairs, the pad rows' triangle too. A chunk
  over cached context runs SDPA with an explicit mask, which computes every (row, key) of its square;
- `prefill_context_pairs`: a prefill chunk's rows x the context before it (chunked prefill, a prefix hit): the
  chunk x context term a fit on short prompts never sees.
`pad_pairs` counts which of the prefill pairs were pad rows' (static padding's share of the attention).
"""

from __future__ import annotations

from typing import NamedTuple

from engines.plan import StepPlan


class StepFeatures(NamedTuple):
    """Counts of one step's work (a NamedTuple: the simulator builds one per step)."""

    prefill_tokens: int = 0  # real tokens of prefill chunks
    prefill_chunks: int = 0
    decode_seqs: int = 0  # one-token chunks extending a sequence that has output
    padded_rows: int = 0  # rows computed and thrown away: prompt padding and held slots
    held_rows: int = 0  # of those, the rows of finished static members held in their slots (one each)
    attended_context: int = 0  # (query row, key) pairs the attention computes, pad rows included
    kv_read_tokens: int = 0  # cached context tokens read, once per chunk
    sampled_rows: int = 0  # rows that go through the LM head (a finished member's pad row too)
    # attention split by kernel (the module's docstring); 0 in traces written before they were counted
    decode_context: int = 0  # keys read by one-row chunks (decode rows, held slots): the paged kernel
    prefill_self_pairs: int = 0  # pairs among prefill chunks' own rows, pad rows included as computed
    prefill_context_pairs: int = 0  # prefill chunk rows x the context cached before the chunk
    pad_pairs: int = 0  # of the prefill pairs, those of pad rows (static batching's padding)

    @property
    def rows(self) -> int:
        """Every row the layers compute."""
        return self.prefill_tokens + self.decode_seqs + self.padded_rows

    @property
    def phase(self) -> str:
        """`StepPlan.phase`, from the counts: prefill chunks, decode sequences, or both ("mixed")."""
        if self.prefill_chunks:
            return "mixed" if self.decode_seqs else "prefill"
        return "decode"

    def to_json(self) -> dict[str, int]:
        return self._asdict()


FEATURE_NAMES: tuple[str, ...] = StepFeatures._fields


def step_features(plan: StepPlan) -> StepFeatures:
    """The counts of `plan`, taken before it runs."""
    prefill = chunks = decode = pad = held = attended = kv_read = sampled = 0
    one_row = self_pairs = context_pairs = pad_pairs = 0
    for chunk in plan.chunks:
        num = chunk.num_tokens
        npad = chunk.num_pad
        start = chunk.seq.num_computed_tokens
        pad += npad
        kv_read += start
        if not num:  # a finished static member: one pad row looking at its context, LM head included
            held += npad
            attended += npad * max(start, 1)
            one_row += npad * max(start, 1)
            sampled += 1
        elif num == 1 and not npad and chunk.seq.num_output_tokens:
            decode += 1
            attended += start + 1
            one_row += start + 1
            sampled += 1
        else:
            prefill += num
            chunks += 1
            # row i of the chunk attends start + i + 1 keys; its pad rows look at the last real position
            attended += num * start + num * (num + 1) // 2 + npad * (start + num)
            sampled += chunk.yields_token
            rows = num + npad
            if start:  # SDPA over the gathered context with a mask: every row against every key up to the last
                self_pairs += rows * num
                context_pairs += rows * start
                pad_pairs += npad * (start + num)
            else:  # one causal SDPA over the chunk's rows, pad rows as rows like any other
                self_pairs += rows * (rows + 1) // 2
                pad_pairs += rows * (rows + 1) // 2 - num * (num + 1) // 2
    return StepFeatures(
        prefill, chunks, decode, pad, held, attended, kv_read, sampled, one_row, self_pairs, context_pairs, pad_pairs
    )
