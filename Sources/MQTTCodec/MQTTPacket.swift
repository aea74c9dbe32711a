/// Any MQTT control packet, in its general (allocating) form.
public enum MQTTPacket: Sendable, Hashable {
    case connect(MQTTConnect)
    case connAck(MQTTConnAck)
    case publish(MQTTPublish)
    case pubAck(MQTTPubAck)
    case pubRec(MQTTPubRec)
    case pubRel(MQTTPubRel)
    case pubComp(MQTTPubComp)
    case subscribe(MQTTSubscribe)
    case subAck(MQTTSubAck)
    case unsubscribe(MQTTUnsubscribe)
    case unsubAck(MQTTUnsubAck)
    case pingReq
    case pingResp
    case disconnect(MQTTDisconnect)
    case auth(MQTTAuth)

    public var type: MQTTPacketType {
        switch self {
        case .connect: return .connect
        case .connAck: return .connAck
        case .publish: return .publish
        case .pubAck: return .pubAck
        case .pubRec: return .pubRec
        case .pubRel: return .pubRel
        case .pubComp: return .pubComp
        case .subscribe: return .subscribe
        case .subAck: return .subAck
        case .unsubscribe: return .unsubscribe
        case .unsubAck: return .unsubAck
        case .pingReq: return .pingReq
        case .pingResp: return .pingResp
        case .disconnect: return .disconnect
        case .auth: return .auth
        }
    }
}
