"""Azure LLM inference trace 2023 (conversation and code): see SOURCE.md and LICENSE.md. Data only."""
