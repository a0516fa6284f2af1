"""Chat messages to prompt tokens: the tokenizer's own chat template, or batchmark's simple one.

The fallback template (for tokenizers without one, like the embedded model's) is, per message,
`<|ROLE|>\\nCONTENT\\n` in order, then `<|assistant|>\\n` to ask for the reply. It is plain text
tokenized without special tokens, so it means nothing to a model trained on another template;
it exists so chat requests have a defined, documented prompt on any tokenizer.
"""

from __future__ import annotations

from typing import Any

FALLBACK_GENERATION_PROMPT = "<|assistant|>\n"


def fallback_template(messages: list[dict[str, str]]) -> str:
    parts = [f"<|{m['role']}|>\n{m['content']}\n" for m in messages]
    return "".join(parts) + FALLBACK_GENERATION_PROMPT


def chat_prompt_ids(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    else:
        text = fallback_template(messages)
    # The template already placed any special tokens it wants; adding more would double a BOS.
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
