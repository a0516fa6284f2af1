"""WEKA agentic-coding sessions (callanjfox/kv-cache-tester): see SOURCE.md and LICENSE.md. Data only."""
