import FleetMetrics
import Foundation
import Testing

/// scenarios/README.md's metric table against the metric catalog: a threshold path the table names must be one
/// validate accepts, and every delivery metric a threshold may name must be in the table.
@Suite("The metric table of scenarios/README.md")
struct MetricTableDocTests {
    /// The table row whose first column is `` `name` ``: its third column.
    static func fields(ofRow name: String) throws -> String {
        let text = try String(contentsOfFile: scenariosFolder + "/README.md", encoding: .utf8)
        let prefix = "| `\(name)` |"
        let row = try #require(text.split(separator: "\n").first { $0.hasPrefix(prefix) }, "no row \(name)")
        let columns = row.split(separator: "|", omittingEmptySubsequences: false)
        return String(try #require(columns.count >= 5 ? columns[3] : nil))
    }

    /// The field names a row lists: backquoted words outside parentheses, up to the first `;` outside them.
    static func fieldNames(_ column: String) -> [String] {
        var outside = ""
        var depth = 0
        for character in column {
            if character == "(" { depth += 1 } else if character == ")" { depth = max(depth - 1, 0) } else if depth == 0 {
                if character == ";" { break }
                outside.append(character)
            }
        }
        return outside.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    @Test("the delivery rows name exactly the delivery metrics thresholds accept")
    func deliveryRows() throws {
        let perQoS = Self.fieldNames(try Self.fields(ofRow: "delivery.qos<0-2>.<field>"))
        let overall = Self.fieldNames(try Self.fields(ofRow: "delivery.<field>"))
        #expect(perQoS == ["lost", "duplicated", "reordered", "received", "expected", "unique", "unexpected",
                           "missed_while_offline", "untracked", "rejected", "loss_ratio"])
        #expect(overall == ["foreign", "retained_on_subscribe", "missed_while_offline", "untracked"])
        let documented = Set((0...2).flatMap { qos in perQoS.map { "delivery.qos\(qos).\($0)" } }
            + overall.map { "delivery.\($0)" })
        let catalog = Set(MetricCatalog.all.filter { $0.threshold && $0.path.hasPrefix("delivery.") }.map(\.path))
        #expect(documented.subtracting(catalog) == [], "documented but refused as unknown")
        #expect(catalog.subtracting(documented) == [], "accepted but not documented")
    }

    @Test("the messages and rates rows name exactly the catalog's: received (this run's) and arrived (every PUBLISH)")
    func messagesAndRatesRows() throws {
        #expect(Self.fieldNames(try Self.fields(ofRow: "messages.qos<0-2>.<field>"))
                == ["published", "received", "arrived"])
        let rates = Self.fieldNames(try Self.fields(ofRow: "rates.<field>"))
        #expect(rates == ["published", "received", "arrived"])
        let catalog = Set(MetricCatalog.all.filter { $0.path.hasPrefix("rates.") }.map(\.path))
        #expect(Set(rates.map { "rates.\($0)" }) == catalog)
        for field in ["published", "received", "arrived"] {
            #expect((0...2).allSatisfy { MetricCatalog.metric("messages.qos\($0).\(field)")?.threshold == true }, "\(field)")
        }
    }

    @Test("the end-of-run counters are threshold metrics the table names")
    func endOfRunRows() throws {
        let messages = try Self.fields(ofRow: "messages.qos<0-2>.<field>")
        let generator = try Self.fields(ofRow: "generator.<field>")
        #expect(messages.contains("`unacked_at_end`"))
        #expect(generator.contains("`unsent_at_end`"))
        for path in ["messages.qos1.unacked_at_end", "messages.qos2.unacked_at_end", "generator.unsent_at_end"] {
            #expect(MetricCatalog.metric(path)?.threshold == true, "\(path)")
        }
    }
}
