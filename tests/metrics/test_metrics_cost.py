import pytest

from harness.metrics import cost


def test_cost_hand_computed() -> None:
    # $2.00/h x 0.5 h = $1.00; 500k output tokens -> $2.00 per 1M; 250 good requests -> $4.00 per 1k.
    c = cost(1800.0, output_tokens=500_000, good_requests=250, price_per_hour=2.0)
    assert c["total_usd"] == pytest.approx(1.0)
    assert c["usd_per_1m_output_tokens"] == pytest.approx(2.0)
    assert c["usd_per_1k_good_requests"] == pytest.approx(4.0)


def test_cost_scales_with_accelerators_and_default_price() -> None:
    c = cost(3600.0, output_tokens=1_000_000, good_requests=1000, accelerators=2)
    assert c["price_per_hour"] == 2.0  # documented default
    assert c["total_usd"] == pytest.approx(4.0)
    assert c["usd_per_1m_output_tokens"] == pytest.approx(4.0)


def test_cost_undefined_cases_are_none() -> None:
    nothing = cost(60.0, output_tokens=0, good_requests=0)
    assert nothing["total_usd"] == pytest.approx(2.0 / 60)
    assert nothing["usd_per_1m_output_tokens"] is None
    assert nothing["usd_per_1k_good_requests"] is None
    assert cost(None, output_tokens=10, good_requests=1)["total_usd"] is None
