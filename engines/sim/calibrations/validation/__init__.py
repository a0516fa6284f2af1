"""`batchmark sim validate --json` tables the trust band reads (harness/gpu_truth/band.py); data."""
