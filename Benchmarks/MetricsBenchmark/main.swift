// Cost of the metrics hot paths: ns and allocations per operation, one JSON line per measurement.
// swift run -c release MetricsBenchmark
import CAllocCounter
import FleetMetrics
import FleetReports

/// SplitMix64: cheap, deterministic values so runs compare.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Runs `body` `operations` times (after one warm-up call) and prints ns/op and allocations/op.
func measure(_ name: String, operations: Int, _ body: (Int) -> Void) {
    body(0)
    let clock = ContinuousClock()
    let allocationsBefore = fb_alloc_count()
    let start = clock.now
    for operation in 0..<operations { body(operation) }
    let elapsed = clock.now - start
    let allocations = fb_alloc_count() - allocationsBefore
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    let perOperation = nanoseconds / Double(operations)
    let allocationsPerOperation = Double(allocations) / Double(operations)
    print(
        "{\"benchmark\":\"\(name)\",\"operations\":\(operations),\"ns_per_op\":\(rounded(perOperation)),"
            + "\"allocs_per_op\":\(rounded(allocationsPerOperation))}")
}

func rounded(_ value: Double) -> Double { Double(Int(value * 1000)) / 1000 }

// Latency-like values: mostly 50 µs...5 ms with a tail to seconds; a table so the generator costs nothing.
var generator = SplitMix(state: 1)
let values: [UInt64] = (0..<4096).map { _ in
    let draw = generator.next()
    return draw % 100 == 0 ? draw % 2_000_000_000 : 50 + draw % 5_000
}
var sink: UInt64 = 0

var histogram = HDRHistogram()
measure("histogram_record", operations: 20_000_000) { operation in
    histogram.record(values[operation & 4095])
}
sink &+= histogram.totalCount

var latencies = LatencyRecorder()
measure("latency_recorder_record_both_origins", operations: 10_000_000) { operation in
    let intended = UInt64(operation) &* 1_000_000
    latencies.record(
        .endToEnd, intendedAt: intended, sentAt: intended &+ 20_000,
        completedAt: intended &+ values[operation & 4095] &* 1000)
}
sink &+= latencies.histogram(.endToEnd, from: .intended).totalCount

var tracker = DeliveryTracker()
tracker.reserve(streams: 64, rangesPerStream: 4)
measure("delivery_tracker_record", operations: 20_000_000) { operation in
    // 64 streams round-robin, sequence numbers rising per stream, every 1000th pair swapped (reordered).
    let stream = operation & 63
    var sequence = UInt64(operation >> 6)
    if sequence % 1000 == 1 { sequence -= 1 } else if sequence % 1000 == 0 { sequence += 1 }
    if tracker.record(stream: stream, sequence: sequence) == .reordered { sink &+= 1 }
}
// Lossy streams: every 100th message of each stream missing, so each stream holds a range per gap (3,125 after
// 312,500 messages): the cost of a binary search never comes in, in-order arrivals still append.
var lossy = DeliveryTracker()
lossy.reserve(streams: 64, rangesPerStream: 4_096)
measure("delivery_tracker_record_1pct_gaps", operations: 20_000_000) { operation in
    let stream = operation & 63
    let sequence = UInt64(operation >> 6)
    if sequence % 100 == 99 { return }
    if lossy.record(stream: stream, sequence: sequence) == .inOrder { sink &+= 1 }
}
// A late copy into a stream full of gaps: a binary search over its ranges, then a join or insert.
var gappy = DeliveryTracker()
for sequence in stride(from: UInt64(0), to: 2_000_000, by: 2) { gappy.record(stream: 0, sequence: sequence) }
measure("delivery_tracker_duplicate_among_1m_ranges", operations: 5_000_000) { operation in
    let sequence = UInt64(operation &* 2_654_435_761) % 2_000_000 & ~1
    if gappy.record(stream: 0, sequence: sequence) == .duplicate { sink &+= 1 }
}

var interval = IntervalLatencyRecorder(startingAt: 0)
measure("interval_recorder_record", operations: 10_000_000) { operation in
    interval.record(.puback, from: .intended, microseconds: values[operation & 4095])
}
// Once a second in a run: swap intervals and merge the snapshot elsewhere (here inline). Steady state is what counts.
var runTotal = LatencyRecorder()
measure("interval_take_and_merge_12_kinds_populated", operations: 200) { operation in
    for kind in LatencyKind.allCases {
        for value in values.prefix(64) { interval.record(kind, from: .intended, microseconds: value) }
    }
    let snapshot = interval.takeInterval(endingAt: UInt64(operation + 1) * 1_000_000_000)
    runTotal.add(snapshot.latencies)
}
sink &+= runTotal.histogram(.scheduleLag, from: .intended).totalCount

var populated = HDRHistogram()
for value in values { populated.record(value) }
var accumulator = HDRHistogram()
measure("histogram_add_populated", operations: 20_000) { _ in
    accumulator.add(populated)
}
sink &+= accumulator.totalCount

measure("histogram_encode_v2_uncompressed", operations: 2_000) { _ in
    sink &+= UInt64(populated.encodedV2().count)
}
measure("histogram_encode_v2_compressed", operations: 2_000) { _ in
    sink &+= UInt64((try? populated.encodedCompressedV2())?.count ?? 0)
}
let encoded = try populated.encodedCompressedV2()
measure("histogram_decode_v2_compressed", operations: 2_000) { _ in
    sink &+= (try? HDRHistogram(decodingCompressedV2: encoded))?.totalCount ?? 0
}
measure("histogram_p99", operations: 20_000) { _ in
    sink &+= populated.valueAtPercentile(99)
}
print("{\"populated_histogram_buckets\":\(populated.recordedValues().count),\"compressed_v2_bytes\":\(encoded.count),\"sink\":\(sink % 10)}")
