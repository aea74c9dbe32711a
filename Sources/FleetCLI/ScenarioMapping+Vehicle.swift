import FleetEngine
import FleetScenario
import FleetTransport
import MQTTSession

/// The fleet keys of vehicle fleets (issue 15): `vehicle`, `identities` and a publish stream's `offline`.
extension ScenarioMapping {
    static func offlineBuffer(_ offline: OfflineBuffering?) -> OfflineBuffer? {
        guard let offline else { return nil }
        return OfflineBuffer(capacity: offline.buffer, overflow: offline.overflow == .dropNewest ? .dropNewest : .dropOldest)
    }

    /// The vehicle model (seeded by the run's seed; vehicle k is the client of global index k) and the client ids
    /// and credentials of an identities file (row k for client k of the fleet).
    static func applyVehicleAndIdentities(_ fleet: Fleet, to engineFleet: inout EngineFleet, seed: UInt64) throws {
        if let vehicle = fleet.vehicle {
            do {
                engineFleet.vehicle = try vehicle.model(seed: seed)
            } catch {
                throw UnsupportedFeature(description: "fleet \(fleet.name): vehicle: \(error)")
            }
        }
        guard let identities = fleet.identities else { return }
        let records = identities.records
        engineFleet.clientID = { index in records[index].clientID }
        let base = engineFleet.sessionSettings
        let shared = engineFleet.session
        engineFleet.sessionSettings = { index, clientID in
            let settings = base?(index, clientID) ?? shared
            // An empty field sends no user name / password; a fleet's `credentials` stay for rows without them.
            return credentials(settings, username: records[index].username ?? settings.username,
                               password: records[index].password.map { Array($0.utf8) } ?? settings.password)
        }
    }

    /// `settings` with another user name and password (the settings are immutable, shared objects).
    static func credentials(_ settings: MQTTSessionSettings, username: String?, password: [UInt8]?) -> MQTTSessionSettings {
        MQTTSessionSettings(
            version: settings.version, cleanStart: settings.cleanStart, keepAliveSeconds: settings.keepAliveSeconds,
            sessionExpiryInterval: settings.sessionExpiryInterval, username: username, password: password,
            will: settings.will, receiveMaximum: settings.receiveMaximum, maximumPacketSize: settings.maximumPacketSize,
            topicAliasMaximum: settings.topicAliasMaximum, connectProperties: settings.connectProperties,
            inFlightWindow: settings.inFlightWindow, usesOutgoingTopicAliases: settings.usesOutgoingTopicAliases,
            resubscribesWhenSessionLost: settings.resubscribesWhenSessionLost,
            keepsPublishesForRetransmission: settings.keepsPublishesForRetransmission,
            timeouts: settings.timeouts, onAckTimeout: settings.onAckTimeout)
    }
}

extension ScenarioMapping {
    /// `tls.mint`: one EC P-256 certificate per client, its common name the client id, signed by the test CA.
    /// Minted per TLS broker of the fleet (one broker is the usual case: 10,000 take about a second).
    static func mintedIdentities(_ fleet: Fleet, _ mint: CertificateMinting) throws -> [TLSClientIdentity] {
        let minter: TLSCertificateMinter
        do {
            minter = try TLSCertificateMinter(caCertificateFile: mint.caCertificate, caKeyFile: mint.caKey)
        } catch {
            throw UnsupportedFeature(description: "fleet \(fleet.name): tls.mint: \(error)")
        }
        let names = (0..<fleet.count).map { index in
            fleet.identities?.records[index].clientID ?? fleet.clientID.render(index: index, fleet: fleet.name)
        }
        do {
            return try minter.mint(commonNames: names)
        } catch {
            throw UnsupportedFeature(description: "fleet \(fleet.name): tls.mint: \(error)")
        }
    }
}
