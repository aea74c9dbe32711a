import Testing
@testable import FleetMetrics

/// Compacted histograms: same figures, a counts array cut after the highest value, full again on write.
@Suite("HDR histogram compaction")
struct HDRHistogramCompactionTests {
    @Test("a compacted copy reads the same and holds only the counts up to its maximum")
    func compactedReadsTheSame() {
        var histogram = HDRHistogram()
        for value: UInt64 in [1, 7, 250, 999, 1_000, 4_321, 12_000] { histogram.record(value) }
        let compact = histogram.compacted()
        #expect(histogram.countsStorageBytes == histogram.countsLength * 8)
        #expect(compact.countsStorageBytes == histogram.relevantCountsLength * 8)
        #expect(compact.countsStorageBytes < histogram.countsStorageBytes / 5)
        #expect(compact.totalCount == 7)
        for percentile in [0.0, 50, 90, 99, 100] {
            #expect(compact.valueAtPercentile(percentile) == histogram.valueAtPercentile(percentile))
        }
        #expect(compact.count(atValue: 4_321) == 1)
        #expect(compact.count(atIndex: histogram.countsLength - 1) == 0)
        #expect(compact.recordedValues() == histogram.recordedValues())
    }

    @Test("writing to a compacted copy restores the full array, above the old maximum too")
    func writingGrowsBack() {
        var histogram = HDRHistogram()
        histogram.record(100)
        var compact = histogram.compacted()
        compact.record(3_000_000_000)
        #expect(compact.countsStorageBytes == histogram.countsLength * 8)
        #expect(compact.totalCount == 2)
        #expect(compact.count(atValue: 3_000_000_000) == 1)
        #expect(histogram.totalCount == 1)
        var merged = HDRHistogram()
        merged.add(histogram.compacted())
        merged.add(compact)
        #expect(merged.totalCount == 3)
        #expect(merged.count(atValue: 100) == 2)
        var empty = HDRHistogram().compacted()
        #expect(empty.countsStorageBytes == 0)
        empty.reset()
        empty.record(5)
        #expect(empty.totalCount == 1)
    }

    @Test("a compacted recorder keeps every kind's counts")
    func compactedRecorder() {
        var recorder = LatencyRecorder()
        recorder.record(.endToEnd, intendedAt: 1_000, sentAt: 2_000, completedAt: 5_000_000)
        recorder.record(.puback, from: .intended, microseconds: 300)
        let compact = recorder.compacted()
        #expect(compact.kindsWithSamples == [.puback, .endToEnd])
        #expect(compact.histogram(.endToEnd, from: .intended).valueAtPercentile(100)
                == recorder.histogram(.endToEnd, from: .intended).valueAtPercentile(100))
        #expect(compact.histogram(.endToEnd, from: .sent).totalCount == 1)
        #expect(compact.histogram(.connect, from: .sent).countsStorageBytes == 0)
    }
}
