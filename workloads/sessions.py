"""Multi-turn workloads: sessions of turns, read from a file or generated, turned into workload requests.

A session is a conversation. Its turn 0 starts at the session's start time; turn k is sent when turn
k-1's answer has finished plus a think time (closed within the session, open across sessions: the load
generator's `sessions` scenario). Turn k's prompt is turn k-1's prompt, then turn k-1's answer, then the
new user text, so `input_tokens` of turn k = input(k-1) + output(k-1) + new(k), and every turn's prompt
extends the one before: a prefix cache can reuse it. Turn 0 may open with shared blocks (`prefix_hash_ids`,
512 tokens each, the same tokens wherever the id appears: a system prompt shared across sessions).

Agentic sessions add two things. A tool's run time (`tool_s`) between an answer and the next turn, after
the think time and distinct from it: the agent waits on a tool, not on a person. And fan-out: a turn of k
branches is k requests sent together: branch 0 is the main line (the history plus new text), branches
1..k-1 are sub-agents (a fresh context: the session's shared system blocks and their own task text). The
next turn waits for all k (the join) and its prompt carries their answers: the main line's history, its
answer, every sub-agent's answer, then its new text. A session is then a DAG of requests, and its
completion time is the job metric (`harness/metrics/jobs.py`).

The answer in the history is the workload's own (seeded tokens of the answer's length), not what the
engine generated, so every engine sees identical prompts and runs pair turn by turn.

Sources:
- batchmark's canonical session file (JSON lines, one turn per line, `docs/workloads.md`):
  `{"session": "s1", "turn": 0, "at_s": 0.0, "new_tokens": 120, "output_tokens": 80, "prefix_hash_ids": [7]}`
  `{"session": "s1", "turn": 1, "think_s": 2.5, "new_tokens": 30, "output_tokens": 60}`
  Turns of a session come in order; turn 0 first. Optional: `tenant` (turn 0), `think_s` and `tool_s` (later
  turns), and `branch`: a line `{"session": "s1", "turn": 1, "branch": 1, "new_tokens": 40, "output_tokens": 90}`
  right after branch 0 (or branch 1, ...) of that turn is a sub-agent sent with it; `"fresh": true` (a later
  turn's branch 0): the client cut its context, so the prompt starts over (shared blocks, then `new_tokens`).
- WEKA agentic-coding traces (`format = "weka"`, `workloads/readers/weka.py`).
A file's `first_sessions = N` keeps the N sessions that start first, whole.
- ShareGPT-style JSON (`[{"id": ..., "conversations": [{"from": "human"|"gpt"|"system", "value": ...}]}]`):
  each human message and the reply after it is one turn; lengths are estimated at 4 characters per token
  (the texts are not replayed); sessions start as a Poisson process at `rate` per second.
- Generated (`[sessions]` in a spec without `file`): `count` sessions at `rate` per second, with turn
  counts, new-text and answer lengths drawn from length distributions, and `shared_prefix_blocks` blocks of
  one system prompt opening every session (the agentic preset); `tool_ms` (a length distribution in
  milliseconds) draws each later turn's tool time, `fanout` each later turn's branch count, with
  `sub_tokens` and `sub_output` the sub-agents' task text and answer lengths.
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from workloads.errors import WorkloadError
from workloads.lengths import Fixed, LengthDist
from workloads.model import WorkloadRequest
from workloads.options import MAX_SPAN_S, MAX_TOKENS
from workloads.prompts import BLOCK_TOKENS
from workloads.readers.raw import parse_json, read_text

CHARS_PER_TOKEN = 4  # OpenAI's rule of thumb for English text, for ShareGPT files that carry text only
SYSTEM_HASH_BASE = 1 << 48  # generated system-prompt blocks: ids no trace file uses
TURN_KEYS = {
    "session",
    "turn",
    "branch",
    "at_s",
    "think_s",
    "tool_s",
    "new_tokens",
    "output_tokens",
    "prefix_hash_ids",
    "tenant",
    "fresh",
}
MAX_FANOUT = 64  # branches of one turn: beyond any agent framework's parallel tool calls


@dataclass(frozen=True)
class Turn:
    """One turn as a source states it: its new user text, its answer and when it may be sent."""

    session: str
    turn: int
    new_tokens: int
    output_tokens: int
    at_s: float = 0.0  # turn 0: when the session starts
    think_s: float = 0.0  # later turns: the pause after the previous answer
    prefix_hash_ids: tuple[int, ...] = ()  # turn 0: shared 512-token blocks before the new text
    tenant: str = "default"
    tool_s: float = 0.0  # later turns: the tool's run time, after the think time
    branch: int = 0  # 0: the main line; 1..: a sub-agent sent with branch 0 of the same turn
    fresh: bool = False  # a later turn whose context starts over (the client compacted it): no history


@dataclass(frozen=True)
class SessionSource:
    """A spec's [sessions]: a file (canonical or ShareGPT) or a generator."""

    file: Path | None = None
    format: str = "auto"  # sessions | sharegpt | weka | auto (by content)
    count: int = 16  # generated: how many sessions
    rate: float = 0.5  # sessions per second (generated and ShareGPT; a canonical file has its own times)
    turns: LengthDist = field(default_factory=lambda: Fixed(4))
    first_tokens: LengthDist = field(default_factory=lambda: Fixed(128))  # turn 0's new text
    new_tokens: LengthDist = field(default_factory=lambda: Fixed(32))  # later turns' new text
    output: LengthDist = field(default_factory=lambda: Fixed(64))
    think_s: float = 1.0
    shared_prefix_blocks: int = 0  # blocks of one system prompt opening every session
    tenant: str = "default"
    tool_ms: LengthDist | None = None  # generated: each later turn's tool time in ms (None: no tool time)
    fanout: LengthDist = field(default_factory=lambda: Fixed(1))  # generated: branches of each later turn
    sub_tokens: LengthDist | None = None  # sub-agents' task text (None: as new_tokens)
    sub_output: LengthDist | None = None  # sub-agents' answers (None: as output)
    first_sessions: int | None = None  # a file: keep the first N sessions to start (whole ones: none is cut)

    def to_spec(self) -> dict[str, Any]:
        if self.file is not None:
            first = {} if self.first_sessions is None else {"first_sessions": self.first_sessions}
            return {
                "kind": "sessions",
                "file": self.file.name,
                "format": self.format,
                "rate": self.rate,
                "think_s": self.think_s,
            } | first
        spec = {
            "kind": "sessions",
            "count": self.count,
            "rate": self.rate,
            "turns": self.turns.to_spec(),
            "first_tokens": self.first_tokens.to_spec(),
            "new_tokens": self.new_tokens.to_spec(),
            "output": self.output.to_spec(),
            "think_s": self.think_s,
            "shared_prefix_blocks": self.shared_prefix_blocks,
            "tenant": self.tenant,
        }
        agentic = {
            "tool_ms": self.tool_ms,
            "fanout": None if self.fanout == Fixed(1) else self.fanout,
            "sub_tokens": self.sub_tokens,
            "sub_output": self.sub_output,
        }
        # absent when unset: the specs (and fingerprints) of workloads without them stay as they were
        return spec | {k: v.to_spec() for k, v in agentic.items() if v is not None}


def _fail(display: str, line: int, field_name: str, what: str) -> WorkloadError:
    return WorkloadError(what, file=display, line=line, field=field_name)


def _int(obj: dict[str, Any], key: str, display: str, line: int, low: int, high: int = MAX_TOKENS) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(display, line, key, f"expected an integer {low}..{high:,}, found {value!r}")
    return value


def _seconds(obj: dict[str, Any], key: str, display: str, line: int) -> float:
    value = obj.get(key, 0.0)
    # bounded: a turn at 1e300 s was accepted and the run waited for it forever
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_SPAN_S:
        raise _fail(display, line, key, f"expected a number of seconds 0..{MAX_SPAN_S:.0f}, found {value!r}")
    return float(value)


def session_text(path: Path, display: str) -> str:
    """A session file's text; a `.gz` one decompressed (the bundled Weka sessions are 4 MiB as text)."""
    if path.suffix.lower() != ".gz":
        return read_text(path, display)
    try:
        data = gzip.decompress(path.read_bytes())
    except FileNotFoundError:
        raise _fail(display, 1, "file", "no such file") from None
    except (OSError, EOFError) as exc:  # BadGzipFile is an OSError; a cut file ends early
        raise _fail(display, 1, "file", f"not a whole gzip file ({exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(display, data[: exc.start].count(b"\n") + 1, "file", "not UTF-8 text once decompressed") from None


def read_session_file(path: Path, display: str) -> list[Turn]:
    """The canonical session format; the first bad line is one error naming its line and field."""
    turns: list[Turn] = []
    last_turn: dict[str, int] = {}
    last_branch: dict[str, int] = {}
    for number, line in enumerate(session_text(path, display).split("\n"), start=1):
        if not line.strip():
            continue
        obj = parse_json(line, display, "a session turn", number)
        if not isinstance(obj, dict):
            raise _fail(display, number, "json", f"expected a JSON object per line, found {type(obj).__name__}")
        unknown = sorted(set(obj) - TURN_KEYS)
        if unknown:
            raise _fail(display, number, unknown[0], f"unknown key; expected one of {', '.join(sorted(TURN_KEYS))}")
        session = obj.get("session")
        if isinstance(session, bool) or not isinstance(session, str | int) or session == "":
            raise _fail(display, number, "session", f"expected a session id (string or integer), found {session!r}")
        session = str(session)
        turn = _int(obj, "turn", display, number, 0)
        seen = last_turn.get(session)
        branch = _int(obj, "branch", display, number, 0, MAX_FANOUT - 1) if "branch" in obj else 0
        if branch:
            turns.append(_sub_agent(obj, display, number, session, turn, branch, seen, last_branch.get(session)))
            last_branch[session] = branch
            continue
        if turn > 0 and seen is None:
            raise _fail(
                display,
                number,
                "turn",
                f"turn {turn} of session {session!r} comes before the session starts (its turn 0)",
            )
        if turn > 0 and seen != turn - 1:
            raise _fail(
                display,
                number,
                "turn",
                f"turn {turn} of session {session!r} has no parent: the turn before it is {seen}, not {turn - 1}",
            )
        if turn == 0 and seen is not None:
            raise _fail(display, number, "turn", f"session {session!r} starts twice")
        if turn == 0 and "at_s" not in obj:
            raise _fail(display, number, "at_s", "turn 0 needs the session's start time in seconds")
        for key in ("at_s", "prefix_hash_ids", "tenant") if turn > 0 else ("think_s", "tool_s", "fresh"):
            if key in obj:
                raise _fail(display, number, key, f"only {'turn 0' if turn > 0 else 'a later turn'} has {key}")
        hashes = obj.get("prefix_hash_ids", [])
        if not isinstance(hashes, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in hashes):
            raise _fail(display, number, "prefix_hash_ids", f"expected a list of integers, found {hashes!r}")
        if len(hashes) * BLOCK_TOKENS > MAX_TOKENS:  # a prefix of 10^8 tokens exhausted memory
            raise _fail(display, number, "prefix_hash_ids", f"{len(hashes):,} blocks: beyond {MAX_TOKENS:,} tokens")
        tenant = obj.get("tenant", "default")
        if not isinstance(tenant, str):
            raise _fail(display, number, "tenant", f"expected a string, found {tenant!r}")
        fresh = obj.get("fresh", False)
        if not isinstance(fresh, bool):
            raise _fail(display, number, "fresh", f"expected true or false, found {fresh!r}")
        new = _int(obj, "new_tokens", display, number, 0 if hashes else 1)
        turns.append(
            Turn(
                session,
                turn,
                new,
                _int(obj, "output_tokens", display, number, 1),
                _seconds(obj, "at_s", display, number),
                _seconds(obj, "think_s", display, number),
                tuple(hashes),
                tenant,
                _seconds(obj, "tool_s", display, number),
                fresh=fresh,
            )
        )
        last_turn[session] = turn
        last_branch[session] = 0
    if not turns:
        raise _fail(display, 1, "file", "no turns")
    return turns


def _sub_agent(
    obj: dict[str, Any],
    display: str,
    number: int,
    session: str,
    turn: int,
    branch: int,
    seen: int | None,
    last: int | None,
) -> Turn:
    """A line of branch >= 1: a sub-agent of the turn just read, which gives its start, pauses and tenant."""
    if seen != turn or last != branch - 1:
        what = f"branch {branch} of session {session!r} turn {turn} must follow its branch {branch - 1}"
        raise _fail(display, number, "branch", what)
    for key in ("at_s", "think_s", "tool_s", "prefix_hash_ids", "tenant", "fresh"):
        if key in obj:
            raise _fail(display, number, key, f"a branch shares its turn's {key}: only branch 0 has it")
    return Turn(
        session,
        turn,
        _int(obj, "new_tokens", display, number, 1),
        _int(obj, "output_tokens", display, number, 1),
        branch=branch,
    )


def read_sharegpt(path: Path, display: str, rate: float, think_s: float, seed: int) -> list[Turn]:
    """ShareGPT-style conversations: one session each, a turn per human message and its reply."""
    data = parse_json(read_text(path, display), display, "a list of conversations")
    if not isinstance(data, list):
        raise _fail(display, 1, "json", "expected a list of conversations")
    starts = np.cumsum(np.random.default_rng([seed, 11]).exponential(1.0 / rate, len(data)))
    turns: list[Turn] = []
    seen_ids: dict[str, int] = {}
    for index, item in enumerate(data):
        where = f"[{index}].conversations"
        messages = item.get("conversations") if isinstance(item, dict) else None
        if not isinstance(messages, list):
            raise _fail(display, 1, where, f"conversation {index}: expected a list of messages")
        session = str(item.get("id", index))
        if session in seen_ids:  # two conversations with one id would be merged into one session
            raise _fail(
                display, 1, f"[{index}].id", f"conversation id {session!r} is also conversation {seen_ids[session]}'s"
            )
        seen_ids[session] = index
        system, pending, k = 0, None, 0
        for m, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("value"), str):
                raise _fail(display, 1, f"{where}[{m}]", 'expected {"from": ..., "value": "text"}')
            tokens = max(1, math.ceil(len(message["value"]) / CHARS_PER_TOKEN))
            role = message.get("from")
            if role == "system":
                system += tokens
            elif role in ("human", "user"):
                pending = tokens + (system if k == 0 else 0)
            elif role in ("gpt", "assistant", "chatgpt", "bard") and pending is not None:
                turns.append(
                    Turn(session, k, pending, tokens, float(starts[index]) if k == 0 else 0.0, think_s if k else 0.0)
                )
                pending, k = None, k + 1
    if not turns:
        raise _fail(display, 1, "conversations", "no human message answered by the model")
    return turns


def generate_sessions(source: SessionSource, seed: int) -> list[Turn]:
    rng = np.random.default_rng([seed, 12])
    starts = np.cumsum(rng.exponential(1.0 / source.rate, source.count)) - 0.0
    starts -= starts[0]
    counts = source.turns.sample(rng, source.count)
    system = tuple(SYSTEM_HASH_BASE + b for b in range(source.shared_prefix_blocks))
    turns: list[Turn] = []
    # agentic draws come from a stream of their own, so the plain sessions of a spec without them stay as they were
    agentic = np.random.default_rng([seed, 13])
    for s in range(source.count):
        n = int(counts[s])
        first = int(source.first_tokens.sample(rng, 1)[0])
        news = source.new_tokens.sample(rng, max(0, n - 1))
        outputs = source.output.sample(rng, n)
        session = f"s{s:04d}"
        for k in range(n):
            new = first if k == 0 else int(news[k - 1])
            tool = float(source.tool_ms.sample(agentic, 1)[0]) / 1e3 if k and source.tool_ms is not None else 0.0
            turns.append(
                Turn(
                    session,
                    k,
                    new,
                    int(outputs[k]),
                    float(starts[s]) if k == 0 else 0.0,
                    source.think_s if k else 0.0,
                    system if k == 0 else (),
                    source.tenant,
                    tool,
                )
            )
            if k:
                turns += _sub_agents(source, agentic, session, k)
    return turns


def _sub_agents(source: SessionSource, rng: np.random.Generator, session: str, k: int) -> list[Turn]:
    """Turn k's branches 1..fanout-1, drawn from the source's fan-out and sub-agent lengths."""
    branches = int(source.fanout.sample(rng, 1)[0])
    if not 1 <= branches <= MAX_FANOUT:
        raise WorkloadError(f"drew {branches} branches; expected 1..{MAX_FANOUT}", field="sessions.fanout")
    tasks = (source.sub_tokens or source.new_tokens).sample(rng, branches - 1)
    answers = (source.sub_output or source.output).sample(rng, branches - 1)
    return [
        Turn(session, k, int(tasks[j]), int(answers[j]), tenant=source.tenant, branch=j + 1)
        for j in range(branches - 1)
    ]


def session_requests(turns: list[Turn], max_context: int | None = None) -> tuple[list[WorkloadRequest], list[str]]:
    """Workload requests in order of their earliest send time; a session is cut before the first turn
    whose prompt and answer would not fit `max_context` (and says so in a note)."""
    rows: list[tuple[float, int, WorkloadRequest]] = []
    # session -> (prompt + answers so far, the earliest time of its current turn, its shared system blocks)
    state: dict[str, tuple[int, float, tuple[int, ...]]] = {}
    cut: set[str] = set()
    limit = MAX_TOKENS if max_context is None else max_context  # unbounded history grew to 10^8 tokens
    for order, t in enumerate(turns):
        if t.session in cut:
            continue
        history, earliest, system = state.get(t.session, (0, t.at_s, t.prefix_hash_ids))
        # a sub-agent, and a turn whose context starts over, open with the system prompt alone
        hashes = system if t.branch or t.fresh else t.prefix_hash_ids
        fresh = t.turn == 0 or t.branch > 0 or t.fresh
        prompt = (len(hashes) * BLOCK_TOKENS + t.new_tokens) if fresh else history + t.new_tokens
        if prompt + t.output_tokens > limit or (t.branch and history + t.output_tokens > limit):
            cut.add(t.session)
            continue
        at = earliest if t.branch else earliest + t.think_s + t.tool_s
        request = WorkloadRequest(
            "",
            at,
            prompt,
            t.output_tokens,
            t.tenant,
            prefix_hash_ids=hashes,
            session=t.session,
            turn=t.turn,
            think_s=t.think_s,
            tool_s=t.tool_s,
            branch=t.branch,
            fresh=t.fresh,
        )
        rows.append((at, order, request))
        # the main line's history takes its own prompt and answer; a sub-agent's answer joins it
        state[t.session] = (history + t.output_tokens if t.branch else prompt + t.output_tokens, at, system)
    rows.sort(key=lambda row: (row[0], row[1]))
    requests = [replace(r, request_id=f"r{i:06d}") for i, (_, _, r) in enumerate(rows)]
    notes = [f"{len(cut)} sessions cut at the first turn past the context of {limit} tokens"] if cut else []
    if not requests:
        raise WorkloadError("no turn fits", field="max_context")
    return requests, notes


def is_session_file(path: Path) -> bool:
    """A ShareGPT-style JSON list, or JSON lines whose first object has `session` and `turn`."""
    try:
        with path.open("rb") as f:
            head = f.read(4096).decode("utf-8-sig", "replace").lstrip()
    except OSError:
        return False
    if path.suffix.lower() == ".json" and head.startswith("["):
        return True
    first = head.split("\n", 1)[0]
    return first.startswith("{") and '"session"' in first and '"turn"' in first


def scaled(turns: list[Turn], factor: float) -> list[Turn]:
    """Sessions start and think `factor` times as fast."""
    return [replace(t, at_s=t.at_s / factor, think_s=t.think_s / factor, tool_s=t.tool_s / factor) for t in turns]


def first_sessions(turns: list[Turn], n: int) -> list[Turn]:
    """The turns of the n sessions that start first (file order breaks ties)."""
    starts = sorted((t.at_s, i, t.session) for i, t in enumerate(turns) if t.turn == 0 and not t.branch)
    keep = {session for _, _, session in starts[:n]}
    return [t for t in turns if t.session in keep]
