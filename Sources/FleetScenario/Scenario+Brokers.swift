import FleetJSON

extension Scenario {
    /// The scenario with its brokers replaced by `--broker URL[,URL...]` (TLS and WebSocket options at their
    /// defaults). Checks what depends on the brokers again: a `restart` stage needs the embedded broker, and a
    /// fleet's `transport` needs a broker of that kind. Problems are located at `--broker URL` or at the scenario's
    /// stage/fleet path with location `--broker`.
    public func replacingBrokers(with urls: [String]) -> Result<Scenario, ScenarioError> {
        let placeholder: JSONDocument
        do {
            placeholder = try JSONDocument.parse(text: "null", file: "--broker")
        } catch {
            return .failure(ScenarioError(diagnostics: []))
        }
        let context = DecodingContext(document: placeholder, overriddenPaths: [], environment: [:])
        let decoder = ScenarioDecoder(context: context)
        var endpoints: [BrokerEndpoint] = []
        for (index, url) in urls.enumerated() {
            context.fixedLocation = "--broker \(ScenarioDecoder.redactedBrokerURL(url))"
            guard var endpoint = decoder.parseBrokerURL(url, JSONPath.root.appending("brokers").appending(index: index)) else { continue }
            if endpoint.transport.usesTLS { endpoint.tls = TLSOptions() }
            endpoints.append(endpoint)
        }
        context.fixedLocation = "--broker " + urls.map(ScenarioDecoder.redactedBrokerURL).joined(separator: ",")
        if !urls.isEmpty {
            for (index, stage) in stages.enumerated() {
                if case .brokerRestart = stage.kind {
                    context.error(JSONPath.root.appending("stages").appending(index: index).appending("type"),
                                  "a broker restart needs the embedded broker; drop --broker to use it")
                }
            }
            for (index, fleet) in fleets.enumerated() {
                if let wanted = fleet.transport, !endpoints.contains(where: { $0.transport == wanted }), !endpoints.isEmpty {
                    context.error(JSONPath.root.appending("fleets").appending(index: index).appending("transport"),
                                  "no broker with a \(wanted.rawValue):// URL for this fleet; brokers are: \(endpoints.map(\.url).joined(separator: ", "))")
                }
            }
        }
        if context.hasErrors { return .failure(ScenarioError(diagnostics: context.diagnostics)) }
        var copy = self
        copy.brokers = endpoints
        return .success(copy)
    }
}
