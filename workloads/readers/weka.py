"""WEKA's agentic-coding traces read as agentic sessions (the `sessions` scenario's tool time and fan-out).

The format (callanjfox/kv-cache-tester `traces/*.json`, documented in its docs/trace_replay_tester.md; the
same one AIPerf's AgentX loader reads from SemiAnalysis's cc-traces-weka datasets): one JSON object per
conversation, `{"id", "requests": [...]}`. A request is `{"t", "type": "n"|"s", "in", "out", "api_time",
"think_time", "input_types", ...}` with `t` in seconds from the conversation's start; a `{"type":
"subagent", "t", "duration_ms", "requests": [...]}` entry is a sub-agent with its own requests.

What becomes what, and what is inferred (docs/workloads.md says the same for a reader of the docs):
- a conversation is a session; its parent requests are its turns, in order;
- the sub-agents listed after parent request k are branches of turn k: sent with it, joined before turn
  k+1. A sub-agent's own requests collapse into one: its first prompt and its final answer;
- turn k+1's wait is `t[k+1]` minus the later of request k's end (`t[k] + api_time[k]`) and its sub-agents'
  ends (a marker's `t` is when its sub-agent finished: `t - duration_ms` is request k's end, checked here);
  without `api_time`, the request's `think_time` (the same wait, as the capture measured it), else the gap
  between arrivals (an upper bound: it includes the service time). The wait is tool time (`tool_s`) when
  turn k+1's new input is a tool result, else think time (a person typing);
- turn k+1's new text is `in[k+1] - in[k] - out[k] - the sub-agents' answers`, at least 1 token: where the
  client dropped part of an answer (thinking blocks) the replayed prompt is that much longer than the trace's;
  where the prompt is shorter than request k's (the client compacted or cleared its context), the turn is
  `fresh`: its prompt starts over at `in[k+1]` tokens;
- the traces carry no wall-clock times, so the sessions' starts are a seeded Poisson process at `rate`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workloads.errors import WorkloadError
from workloads.options import MAX_SPAN_S, MAX_TOKENS
from workloads.readers.raw import parse_json, read_text
from workloads.sessions import MAX_FANOUT, Turn

PARENT_TYPES = ("n", "s")  # non-streaming and streaming calls; both are one request of the conversation
END_SLACK_S = 2.0  # a sub-agent starting later than this after its parent's answer is counted late (still its branch)


@dataclass(frozen=True)
class WekaFacts:
    """What the conversion had to infer, counted: said by `convert` beside the sessions' statistics."""

    sub_agent_requests: int = 0  # requests inside sub-agents, collapsed into one branch each
    waits_from_think_time: int = 0  # turns without api_time before them: the capture's own think_time
    waits_upper_bound: int = 0  # turns with neither: the gap between arrivals
    prompts_longer: int = 0  # turns whose new text came out < 1 token (the client dropped part of an answer)
    fresh_turns: int = 0  # turns whose prompt is shorter than the one before (compaction): the context starts over
    input_tokens_trace: int = 0  # main-line prompts as recorded
    input_tokens_replayed: int = 0  # the same prompts as the session replays them
    late_sub_agents: int = 0  # sub-agents that started more than END_SLACK_S after their parent's answer ended

    def __add__(self, other: WekaFacts) -> WekaFacts:
        return WekaFacts(*(a + b for a, b in zip(vars(self).values(), vars(other).values(), strict=True)))


def _fail(display: str, line: int, field: str, what: str) -> WorkloadError:
    return WorkloadError(what, file=display, line=line, field=field)


def _number(obj: dict[str, Any], key: str, where: str, display: str, line: int, required: bool = True) -> float | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_SPAN_S:
        raise _fail(
            display, line, f"{where}.{key}", f"expected a number of seconds 0..{MAX_SPAN_S:.0f}, found {value!r}"
        )
    return float(value)


def _tokens(obj: dict[str, Any], key: str, where: str, display: str, line: int, low: int) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_TOKENS:
        raise _fail(display, line, f"{where}.{key}", f"expected an integer {low}..{MAX_TOKENS:,}, found {value!r}")
    return value


def _entries(obj: dict[str, Any], where: str, display: str, line: int) -> list[dict[str, Any]]:
    entries = obj.get("requests")
    if not isinstance(entries, list) or not entries:
        raise _fail(display, line, f"{where}.requests", "expected a non-empty list of requests")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise _fail(display, line, f"{where}.requests[{i}]", f"expected an object, found {type(entry).__name__}")
    return entries


def _sub_agent(entry: dict[str, Any], where: str, display: str, line: int) -> tuple[int, int, float, float, int]:
    """(first prompt, final answer, start, end, requests) of a sub-agent marker."""
    inner = _entries(entry, where, display, line)
    end = _number(entry, "t", where, display, line)
    ms = _number(entry, "duration_ms", where, display, line, required=False)
    assert end is not None
    if ms is None:  # some markers lack it: the sub-agent's own last request gives its length
        last_t = _number(inner[-1], "t", f"{where}.requests[{len(inner) - 1}]", display, line)
        last_api = _number(inner[-1], "api_time", f"{where}.requests[{len(inner) - 1}]", display, line, False)
        ms = 1e3 * ((last_t or 0.0) + (last_api or 0.0))
    duration = ms
    first = _tokens(inner[0], "in", f"{where}.requests[0]", display, line, 1)
    last = len(inner) - 1
    answer = max(1, _tokens(inner[last], "out", f"{where}.requests[{last}]", display, line, 0))
    return first, answer, end - duration / 1e3, end, len(inner)


def conversation_turns(obj: Any, display: str, line: int, at_s: float) -> tuple[list[Turn], WekaFacts]:
    """One conversation's turns (branches right after their turn's main line), starting at `at_s`."""
    if not isinstance(obj, dict):
        raise _fail(display, line, "json", f"expected a conversation object, found {type(obj).__name__}")
    session = obj.get("id")
    if not isinstance(session, str) or not session:
        raise _fail(display, line, "id", f"expected the conversation's id (a string), found {session!r}")
    turns: list[Turn] = []
    facts = WekaFacts()
    end: float | None = None  # when the previous parent request's answer (and its sub-agents) finished
    prev: tuple[float, int, int] | None = None  # the previous parent request's t, in, out
    answers = 0  # sub-agents' answers since the previous parent request
    history = 0  # the replayed prompt of the previous parent request, plus its answer and its sub-agents' answers
    for i, entry in enumerate(_entries(obj, "requests", display, line)):
        where = f"requests[{i}]"
        kind = entry.get("type")
        if kind == "subagent":
            if prev is None:
                raise _fail(display, line, f"{where}.type", "a sub-agent before the conversation's first request")
            branch = sum(1 for t in turns if t.turn == turns[-1].turn)
            if branch >= MAX_FANOUT:
                raise _fail(display, line, where, f"more than {MAX_FANOUT - 1} sub-agents after one request")
            first, answer, start, finish, inner = _sub_agent(entry, where, display, line)
            turns.append(Turn(session, turns[-1].turn, first, answer, branch=branch))
            late = end is not None and start > end + END_SLACK_S
            facts += WekaFacts(sub_agent_requests=inner, late_sub_agents=int(late))
            end = finish if end is None else max(end, finish)
            answers += answer
            history += answer
            continue
        if kind not in PARENT_TYPES:
            raise _fail(display, line, f"{where}.type", f"expected n, s or subagent, found {kind!r}")
        t = _number(entry, "t", where, display, line)
        assert t is not None
        tokens_in = _tokens(entry, "in", where, display, line, 1)
        tokens_out = max(1, _tokens(entry, "out", where, display, line, 0))
        api = _number(entry, "api_time", where, display, line, required=False)
        think = _number(entry, "think_time", where, display, line, required=False)
        types = entry.get("input_types", [])
        if not isinstance(types, list):
            raise _fail(display, line, f"{where}.input_types", f"expected a list of strings, found {types!r}")
        if prev is None:
            turns.append(Turn(session, 0, tokens_in, tokens_out, at_s))
            replayed = tokens_in
        else:
            if end is not None:
                wait = max(0.0, t - end)
            elif think is not None:
                wait, facts = think, facts + WekaFacts(waits_from_think_time=1)
            else:
                wait, facts = max(0.0, t - prev[0]), facts + WekaFacts(waits_upper_bound=1)
            fresh = tokens_in < prev[1]
            new = tokens_in if fresh else tokens_in - prev[1] - prev[2] - answers
            facts += WekaFacts(prompts_longer=int(new < 1), fresh_turns=int(fresh))
            tool = "tool_result" in types
            turns.append(
                Turn(
                    session,
                    turns[-1].turn + 1,
                    max(1, new),
                    tokens_out,
                    think_s=0.0 if tool else wait,
                    tool_s=wait if tool else 0.0,
                    fresh=fresh,
                )
            )
            replayed = max(1, new) if fresh else history + max(1, new)
        facts += WekaFacts(input_tokens_trace=tokens_in, input_tokens_replayed=replayed)
        prev, answers, history = (t, tokens_in, tokens_out), 0, replayed + tokens_out
        end = None if api is None else t + api
    if prev is None:
        raise _fail(display, line, "requests", "no request of type n or s")
    return turns, facts


def _conversations(path: Path, display: str) -> list[tuple[Any, str, int]]:
    """(object, file shown in errors, line) of each conversation: a directory of .json files in name order,
    one .json file, or JSON lines of conversations."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise _fail(display, 1, "file", "a directory without .json conversations")
    found: list[tuple[Any, str, int]] = []
    for file in files:
        shown = f"{display}/{file.name}" if path.is_dir() else display
        text = read_text(file, shown)
        lines = [(n, s) for n, s in enumerate(text.split("\n"), start=1) if s.strip()]
        chunks = lines if file.suffix.lower() == ".jsonl" else [(1, text)]
        for number, chunk in chunks:
            found.append((parse_json(chunk, shown, "a conversation", number), shown, number))
    return found


def read_weka(path: Path, display: str, rate: float, seed: int) -> tuple[list[Turn], WekaFacts]:
    """Every conversation under `path` as a session; sessions start as a Poisson process at `rate` per second."""
    conversations = _conversations(path, display)
    gaps = np.random.default_rng([seed, 14]).exponential(1.0 / rate, len(conversations))
    starts = np.cumsum(gaps) - gaps[0]
    turns: list[Turn] = []
    facts = WekaFacts()
    seen: dict[str, str] = {}
    for (obj, shown, line), start in zip(conversations, starts, strict=True):
        more, found = conversation_turns(obj, shown, line, float(start))
        if more[0].session in seen:  # two conversations with one id would be merged into one session
            raise _fail(shown, line, "id", f"conversation id {more[0].session!r} is also in {seen[more[0].session]}")
        seen[more[0].session] = shown
        turns += more
        facts += found
    return turns, facts


def session_lines(turns: list[Turn]) -> list[str]:
    """The canonical session file (workloads/sessions.py) for these turns, one JSON line each."""
    out = []
    for t in turns:
        row: dict[str, Any] = {"session": t.session, "turn": t.turn}
        if t.branch:
            row["branch"] = t.branch
        elif t.turn == 0:
            row["at_s"] = round(t.at_s, 3)
        else:
            row |= {k: round(v, 3) for k, v in (("think_s", t.think_s), ("tool_s", t.tool_s)) if v}
            row |= {"fresh": True} if t.fresh else {}
        out.append(
            json.dumps(row | {"new_tokens": t.new_tokens, "output_tokens": t.output_tokens}, separators=(",", ":"))
        )
    return out
