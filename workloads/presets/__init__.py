"""Named presets: the spec files in this folder (bundled traces, small loads and adversarial loads).
Read by `workloads.build`; imports nothing of ours."""

from __future__ import annotations

import tomllib
from pathlib import Path

PRESETS_DIR = Path(__file__).resolve().parent


def list_presets() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def preset_path(name: str) -> Path | None:
    path = PRESETS_DIR / f"{name}.toml"
    return path if name in list_presets() else None


def preset_description(name: str) -> str:
    path = preset_path(name)
    if path is None:
        return ""
    return str(tomllib.loads(path.read_text(encoding="utf-8")).get("description", ""))
