#!/usr/bin/env python3
"""Makes the HdrHistogram fixtures the FleetReports tests decode, with the reference Python implementation
(`pip install hdrhistogram`, module `hdrh`). The data is a formula, so the Swift tests can rebuild it.

Run from this folder: python3 make_fixtures.py
"""
import json
from hdrh.histogram import HdrHistogram

LOWEST, HIGHEST, DIGITS = 1, 3_600_000_000, 3


def single_histogram_values():
    """(value, count) pairs: 1...10000 once each, then a spread of larger latencies with counts."""
    pairs = [(v, 1) for v in range(1, 10_001)]
    pairs += [(v * 997, (v % 7) + 1) for v in range(11, 5_000)]
    pairs += [(0, 3), (1_000_000, 5), (59_999_999, 2), (3_600_000_000, 1)]
    # 32 more at 123456 make the total exactly 30000, so that p50...p99.99 fall on whole ranks and the reference's
    # rounding (Python/C) and ceiling (Java) rank rules give the same values.
    pairs += [(123_456, 32)]
    return pairs


def interval_values(index):
    """Values of the nth interval histogram of the log."""
    return [(100 * (index + 1) + v, 1 + (v % 3)) for v in range(0, 500 * (index + 1), 7)]


def record(pairs):
    histogram = HdrHistogram(LOWEST, HIGHEST, DIGITS)
    for value, count in pairs:
        histogram.record_value(value, count)
    return histogram


def summary(histogram):
    percentiles = [50, 90, 99, 99.9, 99.99, 100]
    return {
        "total_count": histogram.get_total_count(),
        "min": histogram.get_min_value(),
        "max": histogram.get_max_value(),
        "mean": histogram.get_mean_value(),
        "percentiles": {str(p): histogram.get_value_at_percentile(p) for p in percentiles},
        "counts": {str(i): histogram.get_count_at_index(i) for i in range(histogram.counts_len)
                   if histogram.get_count_at_index(i)},
    }


def main():
    single = record(single_histogram_values())
    with open("single_histogram.base64", "w") as out:
        out.write(single.encode().decode("ascii") + "\n")
    with open("single_histogram.expected.json", "w") as out:
        json.dump(summary(single), out, separators=(",", ":"), sort_keys=True)

    # An interval log as HdrHistogram's Java writer lays it out: comment, format version, start and base time,
    # legend, then interval lines (tagged and untagged). The payloads are the reference's encodings; the Python
    # writer itself writes neither tags nor a valid StartTime line, so the lines are assembled here.
    start_epoch = 1_700_000_000.0
    lines = [
        "#[Made by make_fixtures.py with the hdrhistogram Python package]",
        "#[Histogram log format version 1.3]",
        "#[StartTime: %.3f (seconds since epoch), 2023-11-14T22:13:20Z]" % start_epoch,
        "#[BaseTime: %.3f (seconds since epoch)]" % start_epoch,
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
    ]
    expected = []
    tags = ["end_to_end", "puback", None]
    for index in range(6):
        tag = tags[index % 3]
        histogram = record(interval_values(index))
        start = 1.0 * (index // 3) + 0.001
        line = "%.3f,%.3f,%.3f,%s" % (start, 1.0, histogram.get_max_value() / 1000.0,
                                      histogram.encode().decode("ascii"))
        lines.append(("Tag=%s," % tag if tag else "") + line)
        expected.append({"tag": tag, "start": start, "length": 1.0, "index": index,
                         "total_count": histogram.get_total_count(), "max": histogram.get_max_value(),
                         "counts": {str(i): histogram.get_count_at_index(i) for i in range(histogram.counts_len)
                                    if histogram.get_count_at_index(i)}})
    with open("intervals.hlog", "w") as out:
        out.write("\n".join(lines) + "\n")
    with open("intervals.expected.json", "w") as out:
        json.dump(expected, out, indent=1)


if __name__ == "__main__":
    main()
