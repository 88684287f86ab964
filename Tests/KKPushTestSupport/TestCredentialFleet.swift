public import Foundation

/// Several apps, keys and teams for one sender, made for a test: fresh P-256 `.p8` keys (openssl, in a temporary
/// folder) for three teams and five keys, scoped to environments and four topics, and the credentials file naming
/// them (`credentials.json` in the same folder).
///
/// | name | team | environments | topics |
/// |---|---|---|---|
/// | `a1` | `KKFLEETA01` | any | `nl.kantinekoning.app` |
/// | `a2` | `KKFLEETA01` | sandbox | `nl.kantinekoning.kassa` |
/// | `b1` | `KKFLEETB01` | any | `nl.voetbal.app` |
/// | `b2` | `KKFLEETB01` | sandbox | `nl.voetbal.app` |
/// | `c1` | `KKFLEETC01` | any | any |
public struct TestCredentialFleet: Sendable {
    public struct Key: Sendable {
        public var name: String
        public var teamID: String
        public var keyID: String
        /// The `.p8` path.
        public var path: String
        /// `sandbox`, `production`; empty: both.
        public var environments: [String]
        /// Bundle ids; empty: any.
        public var topics: [String]
        /// The `.p8`'s PEM text.
        public var pem: String {
            get throws { try String(contentsOfFile: path, encoding: .utf8) }
        }
    }

    /// The four topics the keys serve.
    public static let topics = ["nl.kantinekoning.app", "nl.kantinekoning.kassa", "nl.voetbal.app", "nl.hockey.app"]

    /// The folder holding the keys and the credentials file (the caller removes it).
    public let directory: URL
    public let keys: [Key]
    /// `credentials.json`.
    public var credentialsPath: String { directory.appendingPathComponent("credentials.json").path }
    /// `keys.json`: the same keys as a mock key registry (`Certificates/keys.json`'s form, with `topics`).
    public var registryPath: String { directory.appendingPathComponent("keys.json").path }

    /// The distinct teams.
    public var teams: [String] { Array(Set(keys.map(\.teamID))).sorted() }

    public func key(_ name: String) -> Key { keys.first { $0.name == name }! }

    /// Makes the keys and the file (openssl on `PATH`).
    public static func make() async throws -> TestCredentialFleet {
        let directory = try makeTemporaryDirectory(prefix: "kkpush-fleet")
        let specs: [(String, String, String, [String], [String])] = [
            ("a1", "KKFLEETA01", "FLTKEYA001", [], ["nl.kantinekoning.app"]),
            ("a2", "KKFLEETA01", "FLTKEYA002", ["sandbox"], ["nl.kantinekoning.kassa"]),
            ("b1", "KKFLEETB01", "FLTKEYB001", [], ["nl.voetbal.app"]),
            ("b2", "KKFLEETB01", "FLTKEYB002", ["sandbox"], ["nl.voetbal.app"]),
            ("c1", "KKFLEETC01", "FLTKEYC001", [], []),
        ]
        var keys: [Key] = []
        var entries: [[String: Any]] = []
        var registry: [[String: Any]] = []
        for (name, team, keyID, environments, topics) in specs {
            let file = "AuthKey_\(keyID).p8"
            let path = directory.appendingPathComponent(file).path
            let generated = try await runProcess(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path],
                timeout: 30)
            guard generated.status == 0, FileManager.default.fileExists(atPath: path) else {
                throw FleetError(
                    message:
                        "openssl genpkey failed (\(generated.status)): \(String(decoding: generated.stderr, as: UTF8.self))"
                )
            }
            keys.append(
                Key(name: name, teamID: team, keyID: keyID, path: path, environments: environments, topics: topics))
            entries.append([
                "name": name, "team_id": team, "key_id": keyID, "key_file": file, "environments": environments,
                "topics": topics,
            ])
            registry.append([
                "key_id": keyID, "team_id": team, "file": file, "environments": environments, "topics": topics,
            ])
        }
        try JSONSerialization.data(withJSONObject: registry).write(to: directory.appendingPathComponent("keys.json"))
        let data = try JSONSerialization.data(
            withJSONObject: ["credentials": entries], options: [.prettyPrinted, .sortedKeys])
        try data.write(to: directory.appendingPathComponent("credentials.json"))
        return TestCredentialFleet(directory: directory, keys: keys)
    }

    public func remove() { try? FileManager.default.removeItem(at: directory) }

    struct FleetError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
