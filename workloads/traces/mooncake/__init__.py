"""Mooncake traces (conversation, synthetic): see SOURCE.md and LICENSE.md. Data only."""
