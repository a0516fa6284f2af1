import pytest

from harness.metrics import SLO, goodput, records_frame, request_latencies, slo_table
from tests.fixtures.records import make_record

SLO_1S = SLO(ttft_s=1.0, tpot_s=0.1)


@pytest.fixture
def frame():
    return records_frame(
        [
            make_record("ok", t_scheduled=0.0, ttft=0.5, gaps=[0.05, 0.05]),  # tpot 0.05; finish 0.6
            make_record("slow_first", t_scheduled=1.0, ttft=1.5),  # TTFT 1.5 > 1.0; finish 2.5
            make_record("slow_decode", t_scheduled=2.0, ttft=0.5, gaps=[0.2, 0.2]),  # TPOT 0.2; finish 2.9
            make_record("one_token", t_scheduled=3.0, ttft=0.5),  # TPOT undefined: only TTFT applies
            make_record(
                "failed",
                t_scheduled=4.0,
                t_first_token=None,
                t_finish=None,
                token_times=[],
                output_tokens=0,
                error_type="connect",
                finish_reason="error",
            ),
        ]
    )


def test_slo_table_per_request(frame) -> None:
    met = slo_table(request_latencies(frame), SLO_1S).set_index("request_id")
    assert met["meets_slo"].to_dict() == {
        "ok": True,
        "slow_first": False,
        "slow_decode": False,
        "one_token": True,
        "failed": False,
    }
    assert not met.loc["slow_first", "meets_ttft"] and met.loc["slow_first", "meets_tpot"]


def test_goodput_and_attainment_hand_computed(frame) -> None:
    g = goodput(frame, SLO_1S)
    assert g["met"] == 2
    assert g["attainment"] == pytest.approx(2 / 5)  # failures count in the denominator
    assert g["violations"] == {"failed": 1, "ttft": 1, "tpot": 1, "e2e": 0}
    # Whole run: first arrival 0 to last done 4.0 (the failed request's send); "ok" finishes at 0.6,
    # "one_token" at 3.5: 2 good requests / 4 s.
    assert g["goodput_rps_whole_run"] == pytest.approx(0.5)
    # Steady: floor(0.1 * 5) = 0 -> [0, 4], the same interval here.
    assert g["goodput_rps_steady"] == pytest.approx(0.5)


def test_goodput_over_a_window_too_short_to_see_requests_through_is_undefined() -> None:
    # Twelve requests over 0.11 s, each taking 2 s: no steady window can see one finish, whatever the SLO.
    short = records_frame([make_record(f"r{i}", t_scheduled=0.01 * i, ttft=2.0) for i in range(12)])
    g = goodput(short, SLO(ttft_s=5.0))
    assert g["attainment"] == 1.0 and g["goodput_rps_steady"] is None  # not 0.0 beside 100% met
    assert g["goodput_rps_steady_reason"].startswith("no request finished inside the 0.1 s steady window (the run's")
    assert g["goodput_rps_whole_run"] == pytest.approx(12 / 2.11)


def test_goodput_of_a_burst_names_the_burst() -> None:
    burst = records_frame([make_record(f"r{i}", t_scheduled=0.0, ttft=0.1 * (i + 1)) for i in range(12)])
    g = goodput(burst, SLO_1S)
    assert g["goodput_rps_steady"] is None and "burst" in g["goodput_rps_steady_reason"]
    assert g["goodput_rps_whole_run"] == pytest.approx(10 / 1.2)  # 10 of 12 met TTFT <= 1 s, over 1.2 s
    assert g["goodput_rps_whole_run_reason"] is None


def test_e2e_limit_and_disabled_limits(frame) -> None:
    # E2E limit 0.55 s: only "one_token" (E2E 0.5) passes; "ok" has E2E 0.6.
    g = goodput(frame, SLO(ttft_s=None, tpot_s=None, e2e_s=0.55))
    assert g["met"] == 1
    assert g["violations"]["e2e"] == 3
    # No limits at all: every successful request is good.
    assert goodput(frame, SLO(ttft_s=None, tpot_s=None))["met"] == 4


def test_default_slo_is_mlperf_llama2_70b_server() -> None:
    assert SLO().to_json() == {"ttft_s": 2.0, "tpot_s": 0.2, "e2e_s": None}
