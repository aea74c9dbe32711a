import Foundation

/// One line of a chart; a nil y breaks the line (a second without samples).
struct ChartSeries {
    var name: String
    var color: String
    var points: [(x: Double, y: Double?)]
    var dashed = false
}

/// An axis tick: where, and its label.
struct ChartTick {
    var value: Double
    var label: String
}

/// A line chart as inline SVG: no scripts, no fonts beyond the page's, scales with its container (viewBox).
struct LineChart {
    var title: String
    var xLabel: String
    var yLabel: String
    var series: [ChartSeries]
    /// Fixed x ticks (the percentile axis); nil for evenly spaced "nice" ticks.
    var xTicks: [ChartTick]? = nil
    var xRange: ClosedRange<Double>? = nil
    /// The y axis reaches at least this (charts set side by side share one scale); nil: the data's own maximum.
    var yMaximum: Double? = nil
    var width = 860.0
    var height = 250.0

    private let left = 70.0
    /// Room for the last x label, centred on the right edge.
    private let right = 30.0
    private let top = 30.0
    private let bottom = 44.0

    func svg() -> String {
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let xs = series.flatMap { $0.points.map(\.x) }
        let ys = series.flatMap { $0.points.compactMap(\.y) }
        let xDomain = xRange ?? ((xs.min() ?? 0)...Swift.max(xs.max() ?? 1, (xs.min() ?? 0) + 1))
        let yTicks = Self.niceTicks(upTo: Swift.max(ys.max() ?? 0, yMaximum ?? 0, 0))
        let yMax = yTicks.last?.value ?? 1
        let xTickList = xTicks ?? Self.niceTicks(from: xDomain.lowerBound, to: xDomain.upperBound)
        let xSpan = Swift.max(xDomain.upperBound - xDomain.lowerBound, 1e-9)
        func px(_ x: Double) -> Double { left + (x - xDomain.lowerBound) / xSpan * plotWidth }
        func py(_ y: Double) -> Double { top + plotHeight - (yMax > 0 ? y / yMax : 0) * plotHeight }

        var svg = "<svg class=\"chart\" viewBox=\"0 0 \(n(width)) \(n(height))\" role=\"img\" aria-label=\"\(HTML.escape(title))\""
            + " xmlns=\"http://www.w3.org/2000/svg\">\n"
        svg += "<title>\(HTML.escape(title))</title>\n"
        // Grid and y axis labels.
        for tick in yTicks {
            let y = py(tick.value)
            svg += "<line class=\"grid\" x1=\"\(n(left))\" y1=\"\(n(y))\" x2=\"\(n(left + plotWidth))\" y2=\"\(n(y))\"/>"
            svg += "<text class=\"tick\" x=\"\(n(left - 6))\" y=\"\(n(y + 4))\" text-anchor=\"end\">\(HTML.escape(tick.label))</text>\n"
        }
        for tick in xTickList where xDomain.contains(tick.value) {
            let x = px(tick.value)
            svg += "<line class=\"grid\" x1=\"\(n(x))\" y1=\"\(n(top))\" x2=\"\(n(x))\" y2=\"\(n(top + plotHeight))\"/>"
            svg += "<text class=\"tick\" x=\"\(n(x))\" y=\"\(n(top + plotHeight + 16))\" text-anchor=\"middle\">\(HTML.escape(tick.label))</text>\n"
        }
        svg += "<rect class=\"frame\" x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(plotWidth))\" height=\"\(n(plotHeight))\"/>\n"
        svg += "<text class=\"axis\" x=\"\(n(left + plotWidth / 2))\" y=\"\(n(height - 6))\" text-anchor=\"middle\">\(HTML.escape(xLabel))</text>\n"
        svg += "<text class=\"axis\" transform=\"translate(14 \(n(top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">\(HTML.escape(yLabel))</text>\n"
        // Lines, split at gaps; a lone point is drawn as a dot.
        for line in series {
            var segments: [[(Double, Double)]] = [[]]
            for point in line.points {
                if let y = point.y, point.x.isFinite, y.isFinite {
                    segments[segments.count - 1].append((px(point.x), py(y)))
                } else if !(segments.last?.isEmpty ?? true) {
                    segments.append([])
                }
            }
            let dash = line.dashed ? " stroke-dasharray=\"6 4\"" : ""
            for segment in segments where !segment.isEmpty {
                if segment.count == 1 {
                    svg += "<circle cx=\"\(n(segment[0].0))\" cy=\"\(n(segment[0].1))\" r=\"2.5\" fill=\"\(line.color)\"/>\n"
                } else {
                    let coordinates = segment.map { "\(n($0.0)),\(n($0.1))" }.joined(separator: " ")
                    svg += "<polyline fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"1.8\"\(dash) points=\"\(coordinates)\"/>\n"
                }
            }
        }
        // Legend along the top.
        var legendX = left
        for line in series {
            let dash = line.dashed ? " stroke-dasharray=\"6 4\"" : ""
            svg += "<line x1=\"\(n(legendX))\" y1=\"14\" x2=\"\(n(legendX + 22))\" y2=\"14\" stroke=\"\(line.color)\" stroke-width=\"2.5\"\(dash)/>"
            svg += "<text class=\"legend\" x=\"\(n(legendX + 28))\" y=\"18\">\(HTML.escape(line.name))</text>\n"
            legendX += 40 + Double(line.name.count) * 7
        }
        if ys.isEmpty {
            svg += "<text class=\"axis\" x=\"\(n(left + plotWidth / 2))\" y=\"\(n(top + plotHeight / 2))\" text-anchor=\"middle\">no samples</text>\n"
        }
        svg += "</svg>"
        return svg
    }

    /// SVG coordinates with one decimal.
    private func n(_ value: Double) -> String { MetricFormat.decimal(value, places: 1) }

    /// 0, a "nice" step (1, 2 or 5 times a power of ten), ... up to at least `maximum`: about five intervals.
    static func niceTicks(upTo maximum: Double) -> [ChartTick] {
        niceTicks(from: 0, to: maximum)
    }

    static func niceTicks(from minimum: Double, to maximum: Double) -> [ChartTick] {
        let span = maximum - minimum
        guard span > 0, span.isFinite else {
            return [ChartTick(value: minimum, label: label(minimum, step: 1)),
                    ChartTick(value: minimum + 1, label: label(minimum + 1, step: 1))]
        }
        let rough = span / 5
        let magnitude = pow(10, floor(log10(rough)))
        let step = [1.0, 2.0, 5.0, 10.0].map { $0 * magnitude }.first(where: { $0 >= rough }) ?? 10 * magnitude
        var ticks: [ChartTick] = []
        var value = floor(minimum / step) * step
        while value < maximum + step * 0.999 && ticks.count < 50 {
            ticks.append(ChartTick(value: value, label: label(value, step: step)))
            if value >= maximum { break }
            value += step
        }
        return ticks
    }

    /// A tick label with as many decimals as the step needs, and k/M for large values.
    static func label(_ value: Double, step: Double) -> String {
        if abs(value) >= 1_000_000 && step >= 100_000 { return MetricFormat.decimal(value / 1_000_000, places: 2) + "M" }
        if abs(value) >= 10_000 && step >= 1000 { return MetricFormat.decimal(value / 1000, places: 1) + "k" }
        let places = step >= 1 ? 0 : Int(ceil(-log10(step)))
        return MetricFormat.decimal(value, places: Swift.min(places, 6))
    }

    // MARK: The percentile axis

    /// HdrHistogram's percentile plot axis: x = log10(1 / (1 - p/100)), so 90 % is 1, 99 % is 2, 99.9 % is 3.
    static func percentileX(_ percentile: Double) -> Double {
        let remaining = 1 - percentile / 100
        guard remaining > 0 else { return .infinity }
        return -log10(remaining)
    }

    /// Ticks 0 %, 90 %, 99 %, 99.9 %, ... up to `decades`.
    static func percentileTicks(decades: Int) -> [ChartTick] {
        var ticks = [ChartTick(value: 0, label: "0%")]
        for decade in 1...Swift.max(decades, 1) {
            let text: String
            switch decade {
            case 1: text = "90%"
            case 2: text = "99%"
            default: text = "99." + String(repeating: "9", count: decade - 2) + "%"
            }
            ticks.append(ChartTick(value: Double(decade), label: text))
        }
        return ticks
    }
}
