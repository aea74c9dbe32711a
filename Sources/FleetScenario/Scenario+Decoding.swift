import FleetPayload
import FleetJSON
import FleetMetrics
import MQTTCodec

/// Why a scenario could not be loaded: the file is not JSON, or it is JSON but not a valid scenario.
public enum ScenarioLoadError: Error, Equatable, Sendable, CustomStringConvertible {
    case syntax(JSONParseError)
    case invalid(ScenarioError)

    public var description: String {
        switch self {
        case .syntax(let error): return error.description
        case .invalid(let error): return error.description
        }
    }
}

extension Scenario {
    /// Reads, overrides and decodes a scenario file. `overrides` are `--set path=value` arguments (without `--set`).
    public static func load(path: String, overrides: [String] = [], environment: [String: String] = [:]) throws(ScenarioLoadError) -> Scenario {
        let document: JSONDocument
        do {
            document = try JSONDocument.load(path: path)
        } catch {
            throw .syntax(error)
        }
        var name = path.split(separator: "/").last.map(String.init) ?? path
        if name.hasSuffix(".json") { name = String(name.dropLast(5)) }
        do {
            return try decode(document: document, overrides: overrides, environment: environment, defaultName: name)
        } catch {
            throw .invalid(error)
        }
    }

    /// Decodes a parsed document after applying `--set` overrides; collects every problem before throwing.
    public static func decode(
        document: JSONDocument, overrides: [String] = [], environment: [String: String] = [:], defaultName: String = "scenario"
    ) throws(ScenarioError) -> Scenario {
        var root = document.root
        var overridden: [(path: JSONPath, argument: String)] = []
        var overrideFailures: [(String, JSONPath, String)] = []
        for argument in overrides {
            switch ScenarioOverride.parse(argument) {
            case .failure(let failure):
                overrideFailures.append((argument, .root, failure.message))
            case .success(let override):
                switch override.apply(to: &root) {
                case .success(let path): overridden.append((path, argument))
                case .failure(let failure): overrideFailures.append((argument, failure.path, failure.message))
                }
            }
        }
        let context = DecodingContext(document: document, overriddenPaths: overridden, environment: environment)
        for failure in overrideFailures {
            context.overrideError(argument: failure.0, path: failure.1, message: failure.2)
        }
        let scenario = ScenarioDecoder(context: context).decodeScenario(root, defaultName: defaultName)
        if context.hasErrors || scenario == nil {
            throw ScenarioError(diagnostics: context.diagnostics)
        }
        return scenario!
    }
}

/// Placeholders allowed per kind of pattern.
enum Placeholders {
    static let clientID: Set<NamePlaceholder> = [.index, .fleet]
    static let perClient: Set<NamePlaceholder> = [.clientID, .index, .fleet]
    static let request: Set<NamePlaceholder> = [.clientID, .index, .fleet, .targetClientID, .targetIndex]
}

struct ScenarioDecoder {
    let context: DecodingContext

    static let topKeys = ["name", "description", "brokers", "fleets", "stages", "thresholds", "duration", "seed", "drain",
                          "ready_timeout", "max_connects_in_flight_per_broker"]

    func decodeScenario(_ value: JSONValue, defaultName: String) -> Scenario? {
        guard let object = context.object(value, .root, allowed: Self.topKeys, what: "a scenario object") else { return nil }
        let name = object.optional("name", context.nonEmptyString) ?? defaultName
        let description = object.optional("description", context.string) ?? ""
        var brokers: [BrokerEndpoint] = []
        if let list = object.optional("brokers", { context.array($0, $1) }) {
            brokers = list.compactMap { decodeBroker($0.0, $0.1) }
        }
        var fleets: [Fleet] = []
        var fleetPaths: [String: JSONPath] = [:]
        if let list = object.required("fleets", "an array of client groups", { context.array($0, $1) }) {
            if list.isEmpty { context.error(JSONPath.root.appending("fleets"), "expected at least one fleet, got an empty array") }
            for (element, path) in list {
                guard let fleet = decodeFleet(element, path) else { continue }
                if fleetPaths[fleet.name] != nil {
                    context.error(path.appending("name"), "duplicate fleet name '\(fleet.name)'")
                } else {
                    fleetPaths[fleet.name] = path
                    fleets.append(fleet)
                }
            }
        }
        checkRequests(fleets, fleetPaths)
        checkTransports(fleets, fleetPaths, brokers: brokers)
        var stages: [Stage] = []
        if let list = object.optional("stages", { context.array($0, $1) }) {
            stages = list.compactMap { decodeStage($0.0, $0.1, fleets: fleets, embedded: brokers.isEmpty) }
        }
        var thresholds: [Threshold] = []
        var thresholdPaths: [JSONPath] = []
        if let list = object.optional("thresholds", { context.array($0, $1) }) {
            for (element, path) in list {
                guard let text = context.string(element, path) else { continue }
                switch Threshold.parse(text) {
                case .success(let threshold):
                    thresholds.append(threshold)
                    thresholdPaths.append(path)
                case .failure(let failure):
                    context.error(path, failure.message, characterOffset: failure.column - 1)
                }
            }
        }
        let stageTotal = stages.reduce(TimeSpan.zero) { $0 + $1.duration }
        var duration = stageTotal
        if let given = object.optional("duration", { context.duration($0, $1, allowZero: false) }) {
            if given < stageTotal {
                context.error(JSONPath.root.appending("duration"),
                    "the stages last \(stageTotal), longer than the duration \(given)")
            }
            duration = given
        } else if !object.has("stages"), !object.has("duration") {
            context.error(.root, "missing required key 'duration' (a duration such as \"30s\"; or give stages)")
        }
        let seed = object.optional("seed") { value, path in
            context.integer(value, path, in: 0...Int64.max, what: "a non-negative integer").map { UInt64($0) }
        }
        let drain = object.optional("drain") { context.duration($0, $1, allowZero: true) }
        let readyTimeout = object.optional("ready_timeout") { context.duration($0, $1, allowZero: true) }
        var scenario = Scenario(name: name, description: description, brokers: brokers, fleets: fleets, stages: stages,
                                thresholds: thresholds, duration: duration, seed: seed, drain: drain,
                                readyTimeout: readyTimeout)
        if let bound = object.optional("max_connects_in_flight_per_broker", {
            context.integer($0, $1, in: 1...1_000_000, what: "an integer from 1 to 1000000")
        }) {
            scenario.maxConnectsInFlightPerBroker = Int(bound)
        }
        checkThresholdsProducible(scenario, paths: thresholdPaths)
        return scenario
    }

    /// A threshold on a metric this scenario's runs cannot produce would fail every run "not observed": refused.
    func checkThresholdsProducible(_ scenario: Scenario, paths: [JSONPath]) {
        let activities = scenario.activities
        for (threshold, path) in zip(scenario.thresholds, paths) {
            guard let metric = MetricCatalog.metric(threshold.metric),
                  case .needs(let activity) = metric.source, !activities.contains(activity) else { continue }
            let column = threshold.source.prefix { $0 == " " || $0 == "\t" }.count
            context.error(path, "no run of this scenario produces \(threshold.metric): it needs \(activity.explanation)",
                          characterOffset: column)
        }
    }

    // MARK: Brokers

    func decodeBroker(_ value: JSONValue, _ path: JSONPath) -> BrokerEndpoint? {
        var urlValue = value
        var urlPath = path
        var object: ObjectReader?
        if case .object = value {
            object = context.object(value, path, allowed: ["url", "tls", "websocket"])
            guard let found = object?.value("url") else {
                context.error(path, "missing required key 'url' (mqtt://, mqtts://, ws:// or wss:// URL)")
                return nil
            }
            urlValue = found
            urlPath = path.appending("url")
        } else if case .string = value {
        } else {
            context.expected("a broker URL string or an object with \"url\"", path, got: value)
            return nil
        }
        guard let url = context.string(urlValue, urlPath) else { return nil }
        guard var endpoint = parseBrokerURL(url, urlPath) else { return nil }
        if endpoint.transport.usesTLS { endpoint.tls = TLSOptions() }
        if let object {
            if let tlsValue = object.value("tls") {
                let tlsPath = path.appending("tls")
                if !endpoint.transport.usesTLS {
                    context.error(tlsPath, "TLS options need an mqtts:// or wss:// URL")
                } else if let tls = decodeTLS(tlsValue, tlsPath) {
                    endpoint.tls = tls
                }
            }
            if let wsValue = object.value("websocket") {
                let wsPath = path.appending("websocket")
                if !endpoint.transport.usesWebSocket {
                    context.error(wsPath, "WebSocket options need a ws:// or wss:// URL")
                } else if let reader = context.object(wsValue, wsPath, allowed: ["subprotocol", "headers"]) {
                    if let subprotocol = reader.optional("subprotocol", { context.choice($0, $1, [("mqtt", "mqtt"), ("mqttv3.1", "mqttv3.1")]) }) {
                        endpoint.webSocket?.subprotocol = subprotocol
                    }
                    if let headers = reader.optional("headers", decodeStringMap) { endpoint.webSocket?.headers = headers }
                }
            }
        }
        return endpoint
    }

    /// `scheme://user:secret@host…` → `scheme://user:***@host…`, for messages about a URL before it is checked.
    static func redactedBrokerURL(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return url }
        let authorityEnd = url[scheme.upperBound...].firstIndex(of: "/") ?? url.endIndex
        guard let at = url[scheme.upperBound..<authorityEnd].lastIndex(of: "@") else { return url }
        let userInfo = url[scheme.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return url }
        return String(url[..<url.index(after: colon)]) + "***" + String(url[at...])
    }

    func parseBrokerURL(_ url: String, _ path: JSONPath) -> BrokerEndpoint? {
        let expectedText = "expected a broker URL such as mqtt://host:1883, mqtts://, ws:// or wss://host/path"
        guard let schemeEnd = url.firstRange(of: "://") else {
            context.error(path, "\(expectedText), got \(JSONValue.string(url).kindDescription)")
            return nil
        }
        let scheme = String(url[..<schemeEnd.lowerBound])
        guard let transport = BrokerTransport(rawValue: scheme.lowercased()) else {
            var message = "unsupported scheme '\(scheme)'; expected mqtt, mqtts, ws or wss"
            if let suggestion = closestMatch(to: scheme, among: BrokerTransport.allCases.map(\.rawValue)) {
                message += "; did you mean '\(suggestion)'?"
            }
            context.error(path, message)
            return nil
        }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix(while: { $0 != "/" })
        if authority.contains("@") {
            // Neither the URL nor any part of it is repeated: the text before '@' may be a password.
            context.error(path, "a broker URL cannot carry credentials (user:password@host): they would show in "
                + "reports and messages; give them in the fleet's \"credentials\", e.g. {\"password\": \"${FB_PASS}\"}")
            return nil
        }
        let requestPath = String(rest.dropFirst(authority.count))
        var host = String(authority)
        var port = transport.defaultPort
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else {
                context.error(path, "unclosed '[' in an IPv6 host")
                return nil
            }
            let after = host[host.index(after: close)...]
            let inner = String(host[host.index(after: host.startIndex)..<close])
            if after.hasPrefix(":") {
                guard let parsed = Int(after.dropFirst()), (1...65535).contains(parsed) else {
                    context.error(path, "invalid port '\(after.dropFirst())'; expected 1 to 65535")
                    return nil
                }
                port = parsed
            } else if !after.isEmpty {
                context.error(path, "unexpected '\(after)' after the IPv6 host")
                return nil
            }
            host = inner
        } else if let colon = host.lastIndex(of: ":") {
            let portText = host[host.index(after: colon)...]
            guard let parsed = Int(portText), (1...65535).contains(parsed) else {
                context.error(path, "invalid port '\(portText)'; expected 1 to 65535")
                return nil
            }
            port = parsed
            host = String(host[..<colon])
        }
        if host.isEmpty {
            context.error(path, "missing host in '\(url)'")
            return nil
        }
        var webSocket: WebSocketOptions?
        if transport.usesWebSocket {
            webSocket = WebSocketOptions(path: requestPath.isEmpty ? "/mqtt" : requestPath)
        } else if !requestPath.isEmpty, requestPath != "/" {
            context.error(path, "a path ('\(requestPath)') is only meaningful for ws:// and wss:// URLs")
            return nil
        }
        return BrokerEndpoint(url: url, transport: transport, host: host, port: port, tls: nil, webSocket: webSocket)
    }

    func decodeTLS(_ value: JSONValue, _ path: JSONPath) -> TLSOptions? {
        guard let object = context.object(value, path, allowed: ["ca_file", "insecure_skip_verify", "client_cert", "client_key", "alpn", "sni"]) else { return nil }
        var tls = TLSOptions()
        tls.caFile = object.optional("ca_file", context.nonEmptyString)
        tls.insecureSkipVerify = object.optional("insecure_skip_verify", context.bool) ?? false
        tls.clientCertificate = object.optional("client_cert") { context.pattern($0, $1, allowed: Placeholders.perClient) }
        tls.clientKey = object.optional("client_key") { context.pattern($0, $1, allowed: Placeholders.perClient) }
        checkCertificatePair(certificate: tls.clientCertificate, key: tls.clientKey, path)
        if let list = object.optional("alpn", { context.array($0, $1) }) {
            tls.alpn = list.compactMap { context.nonEmptyString($0.0, $0.1) }
        }
        tls.serverName = object.optional("sni", context.nonEmptyString)
        if tls.insecureSkipVerify, tls.caFile != nil {
            context.error(path.appending("insecure_skip_verify"), "insecure_skip_verify and ca_file contradict each other; keep one")
        }
        return tls
    }

    func checkCertificatePair(certificate: NamePattern?, key: NamePattern?, _ path: JSONPath) {
        if (certificate == nil) != (key == nil) {
            context.error(path, "client_cert and client_key go together; give both or neither")
        }
    }

    /// An object of string values kept in order (HTTP headers, user properties).
    func decodeStringMap(_ value: JSONValue, _ path: JSONPath) -> [HTTPHeader]? {
        guard case .object(let members) = value else {
            context.expected("an object of strings", path, got: value)
            return nil
        }
        return members.compactMap { member in
            context.string(member.value, path.appending(member.key)).map { HTTPHeader(name: member.key, value: $0) }
        }
    }

    // MARK: Fleets

    static let fleetKeys = [
        "name", "count", "client_id", "protocol", "transport", "keepalive", "clean_session", "clean_start",
        "session_expiry", "will", "credentials", "tls", "source_addresses", "connect_rate", "max_connects_in_flight",
        "reconnect", "ack_timeouts", "inflight_window", "subscriptions", "publish", "requests", "respond", "heartbeat",
        "vehicle", "identities",
        "network",
    ]

    func decodeFleet(_ value: JSONValue, _ path: JSONPath) -> Fleet? {
        guard let object = context.object(value, path, allowed: Self.fleetKeys, what: "a fleet object") else { return nil }
        let name = object.required("name", "the fleet's name", { value, path -> String? in
            guard let text = context.nonEmptyString(value, path) else { return nil }
            if !text.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" }) {
                context.error(path, "a fleet name may hold letters, digits, '_' and '-' only, got \(value.kindDescription)")
                return nil
            }
            return text
        })
        let count = object.required("count", "how many clients", { context.integer($0, $1, in: 1...10_000_000, what: "an integer from 1 to 10000000") })
        var fleet = Fleet(name: name ?? "?", count: count ?? 1, clientID: NamePattern(source: "{fleet}-{i}", segments: [.placeholder(.fleet, width: 0), .literal("-"), .placeholder(.index, width: 0)]))
        if let pattern = object.optional("client_id", { context.pattern($0, $1, allowed: Placeholders.clientID) }) {
            if fleet.count > 1, !pattern.placeholders.contains(.index) {
                context.error(path.appending("client_id"), "with count \(fleet.count) the client_id pattern must contain {i} so client ids are unique")
            }
            fleet.clientID = pattern
        }
        fleet.protocolVersion = object.optional("protocol", { context.protocolVersion($0, $1) }) ?? .v3_1_1
        let isV5 = fleet.protocolVersion == .v5
        fleet.transport = object.optional("transport") { context.choice($0, $1, BrokerTransport.allCases.map { ($0.rawValue, $0) }) }
        if let keepalive = object.optional("keepalive", { context.duration($0, $1) }) {
            // MQTT 5.0 §3.1.2.10: Keep Alive is a two-byte number of seconds.
            if keepalive.nanoseconds % 1_000_000_000 != 0 || keepalive.nanoseconds / 1_000_000_000 > 65535 {
                context.error(path.appending("keepalive"), "expected whole seconds from 0s to 65535s (MQTT keep alive), got \(keepalive)")
            } else {
                fleet.keepalive = keepalive
            }
        }
        if let clean = object.optional("clean_session", context.bool) {
            if isV5 { context.error(path.appending("clean_session"), "clean_session is MQTT 3.1/3.1.1; with protocol \"5\" use clean_start", atKey: true) }
            fleet.cleanStart = clean
        }
        if let clean = object.optional("clean_start", context.bool) {
            if !isV5 { context.error(path.appending("clean_start"), "clean_start is MQTT 5; with protocol \"\(fleet.protocolVersion.scenarioName)\" use clean_session", atKey: true) }
            fleet.cleanStart = clean
        }
        if let expiry = object.optional("session_expiry", { context.duration($0, $1) }) {
            if !isV5 { context.error(path.appending("session_expiry"), "session_expiry needs protocol \"5\"", atKey: true) }
            fleet.sessionExpiry = expiry
        }
        fleet.will = object.optional("will") { decodeWill($0, $1, isV5: isV5) }
        fleet.credentials = object.optional("credentials", decodeCredentials)
        if let tlsValue = object.value("tls"), let reader = context.object(tlsValue, path.appending("tls"), allowed: ["client_cert", "client_key", "mint"]) {
            fleet.clientCertificate = reader.optional("client_cert") { context.pattern($0, $1, allowed: Placeholders.perClient) }
            fleet.clientKey = reader.optional("client_key") { context.pattern($0, $1, allowed: Placeholders.perClient) }
            checkCertificatePair(certificate: fleet.clientCertificate, key: fleet.clientKey, path.appending("tls"))
            fleet.mint = reader.optional("mint", decodeMinting)
            if fleet.mint != nil, fleet.clientCertificate != nil {
                context.error(path.appending("tls").appending("mint"), "mint and client_cert contradict each other; keep one", atKey: true)
            }
        }
        if let list = object.optional("source_addresses", { context.array($0, $1) }) {
            fleet.sourceAddresses = list.flatMap { decodeSourceAddress($0.0, $0.1) }
        }
        fleet.connectRate = object.optional("connect_rate") { context.positiveNumber($0, $1, what: "a number of connections per second greater than 0") }
        fleet.maxConnectsInFlight = object.optional("max_connects_in_flight") { context.integer($0, $1, in: 1...1_000_000, what: "an integer from 1 to 1000000") } ?? 100
        fleet.reconnect = object.optional("reconnect", decodeReconnect) ?? .none
        if let timeouts = object.value("ack_timeouts") {
            fleet.ackTimeouts = decodeAckTimeouts(timeouts, path.appending("ack_timeouts"))
        }
        fleet.inflightWindow = object.optional("inflight_window") { context.integer($0, $1, in: 1...65535, what: "an integer from 1 to 65535") } ?? 32
        if let list = object.optional("subscriptions", { context.array($0, $1) }) {
            fleet.subscriptions = list.compactMap { decodeSubscription($0.0, $0.1, isV5: isV5) }
        }
        if let list = object.optional("publish", { context.array($0, $1) }) {
            fleet.publishes = list.compactMap { element, elementPath in
                decodePublish(element, elementPath, defaultName: "\(fleet.name).publish[\(elementPath.components.last.flatMap { if case .index(let i) = $0 { return i } else { return nil } } ?? 0)]")
            }
        }
        if let list = object.optional("requests", { context.array($0, $1) }) {
            fleet.requests = list.compactMap { decodeRequest($0.0, $0.1, fleetName: fleet.name, isV5: isV5) }
        }
        fleet.responder = object.optional("respond", decodeResponder)
        fleet.heartbeat = object.optional("heartbeat", decodeHeartbeat)
        fleet.vehicle = object.optional("vehicle", decodeVehicle)
        fleet.identities = object.optional("identities") { decodeIdentities($0, $1, count: fleet.count) }
        if fleet.identities != nil, object.has("client_id") {
            context.error(path.appending("client_id"), "client ids come from the identities file; remove client_id", atKey: true)
        }
        checkVehicleGenerators(fleet, path, object: object)
        fleet.networks = object.optional("network", decodeNetworks) ?? []
        if name == nil || count == nil { return nil }
        return fleet
    }

    func decodeWill(_ value: JSONValue, _ path: JSONPath, isV5: Bool) -> Will? {
        guard let object = context.object(value, path, allowed: ["topic", "payload", "qos", "retain", "delay", "properties"]) else { return nil }
        let topic = object.required("topic", "the will's topic") { context.topicName($0, $1, allowed: Placeholders.perClient) }
        let payloadValue = object.optional("payload", decodePayload) ?? .template(PayloadTemplate(segments: [], isJSON: false))
        guard case .template(let payload) = payloadValue else {
            context.error(path.appending("payload"), "a will's payload must be text or a JSON template, not a size")
            return nil
        }
        var will = Will(topic: topic ?? NamePattern(source: "", segments: []), payload: payload)
        will.qos = object.optional("qos", context.qos) ?? .atMostOnce
        will.retain = object.optional("retain", context.bool) ?? false
        if let delay = object.optional("delay", { context.duration($0, $1) }) {
            if !isV5 { context.error(path.appending("delay"), "a will delay needs protocol \"5\"", atKey: true) }
            will.delay = delay
        }
        if let propertiesValue = object.value("properties") {
            let propertiesPath = path.appending("properties")
            if !isV5 { context.error(propertiesPath, "will properties need protocol \"5\"", atKey: true) }
            if let reader = context.object(propertiesValue, propertiesPath, allowed: ["content_type", "message_expiry", "payload_format_utf8", "response_topic", "user_properties"]) {
                will.properties.contentType = reader.optional("content_type", context.string)
                will.properties.messageExpiry = reader.optional("message_expiry") { context.duration($0, $1) }
                will.properties.payloadIsUTF8 = reader.optional("payload_format_utf8", context.bool)
                will.properties.responseTopic = reader.optional("response_topic", context.nonEmptyString)
                will.properties.userProperties = reader.optional("user_properties", decodeStringMap) ?? []
            }
        }
        return topic == nil ? nil : will
    }

    func decodeCredentials(_ value: JSONValue, _ path: JSONPath) -> Credentials? {
        guard let object = context.object(value, path, allowed: ["username", "password"]) else { return nil }
        let username = object.optional("username") { value, path -> SecretText? in
            guard let text = context.string(value, path), let resolved = context.substituteEnvironment(text, path) else { return nil }
            return SecretText(resolved: resolved, redacted: text)
        }
        let password = object.optional("password") { value, path -> SecretText? in
            guard let text = context.string(value, path), let resolved = context.substituteEnvironment(text, path) else { return nil }
            // Only variable references are safe to show; literal password text never is.
            return SecretText(resolved: resolved, redacted: ScenarioRedaction.isOnlyReference(text) ? text : ScenarioRedaction.mask)
        }
        return Credentials(username: username, password: password)
    }

    func decodeSourceAddress(_ value: JSONValue, _ path: JSONPath) -> [String] {
        guard let text = context.nonEmptyString(value, path) else { return [] }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        if parts.count == 2, let low = ipv4(parts[0]), let high = ipv4(parts[1]) {
            guard low <= high, high - low < 65536 else {
                context.error(path, "expected an address range with at most 65536 addresses, low first, got \(value.kindDescription)")
                return []
            }
            return (low...high).map { "\($0 >> 24).\($0 >> 16 & 255).\($0 >> 8 & 255).\($0 & 255)" }
        }
        if ipv4(Substring(text)) != nil || (text.contains(":") && text.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." })) {
            return [text]
        }
        context.expected("an IPv4 or IPv6 address or a range such as \"127.0.0.2-127.0.0.9\"", path, got: value)
        return []
    }

    func ipv4(_ text: Substring) -> UInt32? {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return nil }
        var address: UInt32 = 0
        for octet in octets {
            guard octet.count <= 3, let number = UInt32(octet), number < 256 else { return nil }
            address = address << 8 | number
        }
        return address
    }

    func decodeReconnect(_ value: JSONValue, _ path: JSONPath) -> ReconnectPolicy? {
        if case .string(let text) = value, text == "none" { return ReconnectPolicy.none }
        guard case .object = value, let type = value["type"] else {
            if case .object = value {
                context.error(path, "missing required key 'type' (\"none\", \"immediate_then_interval\" or \"exponential\")")
            } else {
                context.expected("a reconnect object with \"type\"", path, got: value)
            }
            return nil
        }
        let typePath = path.appending("type")
        guard let kind = context.choice(type, typePath, [("none", 0), ("immediate_then_interval", 1), ("exponential", 2)]) else {
            _ = context.object(value, path, allowed: ["type", "immediate", "interval", "base", "cap", "max_attempts"])
            return nil
        }
        switch kind {
        case 0:
            _ = context.object(value, path, allowed: ["type"])
            return ReconnectPolicy.none
        case 1:
            guard let object = context.object(value, path, allowed: ["type", "immediate", "interval", "max_attempts"]) else { return nil }
            let immediate = object.optional("immediate") { context.integer($0, $1, in: 0...1_000_000, what: "a non-negative integer") } ?? 0
            let interval = object.required("interval", "the wait between later attempts") { context.duration($0, $1, allowZero: false) }
            let attempts = object.optional("max_attempts") { context.integer($0, $1, in: 1...Int64(Int32.max), what: "a positive integer") }
            return interval.map { .immediateThenInterval(immediate: immediate, interval: $0, maxAttempts: attempts) }
        default:
            guard let object = context.object(value, path, allowed: ["type", "base", "cap", "max_attempts"]) else { return nil }
            let base = object.required("base", "the first backoff") { context.duration($0, $1, allowZero: false) }
            let cap = object.required("cap", "the longest backoff") { context.duration($0, $1, allowZero: false) }
            let attempts = object.optional("max_attempts") { context.integer($0, $1, in: 1...Int64(Int32.max), what: "a positive integer") }
            guard let base, let cap else { return nil }
            if cap < base {
                context.error(path.appending("cap"), "cap (\(cap)) must not be shorter than base (\(base))")
                return nil
            }
            return .exponential(base: base, cap: cap, maxAttempts: attempts)
        }
    }

    func decodeAckTimeouts(_ value: JSONValue, _ path: JSONPath) -> AckTimeouts {
        var timeouts = AckTimeouts()
        guard let object = context.object(value, path, allowed: AckTimeouts.keys) else { return timeouts }
        func read(_ key: String) -> TimeSpan? { object.optional(key) { context.duration($0, $1, allowZero: false) } }
        if let span = read("connect") { timeouts.connect = span }
        if let span = read("connack") { timeouts.connack = span }
        if let span = read("suback") { timeouts.suback = span }
        if let span = read("unsuback") { timeouts.unsuback = span }
        if let span = read("puback") { timeouts.puback = span }
        if let span = read("pubrec") { timeouts.pubrec = span }
        if let span = read("pubcomp") { timeouts.pubcomp = span }
        if let span = read("pingresp") { timeouts.pingresp = span }
        return timeouts
    }

    func decodeSubscription(_ value: JSONValue, _ path: JSONPath, isV5: Bool) -> Subscription? {
        if case .string = value {
            return context.topicFilter(value, path, allowed: Placeholders.perClient).map { Subscription(filter: $0) }
        }
        guard let object = context.object(value, path, allowed: ["filter", "qos", "no_local", "retain_as_published", "retain_handling"], what: "a topic filter string or a subscription object") else { return nil }
        let filter = object.required("filter", "a topic filter", { context.topicFilter($0, $1, allowed: Placeholders.perClient) })
        let qos = object.optional("qos", context.qos) ?? .atMostOnce
        for key in ["no_local", "retain_as_published", "retain_handling"] where object.has(key) && !isV5 {
            context.error(path.appending(key), "\(key) is an MQTT 5 subscription option; it needs protocol \"5\"", atKey: true)
        }
        let noLocal = object.optional("no_local", context.bool) ?? false
        let retainAsPublished = object.optional("retain_as_published", context.bool) ?? false
        let retainHandling = object.optional("retain_handling") { context.integer($0, $1, in: 0...2, what: "0, 1 or 2") } ?? 0
        guard let filter else { return nil }
        return Subscription(filter: filter, qos: qos, noLocal: noLocal, retainAsPublished: retainAsPublished, retainHandling: retainHandling)
    }

    func decodePublish(_ value: JSONValue, _ path: JSONPath, defaultName: String) -> PublishStream? {
        guard let object = context.object(value, path, allowed: ["name", "topic", "qos", "retain", "schedule", "payload", "behind_schedule", "limit", "offline"]) else { return nil }
        let name = object.optional("name", context.nonEmptyString) ?? defaultName
        let topic = object.required("topic", "the topic to publish to") { context.topicName($0, $1, allowed: Placeholders.perClient) }
        let schedule = object.required("schedule", "when to publish", decodeSchedule)
        let payload = object.required("payload", "what to publish", decodePayload)
        let qos = object.optional("qos", context.qos) ?? .atMostOnce
        let retain = object.optional("retain", context.bool) ?? false
        let behind = object.optional("behind_schedule") { context.choice($0, $1, [("catch_up", BehindSchedulePolicy.catchUp), ("drop", .drop)]) } ?? .catchUp
        let limit = object.optional("limit") { context.integer($0, $1, in: 1...Int64(Int32.max), what: "a positive integer") }
        let offline = object.optional("offline", decodeOffline)
        if offline != nil, behind == .drop {
            context.error(path.appending("offline"), "an offline buffer sends its backlog after the reconnect; it cannot go with behind_schedule \"drop\"", atKey: true)
        }
        guard let topic, let schedule, let payload else { return nil }
        var stream = PublishStream(name: name, topic: topic, qos: qos, retain: retain, schedule: schedule, payload: payload,
                                   behindSchedule: behind, limit: limit)
        stream.offline = offline
        return stream
    }

    func decodeSchedule(_ value: JSONValue, _ path: JSONPath) -> PublishSchedule? {
        let kinds = ["interval", "rate", "poisson", "burst", "on_connect", "max"]
        guard case .object = value else {
            context.expected("a schedule object with \"type\" (\(kinds.joined(separator: ", ")))", path, got: value)
            return nil
        }
        guard let type = value["type"] else {
            context.error(path, "missing required key 'type' (one of \(kinds.map { "\"\($0)\"" }.joined(separator: ", ")))")
            return nil
        }
        guard let kind = context.choice(type, path.appending("type"), kinds.map { ($0, $0) }) else { return nil }
        switch kind {
        case "interval":
            guard let object = context.object(value, path, allowed: ["type", "every", "jitter"]) else { return nil }
            let every = object.required("every", "the time between messages") { context.duration($0, $1, allowZero: false) }
            let jitter = object.optional("jitter") { context.duration($0, $1) } ?? .zero
            guard let every else { return nil }
            if jitter > every {
                context.error(path.appending("jitter"), "jitter (\(jitter)) must not exceed every (\(every))")
            }
            return .interval(every: every, jitter: jitter)
        case "rate", "poisson":
            guard let object = context.object(value, path, allowed: ["type", "per_second"]) else { return nil }
            guard let rate = object.required("per_second", "messages per second per client", { context.positiveNumber($0, $1) }) else { return nil }
            return kind == "rate" ? .rate(perSecond: rate) : .poisson(perSecond: rate)
        case "burst":
            guard let object = context.object(value, path, allowed: ["type", "count", "every"]) else { return nil }
            let count = object.required("count", "messages per burst") { context.integer($0, $1, in: 1...1_000_000, what: "an integer from 1 to 1000000") }
            let every = object.required("every", "the time between bursts") { context.duration($0, $1, allowZero: false) }
            guard let count, let every else { return nil }
            return .burst(count: count, every: every)
        case "max":
            // Closed model: no rate, no timing keys (a stray "per_second" is an error, not silently ignored).
            guard context.object(value, path, allowed: ["type"]) != nil else { return nil }
            return .max
        default:
            guard let object = context.object(value, path, allowed: ["type", "count"]) else { return nil }
            let count = object.optional("count") { context.integer($0, $1, in: 1...1_000_000, what: "an integer from 1 to 1000000") } ?? 1
            return .onConnect(count: count)
        }
    }

    func decodePayload(_ value: JSONValue, _ path: JSONPath) -> Payload? {
        if case .string(let text) = value { return compileText(text, path) }
        guard let object = context.object(value, path, allowed: ["text", "size", "json"], what: "a payload: a string or an object with one of \"text\", \"size\", \"json\"") else { return nil }
        let present = ["text", "size", "json"].filter { object.has($0) }
        guard present.count == 1 else {
            context.error(path, present.isEmpty
                ? "expected one of \"text\", \"size\" or \"json\" in a payload"
                : "a payload takes only one of \"text\", \"size\", \"json\"; found \(present.map { "\"\($0)\"" }.joined(separator: " and "))")
            return nil
        }
        switch present[0] {
        case "text":
            return object.optional("text") { value, path in context.string(value, path).flatMap { compileText($0, path) } }
        case "size":
            return object.optional("size") { context.integer($0, $1, in: 0...268_435_455, what: "a size in bytes from 0 to 268435455") }.map { .filler(size: $0) }
        default:
            guard let template = object.value("json") else { return nil }
            let templatePath = path.appending("json")
            let (compiled, failure) = PayloadTemplate.compileJSON(template, path: templatePath)
            if let failure {
                context.error(failure.0, failure.1.message, characterOffset: failure.1.offset)
                return nil
            }
            return compiled.map { .template($0) }
        }
    }

    func compileText(_ text: String, _ path: JSONPath) -> Payload? {
        switch PayloadTemplate.compileText(text) {
        case .success(let template): return .template(template)
        case .failure(let failure):
            context.error(path, failure.message, characterOffset: failure.offset)
            return nil
        }
    }

    func decodeRequest(_ value: JSONValue, _ path: JSONPath, fleetName: String, isV5: Bool) -> RequestStream? {
        guard let object = context.object(value, path, allowed: ["name", "target_fleet", "topic", "qos", "schedule", "payload", "response_topic", "timeout"]) else { return nil }
        let name = object.optional("name", context.nonEmptyString) ?? "\(fleetName).requests[\(path.components.last.flatMap { if case .index(let i) = $0 { return i } else { return nil } } ?? 0)]"
        let target = object.required("target_fleet", "the fleet that answers", context.nonEmptyString)
        let topic = object.required("topic", "the target client's request topic") { context.topicName($0, $1, allowed: Placeholders.request) }
        let schedule = object.required("schedule", "when to send requests", decodeSchedule)
        let payload = object.required("payload", "the request body", decodePayload)
        let responseTopic = object.required("response_topic", isV5 ? "the topic answers come back on" : "a filter matching the responder's reply_topic") { value, path in
            isV5 ? context.topicName(value, path, allowed: Placeholders.perClient) : context.topicFilter(value, path, allowed: Placeholders.perClient)
        }
        let qos = object.optional("qos", context.qos) ?? .atLeastOnce
        let timeout = object.optional("timeout") { context.duration($0, $1, allowZero: false) } ?? .seconds(15)
        guard let target, let topic, let schedule, let payload, let responseTopic else { return nil }
        return RequestStream(name: name, targetFleet: target, topic: topic, qos: qos, schedule: schedule, payload: payload,
                             responseTopic: responseTopic, timeout: timeout)
    }

    func decodeResponder(_ value: JSONValue, _ path: JSONPath) -> Responder? {
        guard let object = context.object(value, path, allowed: ["topic", "qos", "reply_topic", "payload"]) else { return nil }
        let topic = object.required("topic", "the per-client request topic") { context.topicName($0, $1, allowed: Placeholders.perClient) }
        let payload = object.optional("payload", decodePayload) ?? .template(PayloadTemplate(segments: [.literal(Array("ok".utf8))], isJSON: false))
        let qos = object.optional("qos", context.qos) ?? .atLeastOnce
        let replyTopic = object.optional("reply_topic") { context.topicName($0, $1, allowed: Placeholders.perClient) }
        guard let topic else { return nil }
        return Responder(topic: topic, qos: qos, replyTopic: replyTopic, payload: payload)
    }

    func decodeHeartbeat(_ value: JSONValue, _ path: JSONPath) -> Heartbeat? {
        guard let object = context.object(value, path, allowed: ["topic", "interval", "qos", "retain", "payload"]) else { return nil }
        let topic = object.required("topic", "where the online notice goes") { context.topicName($0, $1, allowed: Placeholders.perClient) }
        let interval = object.required("interval", "the time between notices") { context.duration($0, $1, allowZero: false) }
        let payload = object.required("payload", "the notice", decodePayload)
        let qos = object.optional("qos", context.qos) ?? .atMostOnce
        let retain = object.optional("retain", context.bool) ?? false
        guard let topic, let interval, let payload else { return nil }
        return Heartbeat(topic: topic, interval: interval, qos: qos, retain: retain, payload: payload)
    }

    // MARK: Cross-checks

    func checkRequests(_ fleets: [Fleet], _ paths: [String: JSONPath]) {
        for fleet in fleets {
            guard let fleetPath = paths[fleet.name] else { continue }
            for (index, request) in fleet.requests.enumerated() {
                let requestPath = fleetPath.appending("requests").appending(index: index)
                guard let target = fleets.first(where: { $0.name == request.targetFleet }) else {
                    var message = "no fleet named '\(request.targetFleet)'"
                    if let suggestion = closestMatch(to: request.targetFleet, among: fleets.map(\.name)) { message += "; did you mean '\(suggestion)'?" }
                    context.error(requestPath.appending("target_fleet"), message)
                    continue
                }
                guard let responder = target.responder else {
                    context.error(requestPath.appending("target_fleet"), "fleet '\(target.name)' has no \"respond\" section to answer requests")
                    continue
                }
                if fleet.protocolVersion != .v5, responder.replyTopic == nil {
                    context.error(requestPath, "an MQTT \(fleet.protocolVersion.scenarioName) requester has no Response Topic; give fleet '\(target.name)' a respond.reply_topic")
                }
            }
        }
    }

    func checkTransports(_ fleets: [Fleet], _ paths: [String: JSONPath], brokers: [BrokerEndpoint]) {
        guard !brokers.isEmpty else { return }
        for fleet in fleets {
            guard let wanted = fleet.transport, let fleetPath = paths[fleet.name] else { continue }
            if !brokers.contains(where: { $0.transport == wanted }) {
                context.error(fleetPath.appending("transport"), "no broker with a \(wanted.rawValue):// URL for this fleet; brokers are: \(brokers.map(\.url).joined(separator: ", "))")
            }
        }
    }

    // MARK: Stages

    func decodeStage(_ value: JSONValue, _ path: JSONPath, fleets: [Fleet], embedded: Bool) -> Stage? {
        let kinds = ["ramp_up", "steady", "soak", "tunnel", "churn", "restart"]
        guard case .object = value else {
            context.expected("a stage object with \"type\"", path, got: value)
            return nil
        }
        guard let type = value["type"] else {
            context.error(path, "missing required key 'type' (one of \(kinds.map { "\"\($0)\"" }.joined(separator: ", ")))")
            return nil
        }
        guard let kind = context.choice(type, path.appending("type"), kinds.map { ($0, $0) }) else { return nil }
        func fleetName(_ object: ObjectReader, required: Bool) -> Fleet? {
            let lookup: (JSONValue, JSONPath) -> Fleet? = { value, path in
                guard let name = context.nonEmptyString(value, path) else { return nil }
                if let fleet = fleets.first(where: { $0.name == name }) { return fleet }
                var message = "no fleet named '\(name)'"
                if let suggestion = closestMatch(to: name, among: fleets.map(\.name)) { message += "; did you mean '\(suggestion)'?" }
                context.error(path, message)
                return nil
            }
            return required ? object.required("fleet", "the fleet it applies to", lookup) : object.optional("fleet", lookup)
        }
        switch kind {
        case "ramp_up":
            guard let object = context.object(value, path, allowed: ["type", "fleet", "over", "rate"]) else { return nil }
            let fleet = fleetName(object, required: false)
            let over = object.optional("over") { context.duration($0, $1, allowZero: false) }
            let rate = object.optional("rate") { context.positiveNumber($0, $1, what: "connections per second greater than 0") }
            if object.has("over") == object.has("rate") {
                context.error(path, "a ramp_up takes exactly one of \"over\" (a duration) or \"rate\" (connections per second)")
                return nil
            }
            if object.has("fleet"), fleet == nil { return nil }
            let clients = fleet.map(\.count) ?? fleets.reduce(0) { $0 + $1.count }
            if let over { return Stage(kind: .rampUp(fleet: fleet?.name, rate: nil), duration: over) }
            guard let rate else { return nil }
            let seconds = (Double(clients) / rate).rounded(.up)
            return Stage(kind: .rampUp(fleet: fleet?.name, rate: rate), duration: TimeSpan(nanoseconds: UInt64(max(1, seconds) * 1e9)))
        case "steady", "soak":
            guard let object = context.object(value, path, allowed: ["type", "duration"]) else { return nil }
            guard let duration = object.required("duration", "how long it lasts", { context.duration($0, $1, allowZero: false) }) else { return nil }
            return Stage(kind: kind == "steady" ? .steady : .soak, duration: duration)
        case "tunnel":
            guard let object = context.object(value, path, allowed: ["type", "fleet", "fraction", "outage", "duration"]) else { return nil }
            let fleet = fleetName(object, required: true)
            let fraction = object.required("fraction", "the share of clients cut", context.fraction)
            let outage = object.required("outage", "how long each cut client stays down", decodeOutage)
            let duration = object.required("duration", "how long the stage lasts") { context.duration($0, $1, allowZero: false) }
            guard let fleet, let fraction, let outage, let duration else { return nil }
            if fleet.reconnect == .none {
                context.error(path.appending("fleet"), "fleet '\(fleet.name)' has reconnect \"none\", so cut clients would never come back; give it a reconnect policy")
            }
            return Stage(kind: .tunnel(fleet: fleet.name, fraction: fraction, outage: outage), duration: duration)
        case "churn":
            guard let object = context.object(value, path, allowed: ["type", "fleet", "rate", "duration"]) else { return nil }
            let fleet = fleetName(object, required: true)
            let rate = object.required("rate", "disconnects per second") { context.positiveNumber($0, $1) }
            let duration = object.required("duration", "how long the stage lasts") { context.duration($0, $1, allowZero: false) }
            guard let fleet, let rate, let duration else { return nil }
            return Stage(kind: .churn(fleet: fleet.name, rate: rate), duration: duration)
        default:
            guard let object = context.object(value, path, allowed: ["type", "downtime", "duration"]) else { return nil }
            if !embedded {
                context.error(path.appending("type"), "a broker restart needs the embedded broker; this scenario names brokers")
            }
            let downtime = object.optional("downtime") { context.duration($0, $1) } ?? .seconds(2)
            let duration = object.required("duration", "how long the stage lasts") { context.duration($0, $1, allowZero: false) }
            guard let duration else { return nil }
            if downtime > duration {
                context.error(path.appending("downtime"), "downtime (\(downtime)) must not exceed the stage duration (\(duration))")
            }
            return Stage(kind: .brokerRestart(downtime: downtime), duration: duration)
        }
    }

    /// `"5s"` (fixed) or `["2s", "10s"]` (uniform range).
    func decodeOutage(_ value: JSONValue, _ path: JSONPath) -> ClosedRange<TimeSpan>? {
        if case .string = value {
            return context.duration(value, path, allowZero: false).map { $0...$0 }
        }
        guard case .array(let bounds) = value, bounds.count == 2 else {
            context.expected("a duration or a range [\"2s\", \"10s\"]", path, got: value)
            return nil
        }
        let low = context.duration(bounds[0], path.appending(index: 0), allowZero: false)
        let high = context.duration(bounds[1], path.appending(index: 1), allowZero: false)
        guard let low, let high else { return nil }
        guard low <= high else {
            context.error(path, "the outage range must be [shortest, longest], got [\(low), \(high)]")
            return nil
        }
        return low...high
    }
}
