"""Where independent units of work run: in this process (the default, no Ray) or on a Ray cluster.

A unit is an engine x trial of a run, a sweep point, a calibration pair or a study variant: a picklable
function with its arguments, the CPUs it will use, and an optional pair key (`unit.py`). Units that are
compared request by request share a pair key and run on one node, one after the other, so a difference
between nodes never leaks into a paired comparison. A unit writes into a directory it is given; on Ray
that directory is a scratch one on the node, and its files come back into the run directory.

`options.py` is the executor's option table (`--executor`, `--ray-address`, `--workers`), from which
the flags, their validation and the docs derive; `local.py` and `ray_cluster.py` are the two executors;
`workers.py` the long-lived worker processes or actors of sharded load generation; `node.py` what a unit
reports about the machine it ran on. Ray is imported only when `--executor ray` is chosen.
Imports: `harness.manifest` and the harness's errors.
"""

from harness.executor.local import LocalExecutor
from harness.executor.node import node_info
from harness.executor.options import EXECUTOR_KINDS, EXECUTOR_OPTIONS, ExecutorChoice, check_choice
from harness.executor.unit import Executor, Unit, UnitResult


def make_executor(choice: ExecutorChoice | None = None) -> Executor:
    """The executor `choice` names (default: local). `ray` connects to the cluster now, so a missing Ray or an
    unreachable address is one error line before any work starts."""
    choice = choice or ExecutorChoice()
    check_choice(choice)
    if choice.kind == "local":
        return LocalExecutor()
    from harness.executor.ray_cluster import RayExecutor

    return RayExecutor(choice.address)


__all__ = [
    "EXECUTOR_KINDS",
    "EXECUTOR_OPTIONS",
    "Executor",
    "ExecutorChoice",
    "LocalExecutor",
    "Unit",
    "UnitResult",
    "check_choice",
    "make_executor",
    "node_info",
]
