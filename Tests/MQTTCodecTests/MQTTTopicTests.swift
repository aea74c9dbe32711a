import Testing
@testable import MQTTCodec

@Suite("Topic names and filters")
struct MQTTTopicTests {
    @Test("topic name validation", arguments: [
        ("a/b", nil), ("/", nil), ("$SYS/x", nil), ("a b/é", nil),
        ("", MQTTTopicError.empty), ("a/+", .wildcardInName("+")), ("a/#", .wildcardInName("#")),
        ("a\u{0}b", .nullCharacter),
    ] as [(String, MQTTTopicError?)])
    func names(_ name: String, _ expected: MQTTTopicError?) {
        do {
            try MQTTTopic.validateName(name)
            #expect(expected == nil)
        } catch {
            #expect(error == expected)
        }
    }

    @Test("topic filter validation", arguments: [
        ("#", nil), ("+", nil), ("a/+/b", nil), ("a/#", nil), ("+/+", nil), ("/+", nil), ("$share/g/a/#", nil),
        ("", MQTTTopicError.empty), ("a#", .multiLevelWildcardMisplaced), ("a/#/b", .multiLevelWildcardMisplaced),
        ("a/b#", .multiLevelWildcardMisplaced), ("a+", .singleLevelWildcardNotWholeLevel),
        ("a/+b", .singleLevelWildcardNotWholeLevel), ("a\u{0}", .nullCharacter),
        ("$share//a", .invalidShareName), ("$share/g+/a", .invalidShareName), ("$share/g#/a", .invalidShareName),
        ("$share/g", .missingSharedFilter), ("$share/g/", .missingSharedFilter), ("$share/g/a+", .singleLevelWildcardNotWholeLevel),
    ] as [(String, MQTTTopicError?)])
    func filters(_ filter: String, _ expected: MQTTTopicError?) {
        do {
            _ = try MQTTTopicFilter(filter)
            #expect(expected == nil)
        } catch {
            #expect(error == expected)
            #expect(!error.message.isEmpty)
        }
    }

    @Test("matching", arguments: [
        ("a/b", "a/b", true), ("a/b", "a/c", false), ("a/+", "a/b", true), ("a/+", "a/b/c", false),
        ("a/+", "a", false), ("a/+", "a/", true), ("+/+", "/finance", true), ("+", "/finance", false),
        ("/+", "/finance", true), ("a/#", "a", true), ("a/#", "a/b/c", true), ("a/#", "ab", false),
        ("#", "a/b", true), ("#", "$SYS/x", false), ("+/x", "$SYS/x", false), ("$SYS/#", "$SYS/x", true),
        ("$SYS/+", "$SYS/x", true), ("a/+/c", "a/b/c", true), ("a/+/c", "a/b/d", false), ("a", "a/b", false),
        ("a/b/", "a/b", false), ("a//b", "a//b", true), ("+/+/+", "a/b", false), ("fleet/+/speed", "fleet/é/speed", true),
    ] as [(String, String, Bool)])
    func matching(_ filter: String, _ topic: String, _ expected: Bool) {
        #expect(MQTTTopic.matches(filter: filter, topic: topic) == expected)
    }

    @Test("shared subscriptions parse the group and match by the inner filter")
    func shared() throws {
        let filter = try MQTTTopicFilter("$share/workers/fleet/+/speed")
        #expect(filter.isShared && filter.shareGroup == "workers" && filter.filter == "fleet/+/speed")
        #expect(filter.matches("fleet/car1/speed"))
        #expect(!filter.matches("fleet/car1/rpm"))
        let plain = try MQTTTopicFilter("fleet/#")
        #expect(!plain.isShared && plain.shareGroup == nil && plain.matches("fleet/a/b"))
    }

    @Test("MQTTTopicName keeps the UTF-8 bytes and rejects wildcards")
    func topicName() throws {
        #expect(try MQTTTopicName("car/é").utf8 == [0x63, 0x61, 0x72, 0x2F, 0xC3, 0xA9])
        #expect(throws: MQTTTopicError.wildcardInName("+")) { try MQTTTopicName("car/+") }
    }
}
