# ruff: noqa: E402, E731, E741  (a by-hand audit script: case tables one per line)
"""By-hand audit of #32's bad-input classes with NEW cases: each must be exit 2, one printable line naming the
field, no traceback, nothing written (the --out path absent)."""

import copy
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

WT = Path(__file__).resolve().parents[2]
PY = sys.executable
import tempfile

T = Path(tempfile.mkdtemp(prefix="issue32-audit-"))
FX = WT / "tests/importers/fixtures"
CASES = []


def case(cls, name, argv, field, out=None):
    CASES.append((cls, name, argv, field, out))


def write(name, data, mode="t"):
    p = T / name
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data)
    return p


def mut(fixture, fn):
    text = (FX / fixture).read_text()
    if fixture.endswith(".jsonl"):
        lines = [json.loads(l) for l in text.splitlines()]
        fn(lines)
        return "\n".join(json.dumps(l) for l in lines)
    d = json.loads(text)
    fn(d)
    return json.dumps(d)


def setk(*keys, value):
    def f(node):
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return f


n = 0


def imp(name, fixture, fn, field, raw=None):
    global n
    n += 1
    p = T / f"imp{n}"
    p.mkdir()
    f = p / fixture
    if raw is not None:
        f.write_bytes(raw) if isinstance(raw, bytes) else f.write_text(raw)
    else:
        f.write_text(mut(fixture, fn))
    case("importers", name, ["import", str(f), "--out", str(p / "out")], field, p / "out")


V, G, A, AJ, BR = (
    "vllm-bench-serve-detailed.json",
    "guidellm-benchmarks.json",
    "profile_export.jsonl",
    "profile_export_aiperf.json",
    "llm-d-br-v0.2.json",
)
imp("vllm ttfts[0]=Infinity", V, setk("ttfts", 0, value=float("inf")), "ttfts[0]")
imp("vllm ttfts={} (wrong nesting)", V, setk("ttfts", value={}), "ttfts")
imp("vllm input_lens[0]=-0.0", V, setk("input_lens", 0, value=-0.0), "input_lens[0]")
imp("vllm input_lens[0]=2**70", V, setk("input_lens", 0, value=2**70), "input_lens[0]")
imp("vllm start_times[0]=''", V, setk("start_times", 0, value=""), "start_times[0]")
imp("vllm request_rate=-1", V, setk("request_rate", value=-1), "request_rate")
imp("vllm mean_ttft_ms=ESC string", V, setk("mean_ttft_ms", value="\x1b]0;pwn\x07"), "mean_ttft_ms")
imp("vllm itls[0]=[[0.1]] (too deep)", V, setk("itls", 0, value=[[0.1]]), "itls[0]")
imp("vllm top-level list", V, None, "top level", raw="[1, 2]")
imp("vllm NUL bytes", V, None, "file", raw=b"\x00" * 64)
imp("guidellm benchmarks={}", G, setk("benchmarks", value={}), "benchmarks")
imp("guidellm successful='x'", G, setk("benchmarks", 0, "requests", "successful", value="x"), "successful")
imp(
    "guidellm request_start=1e308*10 (inf)",
    G,
    setk("benchmarks", 0, "requests", "successful", 0, "info", "timings", "request_start", value=float("inf")),
    "request_start",
)
imp(
    "guidellm prompt_tokens=2**70",
    G,
    setk("benchmarks", 0, "requests", "successful", 0, "prompt_tokens", value=2**70),
    "prompt_tokens",
)
imp("aiperf line is []", A, setk(1, value=[]), "line 2")
imp("aiperf request_start_ns=2**70", A, setk(1, "metadata", "request_start_ns", value=2**70), "request_start_ns")
imp(
    "aiperf ttft value ''", A, setk(1, "metrics", "time_to_first_token", "value", value=""), "time_to_first_token.value"
)
imp("aiperf ttft unit ''", A, setk(1, "metrics", "time_to_first_token", "unit", value=""), "time_to_first_token.unit")
imp(
    "aiperf ttft unit 'MS'",
    A,
    setk(1, "metrics", "time_to_first_token", "unit", value="MS"),
    "time_to_first_token.unit",
)
imp("aiperf-json p50=-1", AJ, setk("time_to_first_token", "p50", value=-1), "time_to_first_token.p50")
imp("aiperf-json ttft=[]", AJ, setk("time_to_first_token", value=[]), "time_to_first_token")
imp(
    "br total=inf",
    BR,
    setk("results", "request_performance", "aggregate", "requests", "total", value=float("inf")),
    "requests.total",
)
imp(
    "br ttft mean=-1",
    BR,
    setk("results", "request_performance", "aggregate", "latency", "time_to_first_token", "mean", value=-1),
    "time_to_first_token.mean",
)
d = T / "adir.json"
d.mkdir()
case("importers", "a directory as the file", ["import", str(d), "--out", str(T / "o-dir")], str(d), T / "o-dir")
case(
    "importers",
    "a missing file",
    ["import", str(T / "nope.json"), "--out", str(T / "o-miss")],
    "nope.json",
    T / "o-miss",
)

# sim profiles and model configs
sys.path.insert(0, str(WT))
from engines.sim.fitted import fit_steps
from engines.sim.shape import CONFIG_DIR
from tests.sim.test_fitted import synthetic_steps

prof = fit_steps(synthetic_steps())
prof.engine = {"kv_bytes_per_token": 8192, "kv_blocks": 100}
PD = prof.to_json()


def simrun(name, spec, field):
    global n
    n += 1
    out = T / f"simrun{n}"
    case(
        "sim profile/config",
        name,
        ["run", "--out", str(out), "--no-report", "--no-progress", "--workload", "chat-small", "--engine", spec],
        field,
        out,
    )


def prof_with(name, fn, field, raw=None):
    global n
    n += 1
    p = T / f"prof{n}.json"
    if raw is not None:
        p.write_bytes(raw) if isinstance(raw, bytes) else p.write_text(raw)
    else:
        d = copy.deepcopy(PD)
        fn(d)
        p.write_text(json.dumps(d))
    simrun(name, f"sim:profile={p}", field)


k0 = next(iter(PD["coefficients"]))
prof_with("coefficient = Infinity", setk("coefficients", k0, value=float("inf")), k0)
prof_with("coefficients = [] (wrong nesting)", setk("coefficients", value=[]), "coefficients")
prof_with("intercept_s = 10**400 (huge int)", setk("intercept_s", value=10**400), "intercept_s")
prof_with("intercept_s = '0.1'", setk("intercept_s", value="0.1"), "intercept_s")
prof_with("empty profile file", None, "profile", raw="")
prof_with("binary profile file", None, "profile", raw=b"\xff\xfe\x00\x01")
dd = T / "profdir.json"
dd.mkdir()
simrun("profile is a directory", f"sim:profile={dd}", "profdir")
simrun("profile missing", f"sim:profile={T / 'missing.json'}", "missing.json")
cfg = json.loads((CONFIG_DIR / "llama-3.1-8b.json").read_text())


def cfg_with(name, key, value, field=None):
    global n
    n += 1
    p = T / f"cfg{n}.json"
    c = dict(cfg)
    c[key] = value
    p.write_text(json.dumps(c))
    simrun(name, f"sim:model={p}", field or key)


cfg_with("max_position_embeddings = 0", "max_position_embeddings", 0)
cfg_with("max_position_embeddings = 1.5", "max_position_embeddings", 1.5)
cfg_with("max_position_embeddings = 2**70", "max_position_embeddings", 2**70)
cfg_with("num_hidden_layers = -1", "num_hidden_layers", -1)
cfg_with("hidden_size = NaN", "hidden_size", float("nan"))
cfg_with("num_attention_heads = '32'", "num_attention_heads", "32")
# sim fidelity
FF = WT / "tests/fixtures/sim_fidelity"


def fid(name, run, profile, field):
    global n
    n += 1
    out = T / f"fid{n}.json"
    case("sim fidelity", name, ["sim", "fidelity", str(run), "--profile", str(profile), "--json", str(out)], field, out)


r1 = T / "fidrun1"
shutil.copytree(FF / "burst", r1)
(r1 / "metrics.json").unlink()
(r1 / "metrics.json").mkdir()
fid("metrics.json is a directory", r1, FF / "profile.json", "metrics")
r2 = T / "fidrun2"
shutil.copytree(FF / "burst", r2)
(r2 / "metrics.json").write_bytes(b"\xff\xfe\x00")
fid("metrics.json binary", r2, FF / "profile.json", "metrics")
fid("run dir missing", T / "no-run", FF / "profile.json", "no-run")
fid("run dir is a file", FF / "profile.json", FF / "profile.json", "profile.json")

# study plans
GOOD = (WT / "tests/study/test_study.py").read_text().split('GOOD = """')[1].split('"""')[0]


def plan(name, edit, field, raw=None):
    global n
    n += 1
    p = T / f"plan{n}.toml"
    out = T / f"planout{n}"
    if raw is not None:
        p.write_bytes(raw) if isinstance(raw, bytes) else p.write_text(raw)
    else:
        text = GOOD.replace(*edit)
        assert text != GOOD, edit
        p.write_text(text)
    case("study plans", name, ["study", str(p), "--sim", "--out", str(out)], field, out)


B = "[baseline]"
plan("trials = 0", (B, "trials = 0\n" + B), "trials")
plan("trials = inf", (B, "trials = inf\n" + B), "trials")
plan("trials = 2.5", (B, "trials = 2.5\n" + B), "trials")
plan("seed = true", (B, "seed = true\n" + B), "seed")
plan("seed = 9223372036854775807", (B, "seed = 9223372036854775807\n" + B), "seed")
plan("variants = [3]", ('[[variants]]\nname = "fair"\nchange = { policy = "fair" }\n', "variants = [3]\n"), "variants")
plan("change = 'x'", ('change = { policy = "fair" }', 'change = "x"'), "change")
plan("held_out = [] ", ("held_out = [5, 10]", "held_out = []"), "held_out")
plan("held_out = [10, 5] reversed", ("held_out = [5, 10]", "held_out = [10, 5]"), "held_out")
plan("held_out = [-0.0, 5] overlap?", ("tuning = [0, 5]", "tuning = [-5, -1]"), "tuning")
plan("held_out = 'x'", ("held_out = [5, 10]", 'held_out = "x"'), "held_out")
plan("slices nested [[5,10]]", ("held_out = [5, 10]", "held_out = [[5, 10]]"), "held_out")
plan("slo_ttft_ms = -1", (B, "slo_ttft_ms = -1\n" + B), "slo_ttft_ms")
plan("decision = '' empty", ('decision = "d"', 'decision = ""'), "decision")
plan("policy with ESC", ('change = { policy = "fair" }', 'change = { policy = "\\u001b]0;pwn\\u0007" }'), "policy")
plan("empty plan file", None, "plan", raw="")
plan("binary plan file", None, "plan", raw=b"\xff\xfe\x00\x01")
pd = T / "plandir.toml"
pd.mkdir()
case(
    "study plans", "plan is a directory", ["study", str(pd), "--sim", "--out", str(T / "pdout")], "plandir", T / "pdout"
)

# sessions, ShareGPT, traces, specs
TURN0 = {"session": "s", "turn": 0, "at_s": 0.0, "new_tokens": 10, "output_tokens": 5}


def wl(cls, name, fname, content, field):
    global n
    n += 1
    p = T / f"wl{n}"
    p.mkdir()
    f = p / fname
    f.write_bytes(content) if isinstance(content, bytes) else f.write_text(content)
    out = p / "run"
    case(
        cls,
        name + " [run]",
        ["run", "--workload", str(f), "--engine", "zero", "--out", str(out), "--no-report", "--no-progress"],
        field,
        out,
    )
    case(cls, name + " [describe]", ["workload", "describe", str(f)], field, None)


def sess(name, change, field):
    wl("sessions/sharegpt", "turn " + name, "sessions.jsonl", json.dumps(TURN0 | change) + "\n", field)


sess("at_s = -1", {"at_s": -1}, "at_s")
sess("at_s = NaN", {"at_s": float("nan")}, "at_s")
sess("new_tokens = 1.5", {"new_tokens": 1.5}, "new_tokens")
sess("new_tokens = true", {"new_tokens": True}, "new_tokens")
sess("output_tokens = -5", {"output_tokens": -5}, "output_tokens")
sess("session = '' empty", {"session": ""}, "session")
sess("prefix_hash_ids = 'x'", {"prefix_hash_ids": "x"}, "prefix_hash_ids")
sess("turn = 2**70", {"turn": 2**70}, "turn")
conv = lambda cid, conv=None: {
    "id": cid,
    "conversations": conv
    if conv is not None
    else [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}],
}
wl("sessions/sharegpt", "sharegpt conversations = 'x'", "sharegpt.json", json.dumps([conv("a", "x")]), "conversations")
wl(
    "sessions/sharegpt",
    "sharegpt value = 5",
    "sharegpt.json",
    json.dumps([conv("a", [{"from": "human", "value": 5}])]),
    "value",
)
wl("sessions/sharegpt", "sharegpt ids 1 and '1'", "sharegpt.json", json.dumps([conv(1), conv("1")]), "id")
wl(
    "sessions/sharegpt",
    "sharegpt nested dict 100k deep",
    "sharegpt.json",
    '{"a":' * 100000 + "1" + "}" * 100000,
    "json",
)
wl("sessions/sharegpt", "sharegpt top-level {} ", "sharegpt.json", "{}", "sharegpt")
SPEC = "[sessions]\ncount = 3\nrate = 1.0\nturns = 2\nfirst_tokens = 10\nnew_tokens = 5\noutput = 5\n"
for nm, ed, fld in [
    ("rate = inf", ("rate = 1.0", "rate = inf"), "rate"),
    ("rate = -1", ("rate = 1.0", "rate = -1.0"), "rate"),
    ("count = 1e9", ("count = 3", "count = 1000000000"), "count"),
    ("turns = 0", ("turns = 2", "turns = 0"), "turns"),
    ("first_tokens = 10**12", ("first_tokens = 10", "first_tokens = 1000000000000"), "first_tokens"),
    ("top-level duration_s = inf", ("[sessions]", "duration_s = inf\n[sessions]"), "duration_s"),
]:
    wl("sessions/sharegpt", "spec " + nm, "spec.toml", SPEC.replace(*ed), fld)
H = "arrival_s,input_tokens,output_tokens\n0,10,10\n"
for nm, row, fld in [
    ("arrival_s = inf", "inf,10,10", "arrival_s"),
    ("arrival_s = 1e400", "1e400,10,10", "arrival_s"),
    ("arrival_s = nan", "nan,10,10", "arrival_s"),
    ("arrival_s = -1e308", "-1e308,10,10", "arrival_s"),
    ("input_tokens = 10**12", "1,1000000000000,10", "input_tokens"),
    ("output_tokens = -5", "1,10,-5", "output_tokens"),
    ("output_tokens = 1.5", "1,10,1.5", "output_tokens"),
    ("output_tokens = ''", "1,10,", "output_tokens"),
]:
    wl("times/arrivals", "trace " + nm, "trace.csv", H + row + "\n", fld)
wl("times/arrivals", "trace empty file", "trace.csv", "", "trace.csv")
wl("times/arrivals", "trace binary", "trace.csv", b"\xff\xfe\x00\x01\x02", "trace.csv")
wl(
    "terminal escapes",
    "csv header with ESC in a column name",
    "trace.csv",
    "arrival_s,\x1b[2Jinput_tokens,output_tokens\n0,1,1\n",
    "column",
)
wl("terminal escapes", "trace value with ESC", "trace.csv", H + "\x1b]0;pwn\x07,10,10\n", "arrival_s")
wl(
    "terminal escapes",
    "sharegpt id with ESC dup",
    "sharegpt.json",
    json.dumps([conv("\x1b[31m"), conv("\x1b[31m")]),
    "id",
)
# ESC in the file path itself
ep = T / "esc\x1b[31mdir"
ep.mkdir()
(ep / "trace.csv").write_text(H + "inf,1,1\n")
case("terminal escapes", "file path holding ESC", ["workload", "describe", str(ep / "trace.csv")], "arrival_s", None)
case("terminal escapes", "--workload name holding ESC", ["workload", "describe", "\x1b]0;pwn\x07"], "workload", None)


# scale-out
def so(name, flags, field):
    global n
    n += 1
    out = T / f"so{n}"
    case(
        "scale-out",
        name,
        [
            "run",
            "--workload",
            "chat-small",
            "--engine",
            "zero",
            *flags,
            "--out",
            str(out),
            "--no-progress",
            "--no-report",
        ],
        field,
        out,
    )


so("--workers 0", ["--workers", "0"], "--workers")
so("--workers -1", ["--workers", "-1"], "--workers")
so("--workers 1e3", ["--workers", "1e3"], "--workers")
so("--workers 2**70", ["--workers", str(2**70)], "--workers")
so("--ray-address '' empty", ["--executor", "ray", "--ray-address", ""], "--ray-address")
so("--ray-address port 99999", ["--executor", "ray", "--ray-address", "127.0.0.1:99999"], "--ray-address")
so("--ray-address no such host", ["--executor", "ray", "--ray-address", "no-such-host.invalid:6379"], "--ray-address")


# option sanity
def opt(name, flags, field):
    global n
    n += 1
    out = T / f"opt{n}"
    case(
        "option sanity",
        name,
        [
            "run",
            "--workload",
            "chat-small",
            "--requests",
            "4",
            "--engine",
            "sim",
            *flags,
            "--out",
            str(out),
            "--no-report",
            "--no-progress",
        ],
        field,
        out,
    )


opt(
    "--fallback-threshold nan",
    ["--fallback", "cap", "--fallback-signal", "kv", "--fallback-threshold", "nan"],
    "fallback",
)
opt(
    "--fallback-threshold -0.5",
    ["--fallback", "cap", "--fallback-signal", "kv", "--fallback-threshold", "-0.5"],
    "fallback",
)
opt(
    "--fallback-threshold inf",
    ["--fallback", "cap", "--fallback-signal", "kv", "--fallback-threshold", "inf"],
    "fallback",
)
opt("--fallback-max-running 0", ["--fallback", "cap", "--fallback-max-running", "0"], "fallback")
opt("--time-scale 0", ["--time-scale", "0"], "--time-scale")
opt("--time-scale inf", ["--time-scale", "inf"], "--time-scale")
opt("--stop-run-s nan", ["--stop-run-s", "nan"], "--stop-run-s")
opt("--requests 0", ["--requests", "0"], "--requests")
af = T / "a-file"
af.write_text("")
case(
    "option sanity",
    "run --out under a file",
    [
        "run",
        "--workload",
        "chat-small",
        "--requests",
        "4",
        "--engine",
        "zero",
        "--out",
        str(af / "sub"),
        "--no-report",
        "--no-progress",
    ],
    "--out",
    None,
)
STUDY = WT / "tests/study/overturned.toml"
case(
    "option sanity", "study --out is an existing file", ["study", str(STUDY), "--sim", "--out", str(af)], "--out", None
)
case("option sanity", "study --out under /proc", ["study", str(STUDY), "--sim", "--out", "/proc/x/out"], "--out", None)
case("option sanity", "sim fit -o is a directory", ["sim", "fit", str(T), "-o", str(T)], "-o", None)
case("option sanity", "sim fit -o under /proc", ["sim", "fit", str(T), "-o", "/proc/x/p.json"], "-o", None)
case(
    "option sanity",
    "study --trials 0",
    ["study", str(STUDY), "--sim", "--trials", "0", "--out", str(T / "st0")],
    "--trials",
    T / "st0",
)
case(
    "option sanity",
    "study --trials -3",
    ["study", str(STUDY), "--sim", "--trials", "-3", "--out", str(T / "st1")],
    "--trials",
    T / "st1",
)


def check(c):
    cls, name, argv, field, out = c
    env = dict(os.environ, PYTHONPATH=str(WT))
    try:
        p = subprocess.run(
            [PY, "-m", "harness.cli", *argv],
            capture_output=True,
            text=True,
            errors="surrogateescape",
            timeout=90,
            env=env,
            cwd=str(T),
        )
    except subprocess.TimeoutExpired:
        return (cls, name, "FAIL", "timed out after 90 s (hang)")
    err = p.stderr
    lines = [l for l in err.splitlines() if l.strip()]
    probs = []
    if p.returncode != 2:
        probs.append(f"rc={p.returncode}")
    if "Traceback" in err:
        probs.append("traceback")
    if len(lines) != 1:
        probs.append(f"{len(lines)} stderr lines")
    if not err.rstrip("\n").isprintable():
        probs.append("unprintable bytes in stderr")
    if field and field not in err:
        probs.append(f"field {field!r} not named")
    if out is not None and Path(out).exists():
        probs.append("out written")
    return (
        cls,
        name,
        "ok" if not probs else "FAIL",
        "; ".join(probs) + " | " + (lines[-1][:230] if lines else p.stdout[-200:]).encode("unicode_escape").decode(),
    )


with ThreadPoolExecutor(2) as ex:
    results = list(ex.map(check, CASES))
for r in results:
    print(" | ".join(r))
print(f"{sum(r[2] == 'ok' for r in results)} ok of {len(results)}")
