"""A spec's [sessions] source as turns: generated, or read from a file by its format (workloads/sessions.py
for the canonical and ShareGPT files, workloads/readers/weka.py for WEKA traces, which builds on Turn)."""

from __future__ import annotations

from workloads.readers.weka import read_weka
from workloads.sessions import (
    SessionSource,
    Turn,
    first_sessions,
    generate_sessions,
    read_session_file,
    read_sharegpt,
    session_text,
)


def load_turns(source: SessionSource, seed: int) -> list[Turn]:
    if source.file is None:
        return generate_sessions(source, seed)
    turns = _file_turns(source, seed)
    return turns if source.first_sessions is None else first_sessions(turns, source.first_sessions)


def _file_turns(source: SessionSource, seed: int) -> list[Turn]:
    assert source.file is not None
    display = str(source.file)
    fmt = source.format
    if fmt == "weka":
        return read_weka(source.file, display, source.rate, seed)[0]
    if fmt == "auto":
        head = session_text(source.file, display).lstrip()[:1]
        fmt = "sharegpt" if head == "[" else "sessions"
    if fmt == "sharegpt":
        return read_sharegpt(source.file, display, source.rate, source.think_s, seed)
    return read_session_file(source.file, display)
