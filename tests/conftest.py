"""Shared fixtures: the embedded model is built once per test session (seeded, about a second)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def embedded():
    from engines import compute_threads
    from engines.model.loader import load_model

    compute_threads.configure(2)
    return load_model()
