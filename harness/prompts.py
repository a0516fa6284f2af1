"""The prompts of a run, built with the target's tokenizer so that every length is exact in it.

A workload says how many prompt tokens each request has; only a tokenizer can make that true. The run's
tokenizer is `--tokenizer PATH` (any local Hugging Face tokenizer directory), else the `--model`
directory, else the embedded model's. Three kinds of prompt, one per way an engine takes it:

- `ids`: token ids, for in-process engines (and the zero engine) when no HTTP target is in the run:
  drawn, seeded, from the tokenizer's vocabulary without its special tokens (a BOS or EOS in the middle
  of a prompt changes what a real model does), with shared prefix blocks for Mooncake hash ids;
- `text`: for HTTP completions targets, text that encodes back to exactly `input_tokens` tokens in that
  tokenizer (`workloads.text_prompts`), sent with those ids too, so a server given ids and a server
  given text see the same tokens. In-process engines in the same run get these ids, so every engine
  of the run computes the same prompts;
- `chat`: for `http:api=chat`, the user message's text is fitted so that the *templated* prompt (the
  tokenizer's chat template, else batchmark serve's fallback template) has exactly `input_tokens`
  tokens: the chat template adds tokens of its own (14 for the fallback on the embedded tokenizer),
  and counting the whole templated prompt is what the model prefills and what the server's usage
  reports. The request's ids are the templated prompt's;
- `lengths`: for simulated engines, which count a prompt's tokens and never read them: a prompt is a
  range of ids of its own, so a run of simulated engines over a whole trace builds no tokens and needs
  no tokenizer; unless the workload shares prefixes (hash ids, session turns), when the simulated prefix
  cache needs the shared blocks as real ids.

Lengths that could not be met (a prompt shorter than the chat template itself) are counted, listed in
the manifest and printed; the server's own count (`usage.prompt_tokens`) is cross-checked per request
by run validity (`prompt_token_count`: the share of requests off by more than one token).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.loadgen import DEFAULT_VOCAB_SIZE, Scheduled, schedule_from

MAX_LISTED = 5


def prompt_kind(kind: str, options: dict[str, Any], text_in_run: bool) -> str:
    """The kind of prompt an engine of `kind` with `options` takes, in a run with or without HTTP targets."""
    if kind == "http":
        return "chat" if options.get("api") == "chat" else "text"
    return "text" if text_in_run else "ids"


@dataclass
class RunPrompts:
    """One schedule per prompt kind the run needs: the same requests, times and lengths in each."""

    tokenizer: dict[str, Any] | None  # None: no engine of the run reads tokens (simulated engines only)
    schedules: dict[str, list[Scheduled]] = field(default_factory=dict)
    mismatches: dict[str, list[str]] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {
            "tokenizer": self.tokenizer,
            "kinds": sorted(self.schedules),
            "length_mismatches": {k: len(v) for k, v in self.mismatches.items()},
            "mismatch_examples": {k: v[:MAX_LISTED] for k, v in self.mismatches.items() if v},
        }

    def notes(self) -> list[str]:
        return [
            f"{len(lines)} {kind} prompts could not be made exactly as long as asked (e.g. {lines[0]})"
            for kind, lines in self.mismatches.items()
            if lines
        ]


def stand_in_prompts(workload: Any, tokenizer: Any, seed: int) -> dict[str, Any]:
    """Prompts for simulated engines: ids of their own per request (`distinct_prompt`, nothing to build), or,
    when the workload shares prefixes on purpose (hash ids, session turns), seeded ids with those shared
    blocks, so that a simulated prefix cache finds what a real one would."""
    from harness.loadgen.replay import distinct_prompt, shares_prefixes
    from workloads import as_tokenizer, token_id_prompts

    if not shares_prefixes(workload):
        return {r.request_id: distinct_prompt(i, r.input_tokens) for i, r in enumerate(workload.requests)}
    if tokenizer is None:
        return token_id_prompts(workload, DEFAULT_VOCAB_SIZE, seed)
    adapter = as_tokenizer(tokenizer)
    return token_id_prompts(workload, adapter.vocab_size, seed, avoid_ids=tuple(sorted(adapter.special_ids)))


def build_prompts(
    workload: Any, kinds: set[str], tokenizer: Any, tokenizer_info: dict[str, Any] | None, seed: int
) -> RunPrompts:
    """The schedules of `kinds` for `workload`, with prompts exact in `tokenizer` (a transformers tokenizer;
    None when `kinds` is only `lengths`)."""
    from workloads import as_tokenizer, text_prompts, token_id_prompts

    prompts = RunPrompts(tokenizer_info)
    if "lengths" in kinds:
        prompts.schedules["lengths"] = schedule_from(workload, stand_in_prompts(workload, tokenizer, seed), {})
    if kinds <= {"lengths"}:
        return prompts
    adapter = as_tokenizer(tokenizer)
    ids: dict[str, list[int]] | None = None
    texts: dict[str, str | None] = {}
    if "text" in kinds:
        fitted, prompts.mismatches["text"] = text_prompts(workload, adapter, seed)
        texts = dict(fitted)
        ids = {rid: adapter.encode(text) for rid, text in fitted.items()}
        prompts.schedules["text"] = schedule_from(workload, ids, texts)
    if "ids" in kinds:
        if ids is None:
            ids = token_id_prompts(workload, adapter.vocab_size, seed, avoid_ids=tuple(sorted(adapter.special_ids)))
        prompts.schedules["ids"] = schedule_from(workload, ids, texts)
    if "chat" in kinds:
        from engines.serve.chat import chat_prompt_ids

        def templated(text: str) -> list[int]:
            return chat_prompt_ids(tokenizer, [{"role": "user", "content": text}])

        content, prompts.mismatches["chat"] = text_prompts(workload, adapter, seed, count=lambda t: len(templated(t)))
        chat_ids = {rid: templated(text) for rid, text in content.items()}
        prompts.schedules["chat"] = schedule_from(workload, chat_ids, dict(content))
    return prompts
