import FleetMetrics
import Foundation

/// `fleetbench compare BASELINE CANDIDATE --format html`: one self-contained page (report.html's CSS, inline SVG, no
/// scripts, nothing fetched). Sections, each with a stable id: `verdict` (like for like or what differs, the
/// regressions), `rows` (the comparison table, regressions first), `latency` (each kind's percentile curves, the
/// baseline solid and the candidate dashed on one chart), `timeline` (connected clients and message rates of the
/// two runs side by side, on the same axes).
public enum ComparisonHTML {
    public static let sectionIDs = ["verdict", "rows", "latency", "timeline"]

    static let baselineColor = ReportHTML.palette[0]
    static let candidateColor = ReportHTML.palette[1]

    public static func render(_ comparison: ReportComparison, baseline: RunReport, candidate: RunReport,
                              all: Bool = false) -> String {
        var page = HTML.pageStart(
            toolVersion: candidate.toolVersion,
            title: "fleetbench compare: \(HTML.escape(candidate.scenario.name)) "
                + (comparison.hasRegression ? "REGRESSED" : "no regression"),
            css: ReportHTML.css + css)
        page += verdict(comparison)
        page += rows(comparison, all: all)
        let runs = [PlottedRun(name: "baseline", report: baseline, color: baselineColor, dashed: false),
                    PlottedRun(name: "candidate", report: candidate, color: candidateColor, dashed: true)]
        page += latency(runs, note: "Baseline solid, candidate dashed.")
        page += timeline(runs)
        page += "<footer>Written by fleetbench \(HTML.escape(candidate.toolVersion)) · tolerance "
            + "\(HTML.escape(MetricFormat.decimal(comparison.tolerancePercent, places: 3))) %, latency floor "
            + "\(HTML.escape(MetricFormat.decimal(comparison.latencyFloorMilliseconds, places: 3))) ms</footer>\n"
        page += "</main>\n</body>\n</html>\n"
        return page
    }

    static let css = """
        .verdict.same { background: #5d6675; }
        .runs { margin: 10px 0; }
        .runs .swatch { display: inline-block; width: 22px; height: 0; border-top: 3px solid; vertical-align: middle;
          margin-right: 6px; }
        .runs .swatch.dashed { border-top-style: dashed; }
        tr.regression { background: #fdecea; }
        tr.regression td.row-verdict { color: var(--fail); font-weight: 700; }
        tr.better td.row-verdict { color: var(--pass); font-weight: 600; }

        """

    static func verdict(_ comparison: ReportComparison) -> String {
        let regressed = comparison.hasRegression
        var html = "<header id=\"verdict\" class=\"verdict \(regressed ? "fail" : "pass")\">\n"
        html += "<div class=\"badge\">\(regressed ? "REGRESSED" : "NO REGRESSION")</div>\n"
        html += "<div class=\"headline\"><h1>\(HTML.escape(comparison.summary))</h1></div>\n</header>\n"
        html += "<p class=\"runs\"><span class=\"swatch\" style=\"border-color: \(baselineColor)\"></span>baseline "
            + "<code>\(HTML.escape(comparison.baselineName))</code><br>"
            + "<span class=\"swatch dashed\" style=\"border-color: \(candidateColor)\"></span>candidate "
            + "<code>\(HTML.escape(comparison.candidateName))</code></p>\n"
        if comparison.isLikeForLike {
            html += "<p class=\"ok\">\(HTML.escape(comparison.likeForLikeLine))</p>\n"
        } else {
            html += "<p class=\"warning\">\(HTML.escape(comparison.likeForLikeLine))</p>\n"
            html += differences(comparison, candidate: "Candidate")
        }
        if let caution = comparison.caution { html += "<p class=\"warning\">\(HTML.escape(caution))</p>\n" }
        return html
    }

    /// The table of what differs between the two runs (the like-for-like line ends with a colon before it).
    static func differences(_ comparison: ReportComparison, candidate: String) -> String {
        var html = "<table>\n<thead><tr><th>Differs</th><th>Baseline</th><th>\(HTML.escape(candidate))</th></tr></thead>\n<tbody>\n"
        for difference in comparison.differences {
            html += "<tr><td>\(HTML.escape(difference.what))</td><td><code>\(HTML.escape(difference.baseline))</code></td>"
                + "<td><code>\(HTML.escape(difference.candidate))</code></td></tr>\n"
        }
        return html + "</tbody>\n</table>\n"
    }

    static func rows(_ comparison: ReportComparison, all: Bool) -> String {
        var html = "<section id=\"rows\">\n<h2>Metrics</h2>\n"
        html += "<table>\n<thead><tr><th>Metric</th><th>Unit</th><th class=\"num\">Baseline</th>"
            + "<th class=\"num\">Candidate</th><th class=\"num\">Change</th><th>Verdict</th></tr></thead>\n<tbody>\n"
        for row in comparison.shownRows(all: all) {
            html += "<tr class=\"\(row.verdict.rawValue)\"><td><code>\(HTML.escape(row.metric))</code></td>"
                + "<td>\(HTML.escape(row.unit))</td>"
                + "<td class=\"num\">\(HTML.escape(ReportComparison.value(row.baseline)))</td>"
                + "<td class=\"num\">\(HTML.escape(ReportComparison.value(row.candidate)))</td>"
                + "<td class=\"num\">\(HTML.escape(ReportComparison.change(row)))</td>"
                + "<td class=\"row-verdict\">\(HTML.escape(ReportComparison.verdictText(row)))</td></tr>\n"
        }
        html += "</tbody>\n</table>\n"
        if let note = comparison.hiddenNote(all: all) { html += "<p class=\"muted\">\(HTML.escape(note))</p>\n" }
        return html + "</section>\n"
    }

    /// A run drawn on the charts: its label, report, colour and line style.
    struct PlottedRun {
        var name: String
        var report: RunReport
        var color: String
        var dashed: Bool
    }

    static func latency(_ runs: [PlottedRun], note: String) -> String {
        var html = "<section id=\"latency\">\n<h2>Latency by percentile</h2>\n"
        let kinds = LatencyKind.allCases.filter { kind in runs.contains { $0.report.latency.kindsWithSamples.contains(kind) } }
        guard !kinds.isEmpty else { return html + "<p class=\"muted\">No run has latency samples.</p>\n</section>\n" }
        html += "<p class=\"muted\">Milliseconds, each kind from the time its headline figures are measured from "
            + "(the intended send time for end-to-end and ack latencies). \(HTML.escape(note))</p>\n"
        html += "<div class=\"grid2\">\n"
        for kind in kinds {
            var series: [ChartSeries] = []
            var highest = 2.0
            for run in runs {
                let (name, color, dashed) = (run.name, run.color, run.dashed)
                guard let histogram = ReportComparison.headline(run.report.latency, kind) else { continue }
                let (points, top) = ReportHTML.percentileCurve(histogram)
                highest = Swift.max(highest, top)
                series.append(ChartSeries(name: "\(name) (\(histogram.totalCount))", color: color, points: points,
                                          dashed: dashed))
            }
            let decades = Int(highest.rounded(.up))
            series = series.map { line in
                var line = line
                line.points = line.points.map { ($0.x.isFinite ? $0.x : Double(decades), $0.y) }
                return line
            }
            let chart = LineChart(
                title: "\(kind.reportName) latency by percentile, " + runs.map(\.name).joined(separator: ", "), xLabel: "percentile",
                yLabel: "ms", series: series, xTicks: LineChart.percentileTicks(decades: decades),
                xRange: 0...Double(decades), width: 520, height: 270)
            html += "<figure><figcaption>\(HTML.escape(kind.reportName))</figcaption>\n" + chart.svg() + "\n</figure>\n"
        }
        return html + "</div>\n</section>\n"
    }

    /// Connected clients and message rates per second, one chart per run side by side, on shared axes.
    static func timeline(_ plotted: [PlottedRun]) -> String {
        var html = "<section id=\"timeline\">\n<h2>Over time</h2>\n"
        let runs = plotted.map { run in
            (run, ReportHTML.downsampled(run.report.timeline, to: ReportHTML.maximumChartPoints))
        }
        guard runs.contains(where: { !$0.1.isEmpty }) else {
            return html + "<p class=\"muted\">No run recorded a timeline.</p>\n</section>\n"
        }
        let lastT = Swift.max(runs.compactMap { $0.1.last?.t }.max() ?? 1, 1)
        var connectedCharts: [LineChart] = []
        var rateCharts: [LineChart] = []
        for (run, points) in runs {
            let (name, color) = (run.name, run.color)
            connectedCharts.append(LineChart(
                title: "Connected clients, \(name)", xLabel: "seconds since start", yLabel: "clients",
                series: [ChartSeries(name: "connected", color: color, points: points.map { ($0.t, Double($0.connected)) })],
                xRange: 0...lastT, width: 520, height: 220))
            let (published, received) = ReportHTML.messageRates(points)
            // Received in a colour of its own: run 3 of a trend is drawn in palette[2], received's usual colour.
            let receivedColor = color == ReportHTML.palette[2] ? ReportHTML.palette[3] : ReportHTML.palette[2]
            rateCharts.append(LineChart(
                title: "Message rates, \(name)", xLabel: "seconds since start", yLabel: "messages / s",
                series: [ChartSeries(name: "published / s", color: color, points: published),
                         ChartSeries(name: "received / s", color: receivedColor, points: received, dashed: true)],
                xRange: 0...lastT, width: 520, height: 220))
        }
        for charts in [connectedCharts, rateCharts] {
            // The same y axis on both sides, so the heights compare.
            let top = charts.flatMap { $0.series.flatMap { $0.points.compactMap(\.y) } }.max() ?? 0
            html += "<div class=\"grid2\">\n"
            for var chart in charts {
                chart.yMaximum = top
                html += "<figure><figcaption>\(HTML.escape(chart.title))</figcaption>\n\(chart.svg())\n</figure>\n"
            }
            html += "</div>\n"
        }
        return html + "</section>\n"
    }
}

extension ComparisonHTML {
    /// `compare A B C ... --format html`: the trend page. The same sections: `verdict` (which runs regressed against
    /// the first), `rows` (the trend table: the baseline's value, then each run's value and change; lines with a
    /// regression first), `latency` (every run's percentile curve on one chart per kind, the baseline solid),
    /// `timeline` (each run's charts, on shared axes).
    public static func render(_ trend: TrendComparison, runs: [RunReport], all: Bool = false) -> String {
        let regressed = trend.hasRegression
        let last = runs[runs.count - 1]
        var page = HTML.pageStart(
            toolVersion: last.toolVersion,
            title: "fleetbench compare: \(HTML.escape(last.scenario.name)) trend over \(runs.count) runs "
                + (regressed ? "REGRESSED" : "no regression"),
            css: ReportHTML.css + css)
        let colors = (0..<runs.count).map { ReportHTML.palette[$0 % ReportHTML.palette.count] }
        page += "<header id=\"verdict\" class=\"verdict \(regressed ? "fail" : "pass")\">\n"
        page += "<div class=\"badge\">\(regressed ? "REGRESSED" : "NO REGRESSION")</div>\n"
        page += "<div class=\"headline\"><h1>\(HTML.escape(trend.summary).replacingOccurrences(of: "\n", with: "<br>"))</h1></div>\n</header>\n"
        page += "<p class=\"runs\">"
        let names = [trend.baselineName] + trend.candidateNames
        for (index, name) in names.enumerated() {
            page += "<span class=\"swatch\(index == 0 ? "" : " dashed")\" style=\"border-color: \(colors[index])\"></span>"
                + "run \(index + 1)\(index == 0 ? " (baseline)" : "") <code>\(HTML.escape(name))</code><br>"
        }
        page += "</p>\n"
        for (index, comparison) in trend.comparisons.enumerated() {
            let line = "run \(index + 2): " + comparison.likeForLikeLine
            if comparison.isLikeForLike {
                page += "<p class=\"ok\">\(HTML.escape(line))</p>\n"
            } else {
                page += "<p class=\"warning\">\(HTML.escape(line))</p>\n"
                page += differences(comparison, candidate: "Run \(index + 2)")
            }
        }
        page += "<section id=\"rows\">\n<h2>Metrics</h2>\n<table>\n<thead><tr><th>Metric</th><th>Unit</th>"
            + "<th class=\"num\">Run 1 (baseline)</th>"
            + trend.comparisons.indices.map { "<th class=\"num\">Run \($0 + 2)</th>" }.joined() + "</tr></thead>\n<tbody>\n"
        for line in trend.lines(all: all) {
            page += "<tr class=\"\(line.regressed ? "regression" : "same")\"><td><code>\(HTML.escape(line.metric))</code></td>"
                + "<td>\(HTML.escape(line.unit))</td><td class=\"num\">\(HTML.escape(ReportComparison.value(line.baseline)))</td>"
            for row in line.rows {
                page += "<td class=\"num\(row?.verdict == .regression ? " bad" : "")\">\(HTML.escape(TrendComparison.cell(row)))</td>"
            }
            page += "</tr>\n"
        }
        page += "</tbody>\n</table>\n</section>\n"
        let plotted = runs.enumerated().map { index, report in
            PlottedRun(name: "run \(index + 1)", report: report, color: colors[index], dashed: index > 0)
        }
        page += latency(plotted, note: "Run 1 (the baseline) solid, later runs dashed.")
        page += timeline(plotted)
        page += "<footer>Written by fleetbench \(HTML.escape(last.toolVersion))</footer>\n"
        page += "</main>\n</body>\n</html>\n"
        return page
    }
}
