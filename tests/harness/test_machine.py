"""Machine noise from /proc: who used the CPU during a trial, and when a trial counts as busy."""

from pathlib import Path

import pytest

from harness.machine import measured, sample, trial_noise


def fake_proc(root: Path, *, user: int, idle: int, steal: int, mine: int, load: float) -> Path:
    (root / "self").mkdir(parents=True, exist_ok=True)
    (root / "stat").write_text(f"cpu  {user} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3 4\n")
    # a comm with a space and a parenthesis, as /proc allows: fields are counted after the last ")"
    rest = " ".join(["S", "1"] + ["0"] * 9 + [str(mine), "0", "0", "0"] + ["0"] * 30)
    (root / "self" / "stat").write_text(f"4242 (python (x) y) {rest}\n")
    (root / "loadavg").write_text(f"{load} 1.0 1.0 2/100 4242\n")
    return root


def test_a_trial_beside_a_busy_neighbour_is_flagged(tmp_path: Path) -> None:
    before = sample(fake_proc(tmp_path, user=1000, idle=1000, steal=0, mine=100, load=1.0))
    # 200 jiffies pass on 2 CPUs (400 in all): we used 100, someone else 150, the hypervisor stole 30
    after = sample(fake_proc(tmp_path, user=1250, idle=1120, steal=30, mine=200, load=3.5))
    assert before is not None and after is not None
    noise = trial_noise(before, after, ticks=100)
    assert noise["others_share"] == pytest.approx(150 / 400)
    assert noise["steal_share"] == pytest.approx(30 / 400)
    assert noise["busy"] and noise["load_avg_1m"] == 3.5
    assert noise["message"] == (
        "ran on a busy machine: other processes used 38% of the machine's CPU; the "
        "hypervisor stole 8% of the CPU time (1-min load average 3.5)"
    )


def test_a_trial_alone_on_the_machine_is_not_busy(tmp_path: Path) -> None:
    before = sample(fake_proc(tmp_path, user=1000, idle=1000, steal=0, mine=100, load=1.0))
    after = sample(fake_proc(tmp_path, user=1190, idle=1210, steal=0, mine=280, load=1.9))
    noise = trial_noise(before, after, ticks=100)
    assert noise["others_share"] == pytest.approx(10 / 400) and not noise["busy"]
    assert noise["message"] is None


def test_without_proc_nothing_is_claimed(tmp_path: Path) -> None:
    assert sample(tmp_path / "nothing") is None
    noise = trial_noise(None, None)
    assert noise["sampled"] is False and noise["busy"] is None and noise["message"] is None


def test_the_real_proc_reads_this_process() -> None:
    with measured() as noise:
        sum(i * i for i in range(300_000))
    if not Path("/proc/stat").exists():
        pytest.skip("no /proc here")
    assert noise["sampled"] and noise["process_cpu_cores"] >= 0 and 0 <= noise["others_share"] <= 1


def test_a_child_process_counts_as_this_process_not_a_neighbour(tmp_path: Path) -> None:
    # the engine's own process (engine_process=true) computes for this trial: it is not a busy neighbour
    def child(ppid: int, mine: int) -> None:
        rest = " ".join(["S", str(ppid)] + ["0"] * 9 + [str(mine), "0", "0", "0"] + ["0"] * 30)
        (tmp_path / "4243").mkdir(exist_ok=True)
        (tmp_path / "4243" / "stat").write_text(f"4243 (python) {rest}\n")

    before = sample(fake_proc(tmp_path, user=1000, idle=1000, steal=0, mine=100, load=1.0))
    child(4242, 150)  # started during the trial: all of its CPU time is the trial's
    after = sample(fake_proc(tmp_path, user=1250, idle=1150, steal=0, mine=200, load=1.0))
    assert before is not None and after is not None
    noise = trial_noise(before, after, ticks=100)
    assert noise["others_share"] == 0 and not noise["busy"]  # 250 busy jiffies: 100 ours, 150 our child's
    assert noise["process_cpu_cores"] == pytest.approx(2.5 / noise["wall_s"])
    child(1, 150)  # the same process under another parent is a neighbour
    assert sample(tmp_path).process == 200  # type: ignore[union-attr]
