"""A trace of prompts that repeat themselves, for n-gram (prompt lookup) speculative decoding
(docs/measurements/2026-12-06-vllm-cpu-spec-decode.md).

Usage: python repeat_prompts.py TOKENIZER_JSON OUT.jsonl

16 requests 0.5 s apart, each prompt one 8-word phrase said 8 times (words drawn, seed 0, from the tokenizer's
lower-case word tokens, so the phrase differs per request and no two prompts share a prefix), 64 output
tokens; canonical-jsonl with `prompt_text` and its exact token count (docs/workloads.md).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from tokenizers import Tokenizer

REQUESTS, GAP_S, WORDS, REPEATS, OUTPUT_TOKENS = 16, 0.5, 8, 8, 64


def main(tokenizer_path: Path, out: Path) -> None:
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    words = sorted(
        w[1:] for w in tokenizer.get_vocab() if w.startswith("Ġ") and w[1:].isalpha() and w[1:].islower() and len(w) > 3
    )
    rng = random.Random(0)
    with out.open("w") as rows:
        for i in range(REQUESTS):
            phrase = " ".join(rng.sample(words, WORDS)) + "."
            text = " ".join([phrase] * REPEATS)
            tokens = len(tokenizer.encode(text, add_special_tokens=False).ids)
            row = {"arrival_s": i * GAP_S, "input_tokens": tokens, "output_tokens": OUTPUT_TOKENS, "prompt_text": text}
            rows.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3 or not Path(sys.argv[1]).is_file():
        print(f"{sys.argv[1]}: not found" if len(sys.argv) == 3 else __doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
