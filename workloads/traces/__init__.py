"""The real public traces batchmark ships, one folder each with SOURCE.md (where it came from, what was
kept) and its licence. Data only: read by `workloads.bundled`; no code here imports anything."""
