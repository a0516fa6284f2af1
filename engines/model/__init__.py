"""Models the in-process engines run: the embedded seeded Llama, its shipped tokenizer, and the loader for any
local Hugging Face checkpoint directory (no hub access). Imports: torch, transformers and `engines` only."""
