import FleetMetrics
import FleetReports
import Testing
@testable import FleetCLI

/// What `fleetbench run scenarios/city-commute.json` showed as 79 "errors": 67 tunnel cuts and 12 emulated LTE
/// link drops (its report's `disconnects_by_reason`), which the scenario asked for. The progress line and the
/// summary name them as link cuts; errors are what went wrong.
@Suite("Disconnect causes: link cuts are not errors")
struct DisconnectCauseTests {
    /// The city-commute run's counts (report.json of `fleetbench run scenarios/city-commute.json`, seed 2026).
    static func cityCommute() -> ClientCounters {
        var counters = ClientCounters()
        counters.recordDisconnect(.clientInitiated, count: 199)
        counters.recordDisconnect(.tunnel, count: 67)
        counters.recordDisconnect(.networkDrop, count: 12)
        return counters
    }

    @Test("every reason has one cause; by report name the same as by value")
    func causes() {
        let table: [(DisconnectReason, DisconnectReason.Cause)] = [
            (.clientInitiated, .client), (.churn, .client),
            (.tunnel, .linkCut), (.networkDrop, .linkCut), (.networkOutage, .linkCut),
            (.serverDisconnect(reasonCode: 0x8E), .error), (.closedByPeer, .error), (.socketError(errno: 104), .error),
            (.ackTimeout(.puback), .error), (.protocolError, .error),
        ]
        for (reason, cause) in table {
            #expect(reason.cause == cause, "\(reason.reportName)")
            #expect(DisconnectReason.cause(ofReportName: reason.reportName) == cause, "\(reason.reportName)")
        }
    }

    @Test("the city-commute run: errors 0 and link cuts 79 on the progress line, not errors 79")
    func progressLine() {
        var status = LiveStatus()
        status.elapsedSeconds = 95
        status.connected = 199
        status.counters = Self.cityCommute()
        #expect(ProgressPrinter.errors(status.counters) == 0)
        #expect(ProgressPrinter.line(status, totalSeconds: 120, targetClients: 201)
            == "[  95s/120s]  connected 199/201  pub 0/s  recv 0/s  ack timeouts 0  errors 0  link cuts 79")
        // A real error next to them: counted as one, the cuts stay apart.
        status.counters.recordDisconnect(.closedByPeer)
        status.counters.recordConnectFailure(.refused, count: 2)
        #expect(ProgressPrinter.line(status, totalSeconds: 120, targetClients: 201)
            == "[  95s/120s]  connected 199/201  pub 0/s  recv 0/s  ack timeouts 0  errors 3  link cuts 79")
    }

    @Test("past the plan's end (city-commute's 93 s plan, drained until 154 s) the line says it drains; at the end itself it does not")
    func progressLineDraining() {
        var status = LiveStatus()
        status.connected = 180
        status.elapsedSeconds = 93.9
        #expect(ProgressPrinter.line(status, totalSeconds: 93, targetClients: 201)
            == "[  93s/93s]  connected 180/201  pub 0/s  recv 0/s  ack timeouts 0  errors 0")
        status.elapsedSeconds = 121.2
        #expect(ProgressPrinter.line(status, totalSeconds: 93, targetClients: 201)
            == "[ 121s/93s draining]  connected 180/201  pub 0/s  recv 0/s  ack timeouts 0  errors 0")
    }

    @Test("workers hand link cuts on in their progress file and the sum shows them")
    func workerProgress() throws {
        var status = LiveStatus()
        status.elapsedSeconds = 3
        status.connected = 5
        status.counters = Self.cityCommute()
        let progress = WorkerProgress(status: status)
        #expect(progress.errors == 0)
        #expect(progress.linkCuts == 79)
        #expect(progress.text == "3.0 5 0 0 0 0 - 79 0\n")
        let read = try #require(WorkerProgress(text: progress.text))
        #expect(read == progress)
        var sum = WorkerProgress()
        sum.add(read)
        sum.add(read)
        #expect(sum.line(previous: WorkerProgress(), seconds: 1, totalSeconds: 10, targetClients: 10)
            == "[   3s/10s]  connected 10/10  pub 0/s  recv 0/s  ack timeouts 0  errors 0  link cuts 158")
    }

    @Test("the progress line: recv is this run's messages; once others' arrived too, arrived N/s beside it, in one process and summed over workers")
    func progressArrivals() throws {
        var status = LiveStatus()
        status.elapsedSeconds = 4
        status.connected = 2
        status.receivedPerSecond = 20
        status.arrivedPerSecond = 20
        status.lastReceived = 60
        status.lastArrived = 60
        #expect(ProgressPrinter.line(status, totalSeconds: 10, targetClients: 2)
            == "[   4s/10s]  connected 2/2  pub 0/s  recv 20/s  ack timeouts 0  errors 0")
        // Another run's 19 a second on the same topics.
        status.arrivedPerSecond = 39
        status.lastArrived = 117
        #expect(ProgressPrinter.line(status, totalSeconds: 10, targetClients: 2)
            == "[   4s/10s]  connected 2/2  pub 0/s  recv 20/s  arrived 39/s  ack timeouts 0  errors 0")
        // Workers pass the running total on in their progress file; the sum's rate is over both.
        let progress = WorkerProgress(status: status)
        #expect(progress.text == "4.0 2 0 60 0 0 - 0 117\n")
        let read = try #require(WorkerProgress(text: progress.text))
        #expect(read == progress)
        var sum = WorkerProgress()
        sum.add(read)
        sum.add(read)
        var before = WorkerProgress()
        before.received = 80
        before.arrived = 156
        #expect(sum.line(previous: before, seconds: 1, totalSeconds: 10, targetClients: 4)
            == "[   4s/10s]  connected 4/4  pub 0/s  recv 40/s  arrived 78/s  ack timeouts 0  errors 0")
    }

    @Test("the summary's disconnects line: by the client, link cuts and errors, each with its reasons")
    func summaryLine() {
        let reasons = [ReasonCount("client_initiated", 199), ReasonCount("network_drop", 12), ReasonCount("tunnel", 67)]
        #expect(RunSummary.disconnectsLine(reasons) == "                disconnects: by the client 199 (client_initiated 199); "
            + "link cuts 79 (network_drop 12, tunnel 67); errors 0")
        #expect(RunSummary.disconnectsLine(reasons + [ReasonCount("closed_by_peer", 2), ReasonCount("puback_timeout", 1)])
            == "                disconnects: by the client 199 (client_initiated 199); link cuts 79 (network_drop 12, tunnel 67); "
            + "errors 3 (closed_by_peer 2, puback_timeout 1)")
        #expect(RunSummary.disconnectsLine([ReasonCount("client_initiated", 4)])
            == "                disconnects: by the client 4 (client_initiated 4); errors 0")
        #expect(RunSummary.disconnectsLine([]) == nil)
    }
}
