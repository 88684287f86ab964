import Foundation
import KKPushCore

extension MockKey {
    /// Reads a key registry such as `Certificates/keys.json`: `[{"key_id", "team_id", "file" or
    /// "pem", "environments"}]`, file names relative to the registry's folder.
    public static func loadRegistry(at path: String) throws -> [MockKey] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw KKPushError(
                code: "mock-keys-unreadable", message: "Cannot read the key registry \(path).",
                fix: "Check the path; it is a JSON array like Certificates/keys.json.", underlying: "\(error)")
        }
        let entries: [KeyFileEntry]
        do {
            entries = try JSONDecoder().decode([KeyFileEntry].self, from: data)
        } catch {
            throw KKPushError(
                code: "mock-keys-json", message: "The key registry \(path) is not a list of keys.",
                fix: "Write it as [{\"key_id\": ..., \"team_id\": ..., \"file\": \"AuthKey_X.p8\", \"environments\": [\"sandbox\"]}].",
                underlying: "\(error)")
        }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        return try entries.map { try $0.resolve(relativeTo: base) }
    }
}

/// One key in a registry or config file.
struct KeyFileEntry: Decodable {
    var key_id: String
    var team_id: String
    var file: String?
    var pem: String?
    var environments: [String]?

    func resolve(relativeTo base: URL) throws -> MockKey {
        var envs: Set<APNsEnvironment> = []
        for e in environments ?? [] {
            guard let env = APNsEnvironment(lenient: e) else {
                throw KKPushError(
                    code: "mock-key-environment", message: "Key \(key_id): environment '\(e)' is unknown.",
                    fix: "Use sandbox or production.")
            }
            envs.insert(env)
        }
        let text: String
        if let pem {
            text = pem
        } else if let file {
            let url = file.hasPrefix("/") ? URL(fileURLWithPath: file) : base.appendingPathComponent(file)
            do {
                text = try String(contentsOf: url, encoding: .utf8)
            } catch {
                throw KKPushError(
                    code: "mock-key-file", message: "Key \(key_id): cannot read \(url.path).",
                    fix: "Check the file name (relative to the registry's folder).", underlying: "\(error)")
            }
        } else {
            throw KKPushError(
                code: "mock-key-missing", message: "Key \(key_id) has neither 'file' nor 'pem'.",
                fix: "Give the .p8 file name or the PEM text.")
        }
        return MockKey(teamID: team_id, keyID: key_id, pem: text, environments: envs)
    }
}

/// The `--config` JSON file of `kkpush mock serve`; every field optional.
struct MockConfigFile: Decodable {
    var sandbox_port: Int?
    var production_port: Int?
    var admin_port: Int?
    var strict: Bool?
    var max_concurrent_streams: Int?
    var one_stream_until_auth: Bool?
    var idle_timeout_s: Double?
    var goaway_grace_s: Double?
    var reset_limit: Int?
    var reset_window_s: Double?
    var first_request_timeout_s: Double?
    var body_timeout_s: Double?
    var max_connections: Int?
    var admin_host: String?
    var delivery_log_capacity: Int?
    var certificates_directory: String?
    var keys: [KeyFileEntry]?
    var devices: [MockDeviceRegistration]?
    var faults: [MockFault]?
}

extension MockServerConfiguration {
    /// Applies a JSON config file: `{"sandbox_port", "production_port", "admin_port", "strict",
    /// "max_concurrent_streams", "one_stream_until_auth", "idle_timeout_s", "goaway_grace_s",
    /// "reset_limit", "reset_window_s", "first_request_timeout_s", "body_timeout_s", "max_connections",
    /// "admin_host", "delivery_log_capacity",
    /// "certificates_directory", "keys": [...as keys.json], "devices": [{"token", "environment",
    /// "topic", "unregistered_at_ms"}], "faults": [...as POST /faults]}`.
    public mutating func apply(configFile path: String) throws {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw KKPushError(
                code: "mock-config-unreadable", message: "Cannot read the config file \(path).",
                fix: "Check the path.", underlying: "\(error)")
        }
        let file: MockConfigFile
        do {
            file = try JSONDecoder().decode(MockConfigFile.self, from: data)
        } catch {
            throw KKPushError(
                code: "mock-config-json", message: "The config file \(path) is not valid: \(Self.describe(error)).",
                fix: "Fix the field named; see `kkpush mock serve --help` for the format.", underlying: "\(error)")
        }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        if let v = file.sandbox_port { sandboxPort = v }
        if let v = file.production_port { productionPort = v }
        if let v = file.admin_port { adminPort = v }
        if let v = file.strict { strictDeviceTokens = v }
        if let v = file.max_concurrent_streams { maxConcurrentStreams = v }
        if let v = file.one_stream_until_auth { oneStreamUntilAuthenticated = v }
        if let v = file.idle_timeout_s { idleTimeout = v }
        if let v = file.goaway_grace_s { goAwayGracePeriod = v }
        if let v = file.reset_limit { streamResetLimit = v }
        if let v = file.reset_window_s { streamResetWindow = v }
        if let v = file.first_request_timeout_s { firstRequestTimeout = v }
        if let v = file.body_timeout_s { streamBodyTimeout = v }
        if let v = file.max_connections { maxConnections = v }
        if let v = file.admin_host { adminHost = v }
        if let v = file.delivery_log_capacity { deliveryLogCapacity = v }
        if let v = file.certificates_directory {
            certificatesDirectory = v.hasPrefix("/") ? v : base.appendingPathComponent(v).path
        }
        keys += try (file.keys ?? []).map { try $0.resolve(relativeTo: base) }
        devices += file.devices ?? []
        faults += file.faults ?? []
    }

    static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, let ctx):
            return "missing '\(key.stringValue)' at \(path(ctx))"
        case .typeMismatch(_, let ctx), .valueNotFound(_, let ctx), .dataCorrupted(let ctx):
            return "\(ctx.debugDescription) at \(path(ctx))"
        default:
            return "\(error)"
        }
    }

    private static func path(_ ctx: DecodingError.Context) -> String {
        let p = ctx.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        return p.isEmpty ? "the top level" : p
    }
}
