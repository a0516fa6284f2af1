"""Train the embedded model's byte-level BPE tokenizer, offline, once.

Run: `python -m engines.model.build_tokenizer` (writes engines/model/tokenizer/). The committed files are
what batchmark uses; this script records how they were made. The corpus is the text of the Python
standard library that runs the script (code plus English docstrings), so it needs no download; a
different Python version gives a slightly different vocabulary, which is why the result is committed.
"""

from __future__ import annotations

import json
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

VOCAB_SIZE = 8192
BOS, EOS, PAD = "<|begin_of_text|>", "<|end_of_text|>", "<|pad|>"
OUT_DIR = Path(__file__).with_name("tokenizer")


def stdlib_corpus(limit_bytes: int = 40_000_000) -> Iterator[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    total = 0
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts or "test" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="ignore")
        total += len(text)
        yield text
        if total > limit_bytes:
            return


def build(out_dir: Path = OUT_DIR) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=[BOS, EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(stdlib_corpus(), trainer=trainer)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out_dir / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
        "model_max_length": 16384,
        "clean_up_tokenization_spaces": False,
        "built_with": f"python {sys.version.split()[0]} stdlib corpus, tokenizers BPE, vocab {VOCAB_SIZE}",
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return tokenizer


if __name__ == "__main__":
    tok = build()
    print(f"wrote {OUT_DIR} with {tok.get_vocab_size()} tokens")
