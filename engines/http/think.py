"""Reasoning inside the content: `<think>...</think>` split out of a stream's text (`think_tags` option).

A server that runs no reasoning parser streams a reasoning model's thinking as ordinary content between
`<think>` and `</think>` (DeepSeek-R1, Qwen3, QwQ). With `think_tags=on` the HTTP engine reads the text and
puts a chunk on the reasoning channel when all it carries is inside a think block (the tags included);
`open`: the output starts inside one, because the chat template opened it in the prompt (DeepSeek-R1's and
Qwen3's thinking templates do), so the first `</think>` ends the reasoning. A tag may be cut between chunks:
the cut tail is held until the next chunk says what it was.
"""

from __future__ import annotations

from typing import Literal

ThinkTagsMode = Literal["off", "on", "open"]
THINK_TAGS_MODES = ("off", "on", "open")
OPEN, CLOSE = "<think>", "</think>"


def _partial_tag(text: str, tag: str) -> int:
    """Length of the longest end of `text` that is a proper beginning of `tag` (a tag cut by the chunking)."""
    for n in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


class ThinkTags:
    """The think-block state of one response's text, chunk by chunk."""

    __slots__ = ("answered", "carry", "inside")

    def __init__(self, mode: ThinkTagsMode) -> None:
        self.inside = mode == "open"
        self.carry = ""  # a possible tag cut at the end of the previous chunk
        self.answered = False  # visible text outside a think block was seen: a lone "<" now is the answer's

    def feed(self, text: str) -> bool:
        """Take one chunk's content text; True when the chunk is reasoning: it was in or touched a think block
        and carries no visible text outside one."""
        text = self.carry + text
        self.carry = ""
        thinking = self.inside
        answer = False
        while text:
            tag = CLOSE if self.inside else OPEN
            at = text.find(tag)
            if at < 0:
                cut = _partial_tag(text, tag)
                body, self.carry = text[: len(text) - cut], text[len(text) - cut :]
                answer = answer or (not self.inside and bool(body.strip()))
                thinking = thinking or (bool(self.carry) and not self.answered)
                break
            answer = answer or (not self.inside and bool(text[:at].strip()))
            thinking = True
            text = text[at + len(tag) :]
            self.inside = not self.inside
        self.answered = self.answered or answer
        return thinking and not answer
