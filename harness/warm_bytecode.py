"""`make install`'s last step: compile, once, the bytecode of every module batchmark imports.

A shell that sets PYTHONDONTWRITEBYTECODE (this workplace's does) would otherwise compile each imported module
again on every command: a simulated run imports about 1,200. Compiling the whole environment instead
(`compileall .venv/lib`: 15,000 files, most never imported: transformers' 2,900, ray's 2,600, sympy's 1,500)
took 43.5 s of a 2-core install, and skipped torch. Importing what batchmark imports writes only those, torch's
included: 4,350 modules in 28.5 s in one process, 18.5 s in the two below (2026-12-07, load 1).

    python -m harness.warm_bytecode            # both groups, each in a process of its own
    python -m harness.warm_bytecode NAME ...   # import these (a product package: with all its modules)
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
import subprocess
import sys

PRODUCT = ("harness", "engines", "workloads", "reports")
# what the product imports only inside functions (the model, the report's figures, the Ray executor)
GROUPS = (
    ("engines", "transformers.models.llama.modeling_llama", "transformers.models.auto.tokenization_auto"),
    ("harness", "workloads", "reports", "plotly.graph_objects", "ray"),
)


def import_all(names: list[str]) -> None:
    for name in names:
        module = importlib.import_module(name)
        if name in PRODUCT:
            for info in pkgutil.walk_packages(module.__path__, name + "."):
                if info.name.endswith("__main__"):
                    continue  # running a package's __main__ would start its command
                with contextlib.suppress(ModuleNotFoundError):  # an optional extra not installed
                    importlib.import_module(info.name)


def main(argv: list[str] | None = None) -> int:
    names = sys.argv[1:] if argv is None else argv
    if names:
        import_all(names)
        return 0
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    procs = [subprocess.Popen([sys.executable, "-m", "harness.warm_bytecode", *group], env=env) for group in GROUPS]
    return max(proc.wait() for proc in procs)


if __name__ == "__main__":
    sys.exit(main())
