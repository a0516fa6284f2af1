"""SplitwiseSim request trace (test_trace.csv): see SOURCE.md and LICENSE.md. Data only."""
