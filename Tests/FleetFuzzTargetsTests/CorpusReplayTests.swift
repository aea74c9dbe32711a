import FleetFuzzTargets
import Foundation
import Testing

/// The seed corpora and every crash ever found (FuzzTesting/Corpus/<target>/), run through the fuzz targets as
/// ordinary tests: fast enough for CI, and a regression test for each crash input kept there.
@Suite struct CorpusReplayTests {
    static let corpusRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("FuzzTesting/Corpus")

    static func inputs(of target: FuzzTarget) throws -> [URL] {
        let folder = corpusRoot.appendingPathComponent(target.rawValue)
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test(arguments: FuzzTarget.allCases)
    func replaysEveryCorpusInput(_ target: FuzzTarget) throws {
        let inputs = try Self.inputs(of: target)
        #expect(inputs.count >= 3, "the \(target.rawValue) corpus holds \(inputs.count) inputs")
        for input in inputs {
            target.run(Array(try Data(contentsOf: input)))
        }
    }

    @Test func everyTargetHasACorpusFolderAndNoFolderLacksATarget() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.corpusRoot.path).sorted()
        #expect(folders == FuzzTarget.allCases.map(\.rawValue).sorted())
    }
}
