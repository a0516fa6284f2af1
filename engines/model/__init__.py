"""Models the in-process engines run: the embedded seeded Llama (plain torch) and its shipped tokenizer (the
`tokenizers` library), and the loader for any local Hugging Face checkpoint directory (no hub access; only a
checkpoint imports transformers). Imports: torch, tokenizers, transformers and `engines` only."""
