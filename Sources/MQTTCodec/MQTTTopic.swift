/// Why a topic name or filter is invalid (5.0 §4.7, 3.1.1 §4.7).
public enum MQTTTopicError: Error, Sendable, Hashable, CustomStringConvertible {
    case empty
    case tooLong(byteCount: Int)
    case nullCharacter
    /// A topic name (not a filter) contains '+' or '#'.
    case wildcardInName(Character)
    /// '#' is not the last character, or not a whole level.
    case multiLevelWildcardMisplaced
    /// '+' shares its level with other characters.
    case singleLevelWildcardNotWholeLevel
    /// `$share/` with an empty group name or one containing '+' or '#'.
    case invalidShareName
    /// `$share/group` with no filter after the group.
    case missingSharedFilter

    public var message: String {
        switch self {
        case .empty: return "topic is empty"
        case .tooLong(let count): return "topic is \(count) bytes, more than 65535"
        case .nullCharacter: return "topic contains U+0000"
        case .wildcardInName(let wildcard): return "topic name contains wildcard '\(wildcard)'"
        case .multiLevelWildcardMisplaced: return "'#' must be the last character and a whole level"
        case .singleLevelWildcardNotWholeLevel: return "'+' must be a whole level"
        case .invalidShareName: return "shared subscription group name must be non-empty without '+', '#' or '/'"
        case .missingSharedFilter: return "shared subscription has no topic filter after the group name"
        }
    }

    public var description: String { message }
}

/// Topic name and filter rules (5.0 §4.7).
public enum MQTTTopic {
    static let slash = UInt8(ascii: "/")
    static let plus = UInt8(ascii: "+")
    static let hash = UInt8(ascii: "#")
    static let dollar = UInt8(ascii: "$")

    /// Checks a topic name as PUBLISH carries it: non-empty, at most 65535 bytes, no U+0000, no wildcard.
    public static func validateName(_ name: String) throws(MQTTTopicError) {
        let utf8 = name.utf8
        if utf8.isEmpty { throw .empty }
        if utf8.count > 65535 { throw .tooLong(byteCount: utf8.count) }
        for byte in utf8 {
            if byte == 0 { throw .nullCharacter }
            if byte == plus { throw .wildcardInName("+") }
            if byte == hash { throw .wildcardInName("#") }
        }
    }

    /// Checks a topic filter (without `$share/` handling): wildcards occupy whole levels, '#' only last.
    public static func validateFilter(_ filter: String) throws(MQTTTopicError) {
        let bytes = Array(filter.utf8)
        if bytes.isEmpty { throw .empty }
        if bytes.count > 65535 { throw .tooLong(byteCount: bytes.count) }
        for (index, byte) in bytes.enumerated() {
            let levelStart = index == 0 || bytes[index - 1] == slash
            let levelEnd = index == bytes.count - 1 || bytes[index + 1] == slash
            switch byte {
            case 0: throw .nullCharacter
            case hash where !(levelStart && index == bytes.count - 1): throw .multiLevelWildcardMisplaced
            case plus where !(levelStart && levelEnd): throw .singleLevelWildcardNotWholeLevel
            default: break
            }
        }
    }

    /// Whether `filter` (a plain filter, not `$share/...`) matches `topic` (5.0 §4.7.1-2). A topic starting
    /// with '$' is not matched by a filter starting with a wildcard (5.0 §4.7.2).
    public static func matches(filter: String, topic: String) -> Bool {
        var filterCopy = filter
        var topicCopy = topic
        return filterCopy.withUTF8 { f in topicCopy.withUTF8 { t in matches(filter: f, topic: t) } }
    }

    /// Byte-level matcher for already-validated filters and names (no allocation).
    public static func matches(filter f: UnsafeBufferPointer<UInt8>, topic t: UnsafeBufferPointer<UInt8>) -> Bool {
        if t.first == dollar, let first = f.first, first == plus || first == hash { return false }
        var fi = 0
        var ti = 0
        while true {
            if fi < f.count, f[fi] == hash { return true }  // '#' also matches the parent level itself
            var fEnd = fi
            while fEnd < f.count, f[fEnd] != slash { fEnd += 1 }
            var tEnd = ti
            while tEnd < t.count, t[tEnd] != slash { tEnd += 1 }
            let isPlus = fEnd - fi == 1 && f[fi] == plus
            if !isPlus {
                if fEnd - fi != tEnd - ti { return false }
                var k = 0
                while k < fEnd - fi {
                    if f[fi + k] != t[ti + k] { return false }
                    k += 1
                }
            }
            let filterDone = fEnd == f.count
            let topicDone = tEnd == t.count
            if filterDone && topicDone { return true }
            if topicDone {
                // "a/#" matches "a": the only filter rest that matches nothing is exactly "/#".
                return f.count - fEnd == 2 && f[fEnd + 1] == hash
            }
            if filterDone { return false }
            fi = fEnd + 1
            ti = tEnd + 1
        }
    }
}

/// A topic filter as SUBSCRIBE carries it, with `$share/{group}/{filter}` parsed (5.0 §4.8.2).
public struct MQTTTopicFilter: Sendable, Hashable {
    /// The filter as written, `$share/...` included.
    public let text: String
    /// The share group of a shared subscription, nil otherwise.
    public let shareGroup: String?
    /// The filter topics are matched against (after `$share/group/`).
    public let filter: String

    public init(_ text: String) throws(MQTTTopicError) {
        self.text = text
        let prefix = "$share/"
        if text.hasPrefix(prefix) {
            let rest = text.utf8.dropFirst(prefix.utf8.count)
            guard let slashIndex = rest.firstIndex(of: MQTTTopic.slash) else {
                if rest.isEmpty || rest.contains(MQTTTopic.plus) || rest.contains(MQTTTopic.hash) {
                    throw .invalidShareName
                }
                throw .missingSharedFilter
            }
            let group = rest[rest.startIndex..<slashIndex]
            if group.isEmpty || group.contains(MQTTTopic.plus) || group.contains(MQTTTopic.hash) {
                throw .invalidShareName
            }
            let inner = rest[rest.index(after: slashIndex)...]
            if inner.isEmpty { throw .missingSharedFilter }
            shareGroup = String(decoding: group, as: UTF8.self)
            filter = String(decoding: inner, as: UTF8.self)
        } else {
            shareGroup = nil
            filter = text
        }
        try MQTTTopic.validateFilter(filter)
        if text.utf8.count > 65535 { throw .tooLong(byteCount: text.utf8.count) }
    }

    public var isShared: Bool { shareGroup != nil }

    public func matches(_ topicName: String) -> Bool { MQTTTopic.matches(filter: filter, topic: topicName) }
}

/// A validated topic name holding its UTF-8 bytes, built once and reused by `MQTTByteBuffer.writePublish`
/// so the hot path neither validates nor transcodes.
///
/// Only the bytes are stored (every client keeps its own topics: a second copy as a `String` cost each of them a
/// heap block per topic); `name` is made from them when asked, which nothing on the per-message path does.
public struct MQTTTopicName: Sendable, Hashable {
    /// UTF-8 bytes of `name`, without the length prefix.
    public let utf8: [UInt8]
    public var name: String { String(decoding: utf8, as: UTF8.self) }

    public init(_ name: String) throws(MQTTTopicError) {
        try MQTTTopic.validateName(name)
        self.utf8 = Array(name.utf8)
    }
}
