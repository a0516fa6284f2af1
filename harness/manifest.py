"""Run lineage: everything needed to tell what ran, on what, and to reproduce it."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

# what changes the numbers without changing the code: hub access, and the OpenMP threads' behaviour
ENVIRONMENT = (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "OMP_NUM_THREADS",
    "OMP_WAIT_POLICY",
    "GOMP_SPINCOUNT",
    "OMP_PROC_BIND",
    "OMP_PLACES",
)
PACKAGES = (
    "batchmark",
    "torch",
    "transformers",
    "tokenizers",
    "numpy",
    "pandas",
    "scipy",
    "aiohttp",
    "plotly",
    "orjson",
    "ray",
)


def git_state() -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    if commit.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count(),
        "machine": platform.machine(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }
    if "torch" in sys.modules:
        import torch

        from engines import compute_threads

        info["torch_threads"] = compute_threads.count()
        info["cuda_available"] = bool(torch.cuda.is_available())
    return info


def build_manifest(
    *,
    argv: list[str],
    workload: Any,
    engines: list[dict[str, Any]],
    model: dict[str, Any] | None,
    seed: int,
    settings: dict[str, Any],
) -> dict[str, Any]:
    return {
        "manifest_version": 1,
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": argv,
        "git": git_state(),
        "packages": package_versions(),
        "hardware": hardware(),
        "model": model,
        "workload": {
            "name": workload.name,
            "spec": workload.spec,
            "fingerprint": workload.fingerprint(),
            "notes": workload.notes,
            "requests": len(workload.requests),
            "closed_loop_users": workload.closed_loop_users,
            "think_time_s": workload.think_time_s,
        },
        "engines": engines,
        "seed": seed,
        "settings": settings,
        "environment": {k: os.environ.get(k) for k in ENVIRONMENT},
    }
