"""Public GPU step times as ground truth for the simulator's roofline (`batchmark sim validate`).

rows: the truth files and their checks; predict: what a cost model says for each row, and the row's
regime; table: errors per source and regime; fit: the calibration's parameters from a fixed half of the rows.
"""
