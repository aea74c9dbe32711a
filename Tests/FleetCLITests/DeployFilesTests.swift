@testable import FleetBroker
@testable import FleetCLI
import FleetReports
import Foundation
import Testing

/// deploy/ and docs/ci/: files users run elsewhere (Kubernetes, CI services, Grafana), which cannot run here. What can
/// be checked here is: they parse; they carry the fields their walk-throughs rely on; the command lines they hold
/// are ones fleetbench accepts; the Kubernetes entrypoint's command lines, run as N local processes and merged, give
/// exactly the single run's result; the dashboard queries only metrics the endpoint exports.
@Suite("deployment files", .serialized)
struct DeployFilesTests {
    static let root = RunEndToEndTests.root.path
    static let kubernetes = root + "/deploy/kubernetes"

    struct Outcome {
        var status: Int32
        var output: String
        var error: String
    }

    /// Runs a program to its end (its output is small: it is read after the exit).
    static func execute(_ executable: String, _ arguments: [String], input: String? = nil,
                        environment: [String: String] = [:]) throws -> Outcome {
        let process = try start(executable, arguments, input: input, environment: environment)
        return finish(process)
    }

    static func start(_ executable: String, _ arguments: [String], input: String? = nil,
                      environment: [String: String] = [:]) throws -> (Process, Pipe, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = RunEndToEndTests.root
        var merged = ProcessInfo.processInfo.environment
        merged["PATH"] = (merged["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin"
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let inputPipe = Pipe()
        process.standardInput = inputPipe
        try process.run()
        inputPipe.fileHandleForWriting.write(Data((input ?? "").utf8))
        try inputPipe.fileHandleForWriting.close()
        return (process, output, error)
    }

    static func finish(_ started: (Process, Pipe, Pipe)) -> Outcome {
        let (process, output, error) = started
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
                       error: String(decoding: errorData, as: UTF8.self))
    }

    /// The YAML documents of a text, as JSON values, through PyYAML (scripts/deps.sh installs it).
    static func yamlDocuments(_ text: String) throws -> [[String: Any]] {
        let script = """
            import json, sys, yaml
            json.dump([d for d in yaml.safe_load_all(sys.stdin) if d is not None], sys.stdout, default=str)
            """
        let outcome = try execute("/usr/bin/env", ["python3", "-c", script], input: text)
        try #require(outcome.status == 0, "YAML does not parse: \(outcome.error)")
        let value = try JSONSerialization.jsonObject(with: Data(outcome.output.utf8))
        return try #require(value as? [[String: Any]])
    }

    static func yamlFile(_ path: String) throws -> [[String: Any]] {
        try yamlDocuments(try String(contentsOfFile: path, encoding: .utf8))
    }

    static func document(_ documents: [[String: Any]], kind: String, name: String) throws -> [String: Any] {
        let found = documents.first { $0["kind"] as? String == kind && ($0["metadata"] as? [String: Any])?["name"] as? String == name }
        return try #require(found, "no \(kind) \(name)")
    }

    static func podSpec(_ job: [String: Any]) throws -> [String: Any] {
        let spec = try #require(job["spec"] as? [String: Any])
        let template = try #require(spec["template"] as? [String: Any])
        return try #require(template["spec"] as? [String: Any])
    }

    static func container(_ job: [String: Any]) throws -> [String: Any] {
        let containers = try #require(try podSpec(job)["containers"] as? [[String: Any]])
        try #require(containers.count == 1)
        return containers[0]
    }

    /// name -> (literal value, or "configMap:NAME/KEY", or "field:PATH").
    static func environment(_ container: [String: Any]) -> [String: String] {
        var result: [String: String] = [:]
        for entry in container["env"] as? [[String: Any]] ?? [] {
            guard let name = entry["name"] as? String else { continue }
            if let value = entry["value"] as? String {
                result[name] = value
            } else if let from = entry["valueFrom"] as? [String: Any] {
                if let ref = from["configMapKeyRef"] as? [String: Any] {
                    result[name] = "configMap:\(ref["name"] as? String ?? "?")/\(ref["key"] as? String ?? "?")"
                } else if let ref = from["fieldRef"] as? [String: Any] {
                    result[name] = "field:\(ref["fieldPath"] as? String ?? "?")"
                }
            }
        }
        return result
    }

    /// A JSON value as canonical text, to compare nested structures.
    static func canonical(_ value: Any?) throws -> String {
        guard let value else { return "null" }
        let data = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed])
        return String(decoding: data, as: UTF8.self)
    }

    @Test("launch.sh renders an Indexed Job of N segments, its run ConfigMap, the shared volume and the merge Job, consistently")
    func manifests() throws {
        let before = Date()
        let rendered = try Self.execute(Self.kubernetes + "/launch.sh", [
            "--print", "--segments", "3", "--image", "registry.example/fleetbench:test", "--broker", "mqtt://10.1.2.3:1883",
            "--run-id", "00c0ffee", "--args", "--segment-grace 10s --metrics-listen 0.0.0.0:9464",
        ])
        try #require(rendered.status == 0, "\(rendered.error)")
        let documents = try Self.yamlDocuments(rendered.output)
        #expect(documents.count == 5)
        let run = try Self.document(documents, kind: "Job", name: "fleetbench-run")
        let merge = try Self.document(documents, kind: "Job", name: "fleetbench-merge")
        let runConfig = try Self.document(documents, kind: "ConfigMap", name: "fleetbench-run")
        let scenarioConfig = try Self.document(documents, kind: "ConfigMap", name: "fleetbench-scenario")
        let claim = try Self.document(documents, kind: "PersistentVolumeClaim", name: "fleetbench-results")

        // The Indexed Job: N pods at once, one per index, never retried after the common start.
        let runSpec = try #require(run["spec"] as? [String: Any])
        #expect(run["apiVersion"] as? String == "batch/v1")
        #expect(runSpec["completionMode"] as? String == "Indexed")
        #expect(runSpec["parallelism"] as? Int == 3)
        #expect(runSpec["completions"] as? Int == 3)
        #expect(runSpec["backoffLimit"] as? Int == 0)
        #expect(try Self.podSpec(run)["restartPolicy"] as? String == "Never")
        let segment = try Self.container(run)
        #expect(segment["command"] as? [String] == ["/usr/local/bin/entrypoint.sh", "segment"])
        let segmentEnvironment = Self.environment(segment)
        // The pod's index is what entrypoint.sh turns into --segment K/N.
        #expect(segmentEnvironment["JOB_COMPLETION_INDEX"] == "field:metadata.annotations['batch.kubernetes.io/job-completion-index']")
        for key in ["SEGMENTS", "RUN_ID", "START_AT", "BROKER", "FLEETBENCH_ARGS"] {
            #expect(segmentEnvironment[key] == "configMap:fleetbench-run/\(key)", "\(key)")
        }
        // The run ConfigMap: N, the run id and a start the lead time ahead (120 s by default).
        let data = try #require(runConfig["data"] as? [String: Any])
        #expect(data["SEGMENTS"] as? String == "3")
        #expect(data["RUN_ID"] as? String == "00c0ffee")
        #expect(data["BROKER"] as? String == "mqtt://10.1.2.3:1883")
        #expect(data["FLEETBENCH_ARGS"] as? String == "--segment-grace 10s --metrics-listen 0.0.0.0:9464")
        let startText = try #require(data["START_AT"] as? String)
        let startAt = try #require(RunReport.parseRFC3339(startText))
        #expect(startAt.timeIntervalSince(before) >= 119 && startAt.timeIntervalSince(Date()) <= 121, "\(startAt)")
        // The merge Job: one pod, the same run from the same ConfigMap, the same volumes at the same places.
        let mergeSpec = try #require(merge["spec"] as? [String: Any])
        #expect(mergeSpec["completionMode"] == nil)
        #expect(mergeSpec["completions"] as? Int == 1 && mergeSpec["parallelism"] as? Int == 1)
        let merger = try Self.container(merge)
        #expect(merger["command"] as? [String] == ["/usr/local/bin/entrypoint.sh", "merge"])
        let mergeEnvironment = Self.environment(merger)
        for key in ["SEGMENTS", "RUN_ID", "RESULTS"] { #expect(mergeEnvironment[key] == segmentEnvironment[key], "\(key)") }
        #expect(try Self.canonical(merger["volumeMounts"]) == (try Self.canonical(segment["volumeMounts"])))
        #expect(try Self.canonical(try Self.podSpec(merge)["volumes"]) == (try Self.canonical(try Self.podSpec(run)["volumes"])))
        // One image everywhere: the one given.
        #expect(segment["image"] as? String == "registry.example/fleetbench:test")
        #expect(merger["image"] as? String == "registry.example/fleetbench:test")
        // The volumes: a ReadWriteMany claim at RESULTS, the scenario ConfigMap at SCENARIO's folder.
        let mounts = try #require(segment["volumeMounts"] as? [[String: Any]])
        let volumes = try #require(try Self.podSpec(run)["volumes"] as? [[String: Any]])
        func mountPath(ofVolume predicate: ([String: Any]) -> Bool) -> String? {
            guard let name = volumes.first(where: predicate)?["name"] as? String else { return nil }
            return mounts.first { $0["name"] as? String == name }?["mountPath"] as? String
        }
        let resultsPath = mountPath { ($0["persistentVolumeClaim"] as? [String: Any])?["claimName"] as? String == "fleetbench-results" }
        #expect(resultsPath != nil && resultsPath == segmentEnvironment["RESULTS"])
        let scenarioPath = mountPath { ($0["configMap"] as? [String: Any])?["name"] as? String == "fleetbench-scenario" }
        #expect(scenarioPath.map { $0 + "/scenario.json" } == segmentEnvironment["SCENARIO"])
        #expect((claim["spec"] as? [String: Any])?["accessModes"] as? [String] == ["ReadWriteMany"])

        // The example scenario is one fleetbench accepts, and has the seed segments need.
        let scenarioText = try #require((scenarioConfig["data"] as? [String: Any])?["scenario.json"] as? String)
        let scenarioFile = try SegmentMergeTests.write(scenarioText, name: "k8s-example-scenario")
        defer { try? FileManager.default.removeItem(atPath: scenarioFile) }
        let validate = try RunEndToEndTests.run(["validate", scenarioFile])
        #expect(validate.status == 0, "\(validate.output) \(validate.error)")
        let scenarioJSON = try #require(try JSONSerialization.jsonObject(with: Data(scenarioText.utf8)) as? [String: Any])
        #expect(scenarioJSON["seed"] != nil)

        // The files as shipped: parallelism equals completions, one image in every manifest, and the Dockerfile
        // builds that product and puts entrypoint.sh where the Jobs call it.
        let staticRun = try Self.document(try Self.yamlFile(Self.kubernetes + "/run-job.yaml"), kind: "Job", name: "fleetbench-run")
        let staticSpec = try #require(staticRun["spec"] as? [String: Any])
        #expect(staticSpec["parallelism"] as? Int != nil && staticSpec["parallelism"] as? Int == staticSpec["completions"] as? Int)
        let image = try Self.container(staticRun)["image"] as? String
        #expect(image == "fleetbench:\(FleetVersion.current)")
        let staticMerge = try Self.document(try Self.yamlFile(Self.kubernetes + "/merge-job.yaml"), kind: "Job", name: "fleetbench-merge")
        #expect(try Self.container(staticMerge)["image"] as? String == image)
        let resultsPod = try Self.document(try Self.yamlFile(Self.kubernetes + "/results-pod.yaml"), kind: "Pod", name: "fleetbench-results")
        #expect((resultsPod["spec"] as? [String: Any]).flatMap { ($0["containers"] as? [[String: Any]])?.first?["image"] as? String } == image)
        let dockerfile = try String(contentsOfFile: Self.kubernetes + "/Dockerfile", encoding: .utf8)
        #expect(dockerfile.contains("-t \(image ?? "?") ."))
        #expect(dockerfile.contains("swift build -c release --product fleetbench --static-swift-stdlib"))
        #expect(dockerfile.contains("COPY deploy/kubernetes/entrypoint.sh /usr/local/bin/entrypoint.sh"))
        // Every Debian -dev package Package.swift's system libraries name is installed in the build stage.
        let package = try String(contentsOfFile: Self.root + "/Package.swift", encoding: .utf8)
        let devPackages = package.matches(of: /\.apt\(\["([^"]+)"\]\)/).map { String($0.output.1) }
        #expect(devPackages.count >= 4)
        for name in devPackages { #expect(dockerfile.contains(" \(name)"), "\(name) missing from the Dockerfile") }
        let readme = try String(contentsOfFile: Self.kubernetes + "/README.md", encoding: .utf8)
        #expect(readme.contains("-t \(image ?? "?") ."))

        // --scenario FILE: the file's text, unchanged, becomes scenario.json.
        let ownScenario = try SegmentMergeTests.write(SegmentMergeTests.scenario, name: "k8s-own-scenario")
        defer { try? FileManager.default.removeItem(atPath: ownScenario) }
        let own = try Self.execute(Self.kubernetes + "/launch.sh", ["--print", "--scenario", ownScenario])
        try #require(own.status == 0, "\(own.error)")
        let ownDocuments = try Self.yamlDocuments(own.output)
        let ownConfig = try Self.document(ownDocuments, kind: "ConfigMap", name: "fleetbench-scenario")
        #expect((ownConfig["data"] as? [String: Any])?["scenario.json"] as? String == SegmentMergeTests.scenario + "\n")
        let ownRun = try Self.document(ownDocuments, kind: "Job", name: "fleetbench-run")
        #expect((ownRun["spec"] as? [String: Any])?["completions"] as? Int == 4)
        #expect(try Self.container(ownRun)["image"] as? String == image)

        let refused = try Self.execute(Self.kubernetes + "/launch.sh", ["--print", "--segments", "0"])
        #expect(refused.status == 2)
        #expect(refused.error == "launch.sh: --segments needs a whole number from 1, got '0'\n")
    }

    /// A stand-in for kubectl: records each call, keeps what `apply -f -` is given, answers `get job` with the
    /// condition in FAKE_<JOB> and `get pods` with the merge pod's exit code.
    static let fakeKubectl = """
        #!/bin/sh
        echo "$*" >> "$FAKE_DIR/calls"
        case "$*" in
            *"apply -f -"*) n=$(ls "$FAKE_DIR" | grep -c '^apply-'); cat > "$FAKE_DIR/apply-$n.yaml" ;;
            *"get job fleetbench-run "*) echo "$FAKE_RUN " ;;
            *"get job fleetbench-merge "*) echo "$FAKE_MERGE " ;;
            *"get pods"*) echo "$FAKE_EXIT" ;;
            *"logs job/fleetbench-merge"*) echo "the merge's summary" ;;
        esac
        """

    @Test("launch.sh applies the run, waits for the Job, then applies the merge Job and exits with merge's code")
    func launchAgainstAStandInKubectl() throws {
        let directory = RunEndToEndTests.temporaryDirectory("fake-kubectl")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.fakeKubectl.write(toFile: directory + "/kubectl", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory + "/kubectl")
        let path = directory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")

        for (merge, exitCode, expected) in [("Complete", "0", Int32(0)), ("Failed", "99", Int32(99))] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name != "kubectl" {
                try FileManager.default.removeItem(atPath: directory + "/" + name)
            }
            let outcome = try Self.execute(Self.kubernetes + "/launch.sh", ["--segments", "5", "--namespace", "load", "--run-id", "beef"],
                                           environment: ["PATH": path, "FAKE_DIR": directory, "FAKE_RUN": "Complete",
                                                         "FAKE_MERGE": merge, "FAKE_EXIT": exitCode])
            #expect(outcome.status == expected, "\(outcome.output) \(outcome.error)")
            #expect(outcome.output.contains("launch.sh: run beef, 5 segments, starting at "))
            #expect(outcome.output.contains("the merge's summary\n"))
            let calls = try String(contentsOfFile: directory + "/calls", encoding: .utf8).split(separator: "\n").map(String.init)
            let jsonpath = "-o jsonpath={range .status.conditions[?(@.status==\"True\")]}{.type} {end}"
            #expect(calls == [
                "--namespace load delete job fleetbench-run fleetbench-merge --ignore-not-found --wait=true",
                "--namespace load apply -f -",
                "--namespace load get job fleetbench-run \(jsonpath)",
                "--namespace load apply -f -",
                "--namespace load get job fleetbench-merge \(jsonpath)",
                "--namespace load logs job/fleetbench-merge",
            ] + (expected == 0 ? [] : ["--namespace load get pods -l job-name=fleetbench-merge -o jsonpath={.items[0].status.containerStatuses[0].state.terminated.exitCode}"]))
            // First everything but the merge Job, then the merge Job alone.
            let first = try Self.yamlFile(directory + "/apply-0.yaml")
            #expect(first.map { "\($0["kind"] ?? "")/\(($0["metadata"] as? [String: Any])?["name"] ?? "")" }
                    == ["ConfigMap/fleetbench-scenario", "ConfigMap/fleetbench-run", "PersistentVolumeClaim/fleetbench-results", "Job/fleetbench-run"])
            #expect((try Self.document(first, kind: "Job", name: "fleetbench-run")["spec"] as? [String: Any])?["completions"] as? Int == 5)
            let second = try Self.yamlFile(directory + "/apply-1.yaml")
            #expect(second.count == 1)
            #expect((second.first?["metadata"] as? [String: Any])?["name"] as? String == "fleetbench-merge")
        }
    }

    @Test("entrypoint.sh's command lines as 3 local processes, then its merge, give exactly the single run's counts")
    func entrypointSegmentsMergeToTheSingleRun() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let results = RunEndToEndTests.temporaryDirectory("k8s-results")
        defer { try? FileManager.default.removeItem(atPath: results) }
        let scenario = try SegmentMergeTests.write(SegmentMergeTests.scenario, name: "k8s-scenario")
        defer { try? FileManager.default.removeItem(atPath: scenario) }
        let binary = try RunEndToEndTests.binary()

        let single = try RunEndToEndTests.run(["run", scenario, "--broker", broker.url, "--out", results + "/single", "--quiet"])
        #expect(single.status == 0, "\(single.output) \(single.error)")
        let expected = SegmentMergeTests.figures(try RunEndToEndTests.report(in: results + "/single"))
        #expect(expected["delivery.qos1.expected"] == 7 * 5 * 2 + 2 * 4)

        let formatter = ISO8601DateFormatter()
        let startAt = formatter.string(from: Date().addingTimeInterval(3))
        let runID = "4b8e"
        let entrypoint = Self.kubernetes + "/entrypoint.sh"
        // What the Job and the run ConfigMap give each pod.
        func environment(_ index: Int?) -> [String: String] {
            var environment = ["SEGMENTS": "3", "RUN_ID": runID, "START_AT": startAt, "BROKER": broker.url,
                               "FLEETBENCH_ARGS": "--segment-grace 1s", "SCENARIO": scenario, "RESULTS": results,
                               "FLEETBENCH": binary]
            if let index { environment["JOB_COMPLETION_INDEX"] = String(index) }
            return environment
        }
        let pods = try (0..<3).map { try Self.start("/bin/sh", [entrypoint, "segment"], environment: environment($0)) }
        let outcomes = pods.map(Self.finish)
        for (index, outcome) in outcomes.enumerated() {
            #expect(outcome.status == 0, "segment \(index): \(outcome.output) \(outcome.error)")
            #expect(FileManager.default.fileExists(atPath: "\(results)/\(runID)/segment-\(index)-of-3/segment.json"))
        }
        let merge = try Self.execute("/bin/sh", [entrypoint, "merge"], environment: environment(nil))
        #expect(merge.status == 0, "\(merge.output) \(merge.error)")
        #expect(merge.output.contains("segments      3 merged\n"), "\(merge.output)")
        let figures = SegmentMergeTests.figures(try RunEndToEndTests.report(in: "\(results)/\(runID)/merged"))
        for key in Set(expected.keys).union(figures.keys).sorted() {
            #expect(figures[key] == expected[key], "\(key): merged \(figures[key] ?? -1), single run \(expected[key] ?? -1)")
        }
        for name in ["report.html", "junit.xml", "latency.hlog", "report.json"] {
            #expect(FileManager.default.fileExists(atPath: "\(results)/\(runID)/merged/\(name)"), "\(name) missing")
        }

        // A segment without results: merge names its folder and exits 2, as fleetbench merge does for a gap.
        let second = "\(results)/\(runID)/segment-1-of-3"
        try FileManager.default.moveItem(atPath: second, toPath: second + ".failed")
        let gap = try Self.execute("/bin/sh", [entrypoint, "merge"], environment: environment(nil))
        #expect(gap.status == 2)
        #expect(gap.error.contains("entrypoint.sh: segments without results (segment.json): \(second);"), "\(gap.error)")
        // Outside an Indexed Job the segment is refused before anything runs.
        let noIndex = try Self.execute("/bin/sh", [entrypoint, "segment"], environment: environment(nil))
        #expect(noIndex.status != 0)
        #expect(noIndex.error.contains("JOB_COMPLETION_INDEX is not set (run as a pod of an Indexed Job)"), "\(noIndex.error)")
    }

    /// Shell-like words of the `fleetbench ...` command lines in a CI script: continuation lines joined, cut at
    /// `||`, `;` or `>`, quotes removed, $BROKER given a value.
    static func fleetbenchCommands(in script: String) -> [[String]] {
        let joined = script.replacingOccurrences(of: "\\\n", with: " ")
        var commands: [[String]] = []
        for line in joined.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("fleetbench ") else { continue }
            var words: [String] = []
            for word in trimmed.split(separator: " ") {
                if word == "||" || word == ";" || word.hasPrefix(">") { break }
                words.append(word.replacingOccurrences(of: "\"", with: "").replacingOccurrences(of: "$BROKER", with: "mqtt://127.0.0.1:1883"))
            }
            commands.append(words)
        }
        return commands
    }

    @Test("the GitHub Actions and GitLab CI examples parse, and their fleetbench command lines are ones fleetbench accepts")
    func ciExamples() throws {
        let github = try #require(try Self.yamlFile(Self.root + "/docs/ci/github-actions.yml").first)
        let jobs = try #require(github["jobs"] as? [String: Any])
        let load = try #require(jobs["load"] as? [String: Any])
        let services = try #require(load["services"] as? [String: Any])
        #expect((services["mosquitto"] as? [String: Any])?["image"] as? String != nil)
        let steps = try #require(load["steps"] as? [[String: Any]])
        let githubScripts = steps.compactMap { $0["run"] as? String }
        let uploads = steps.filter { ($0["uses"] as? String)?.hasPrefix("actions/upload-artifact@") == true }
        #expect(uploads.count == 1)
        let uploaded = (uploads.first?["with"] as? [String: Any])?["path"] as? String ?? ""
        #expect(uploaded.contains("results/report.html") && uploaded.contains("results/junit.xml"))
        #expect(uploads.first?["if"] as? String == "always()")

        let gitlab = try #require(try Self.yamlFile(Self.root + "/docs/ci/gitlab-ci.yml").first)
        let job = try #require(gitlab["broker-load"] as? [String: Any])
        let gitlabServices = try #require(job["services"] as? [[String: Any]])
        #expect(gitlabServices.first?["alias"] as? String == "mosquitto")
        let gitlabScripts = try #require(job["script"] as? [String])
        let artifacts = try #require(job["artifacts"] as? [String: Any])
        #expect(artifacts["when"] as? String == "always")
        #expect((artifacts["paths"] as? [String])?.contains("results/report.html") == true)
        #expect((artifacts["reports"] as? [String: Any])?["junit"] as? String == "results/junit.xml")

        for (name, scripts) in [("GitHub", githubScripts), ("GitLab", gitlabScripts)] {
            let commands = scripts.flatMap(Self.fleetbenchCommands)
            let runs = commands.filter { $0.count > 1 && $0[1] == "run" }
            let compares = commands.filter { $0.count > 1 && $0[1] == "compare" }
            #expect(runs.count == 1 && compares.count == 1, "\(name): \(commands)")
            for words in runs {
                let command = try #require(try RunCommand.parse(Array(words.dropFirst(2))), "\(name): \(words)")
                #expect(command.baseline != nil, "\(name): the run is gated by a baseline")
                #expect(command.brokers == ["mqtt://127.0.0.1:1883"])
                #expect(command.summaryJSON != nil)
            }
            for words in compares {
                let command = try #require(try CompareCommand.parse(Array(words.dropFirst(2))), "\(name): \(words)")
                #expect(command.format == .markdown, "\(name)")
            }
        }
    }

    @Test("the Grafana dashboard parses and queries only metrics the --metrics-listen endpoint exports, by its labels")
    func grafanaDashboard() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.root + "/deploy/grafana/fleetbench-dashboard.json"))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        var expressions: [String] = []
        for panel in panels {
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                if let expression = target["expr"] as? String { expressions.append(expression) }
            }
        }
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        for variable in variables { if let query = variable["definition"] as? String { expressions.append(query) } }
        #expect(expressions.count >= 20)
        #expect(Set(variables.compactMap { $0["name"] as? String }).isSuperset(of: ["run_id", "segment"]))

        // A real scrape of a real run: the metric names and labels the endpoint exports.
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        let out = RunEndToEndTests.temporaryDirectory("grafana-scrape")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let scenario = try SegmentMergeTests.write(SegmentMergeTests.scenario, name: "grafana-scenario")
        defer { try? FileManager.default.removeItem(atPath: scenario) }
        let port = try LoopbackPort.free()
        let run = try Self.start(try RunEndToEndTests.binary(), [
            "run", scenario, "--broker", broker.url, "--metrics-listen", String(port), "--segment", "0/1",
            "--run-id", "9a7e", "--out", out, "--quiet",
        ])
        var scrape = ""
        let fetch = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode(), end='')"
        for _ in 0..<40 where !scrape.contains("fleetbench_messages_published_total") {
            Thread.sleep(forTimeInterval: 0.1)
            scrape = (try? Self.execute("/usr/bin/env", ["python3", "-c", fetch, "http://127.0.0.1:\(port)/metrics"]))?.output ?? ""
        }
        let finished = Self.finish(run)
        #expect(finished.status == 0, "\(finished.error)")
        try #require(scrape.contains("fleetbench_messages_published_total"), "no scrape: \(scrape)")
        let exported = Set(scrape.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }
            .map { String($0.split(separator: " ")[2]) })
        #expect(exported.count >= 10)
        #expect(scrape.contains(",run_id=\"0000000000009a7e\",segment=\"0/1\"} 12\n"), "\(scrape)")
        // The labels the endpoint sets: those of this scrape's samples, and those of samples this run had no
        // occasion for (a connect failure's reason), from the renderer's source.
        let liveSource = try String(contentsOfFile: Self.root + "/Sources/FleetCLI/LiveStatus.swift", encoding: .utf8)
        var labels = Set(liveSource.matches(of: /\("([a-z_]+)=\\"/).map { String($0.output.1) })
        for line in scrape.split(separator: "\n") where !line.hasPrefix("#") {
            guard let open = line.firstIndex(of: "{"), let close = line.firstIndex(of: "}") else { continue }
            for pair in line[line.index(after: open)..<close].split(separator: ",") { labels.insert(String(pair.split(separator: "=")[0])) }
        }
        #expect(labels.isSuperset(of: ["scenario", "run_id", "segment", "qos", "outcome", "reason"]), "\(labels)")
        var queried = Set<String>()
        for expression in expressions {
            for match in expression.matches(of: /fleetbench_[a-z_]+/) { queried.insert(String(match.output)) }
            // Every label a query groups by or selects on is one the endpoint sets.
            for match in expression.matches(of: /by \(([a-z_, ]+)\)/) {
                for label in match.output.1.split(separator: ",") {
                    let name = label.trimmingCharacters(in: .whitespaces)
                    #expect(labels.contains(name), "label \(name) in \(expression)")
                }
            }
            for match in expression.matches(of: /([a-z_]+)=~?"/) {
                #expect(labels.contains(String(match.output.1)), "label \(match.output.1) in \(expression)")
            }
        }
        #expect(queried.count >= 10)
        for name in queried.sorted() { #expect(exported.contains(name), "the dashboard queries \(name), which the endpoint does not export") }
    }

    static let shellcheck = ["/usr/bin/shellcheck", "/usr/local/bin/shellcheck"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test("the Kubernetes scripts pass shellcheck as POSIX sh", .enabled(if: shellcheck != nil))
    func scriptsPassShellcheck() throws {
        let outcome = try Self.execute(Self.shellcheck!, ["-s", "sh", Self.kubernetes + "/entrypoint.sh", Self.kubernetes + "/launch.sh"])
        #expect(outcome.status == 0, "\(outcome.output)")
    }
}
