import numpy as np

from harness.metrics.intervals import bin_counts


def test_bin_counts_are_numpys_histogram_counts():
    """bin_counts counts equal-width bins without sorting the values: the counts np.histogram gives, values on an
    edge and next to one included (the last bin closed), and edges that are not evenly spaced counted as numpy does."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        start = float(rng.uniform(-10.0, 10.0))
        end = start + float(rng.choice([1e-9, 1e-3, 1.0, 7.3, 1e6]))
        edges = np.linspace(start, end, int(rng.integers(1, 60)) + 1)
        width = end - start
        values = np.concatenate(
            [
                rng.uniform(start - 0.1 * width, end + 0.1 * width, int(rng.integers(0, 300))),
                edges,
                np.nextafter(edges, np.inf),
                np.nextafter(edges, -np.inf),
            ]
        )
        assert np.array_equal(bin_counts(values, edges), np.histogram(values, bins=edges)[0])
    uneven = np.array([0.0, 0.5, 2.0, 2.1, 10.0])
    values = rng.uniform(-1.0, 11.0, 1000)
    assert np.array_equal(bin_counts(values, uneven), np.histogram(values, bins=uneven)[0])
