"""The simulated engine: batchmark's own schedulers in virtual time on a cost model of a real GPU.

The continuous and static schedulers, the block manager and the queue policies run unchanged; the
model runner is replaced by a cost model that predicts each step's time, and wall time by a virtual
clock that each step advances (`engines.sim.engine`). Cost models: `roofline` (a Hugging Face
config.json from `configs/` or any path, a GPU from `hardware`, efficiency factors) and `fitted`
(least squares on a real run's step trace, `engines.sim.fitted`). Imports `engines` only.
"""
