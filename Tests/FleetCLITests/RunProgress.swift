import Foundation

/// What a running fleetbench has streamed to its results folder so far, for tests that act at a point of a run
/// (a Ctrl-C, a killed worker) given by what the run did rather than by a sleep. timeline.csv grows in the folder
/// as `timeline.csv.partial-<pid>` (renamed at the end), one row per second: t_s, connected, published, received,
/// end-to-end p50 and p99, ack timeouts.
enum RunProgress {
    /// The whole rows written so far in `folder` (the partial file while the run lasts, then timeline.csv).
    static func rows(in folder: String) -> [[Substring]] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        guard let name = names.first(where: { $0.hasPrefix("timeline.csv") }),
              let text = try? String(contentsOfFile: folder + "/" + name, encoding: .utf8) else { return [] }
        // A row is whole once its newline is written; the header is not a row.
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().dropFirst()
            .map { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .filter { $0.count == 7 && Int($0[1]) != nil }
    }

    /// Clients connected at the last second written (0 before the first).
    static func connected(in folder: String) -> Int {
        rows(in: folder).last.flatMap { Int($0[1]) } ?? 0
    }

    /// Messages published and received so far (the rows hold each second's own counts).
    static func published(in folder: String) -> Int {
        rows(in: folder).reduce(0) { $0 + (Int($1[2]) ?? 0) }
    }

    static func received(in folder: String) -> Int {
        rows(in: folder).reduce(0) { $0 + (Int($1[3]) ?? 0) }
    }
}
