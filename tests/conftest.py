"""Shared fixtures: the embedded model is built once per test session (seeded, about a second)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _own_speed_cache(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The demo's saved speed (harness/estimate.py) goes to a directory of each test's own: a test never writes
    to the user's cache, and no run's printed estimate depends on which test calibrated before it."""
    import harness.estimate

    root = tmp_path_factory.mktemp("cache")
    monkeypatch.setattr(harness.estimate, "cache_root", lambda: root)


@pytest.fixture(scope="session")
def embedded():
    from engines import compute_threads
    from engines.model.loader import load_model

    compute_threads.configure(2)
    return load_model()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules holding a `slow` test run first, each module's tests kept together and in order.

    `make test` spreads whole files over two workers (`--dist loadfile --no-loadscope-reorder`): a heavy
    file handed out last keeps one worker busy while the other idles, so heavy files go out first.
    """
    heavy = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in heavy)  # stable: the order within each group is kept
