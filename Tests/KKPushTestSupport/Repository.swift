public import Foundation

/// The repository the tests run in, found from this file's path (`Tests/KKPushTestSupport/`), so
/// every test target finds the committed fixtures the same way, whatever the working directory.
public enum Repository {
    /// The repository root.
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `Certificates/`: the committed test keys, certificates and `keys.json`.
    public static let certificates: URL = root.appendingPathComponent("Certificates")

    /// The path of `name` in `Certificates/`.
    public static func certificate(_ name: String) -> String {
        certificates.appendingPathComponent(name).path
    }

    /// The URL of `relativePath` under the repository root (`"Tests/KKPushCoreTests/.fixtures/cta.json"`).
    public static func file(_ relativePath: String) -> URL { root.appendingPathComponent(relativePath) }

    /// The bytes of `relativePath` under the repository root.
    public static func bytes(_ relativePath: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: file(relativePath)))
    }

    /// The `kkpush` binary SwiftPM built in `.build/<configuration>/` (the first of `configurations`
    /// that has one), or nil.
    public static func builtKKPush(configurations: [String] = ["debug", "release"]) -> String? {
        for configuration in configurations {
            let path = root.appendingPathComponent(".build/\(configuration)/kkpush").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}
