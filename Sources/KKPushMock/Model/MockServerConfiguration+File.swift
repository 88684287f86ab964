import Foundation
import KKPushCore
import KKPushSystem

extension MockKey {
    /// Reads a key registry such as `Certificates/keys.json`: `[{"key_id", "team_id", "file" or
    /// "pem", "environments", "topics"}]`, file names relative to the registry's folder.
    public static func loadRegistry(at path: String) throws -> [MockKey] {
        let bytes = try InputFile.read(path, what: "key registry", maximumSize: 16 << 20)
        let entries = try JSONInput.decodeStrict(
            [KeyFileEntry].self, from: bytes, shape: .array(KeyFileEntry.shape),
            what: "The key registry \(path)", codePrefix: "mock-keys",
            format:
                "a JSON array like Certificates/keys.json: [{\"key_id\", \"team_id\", \"file\" or \"pem\", \"environments\", \"topics\"}]"
        )
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        return try entries.map { try $0.resolve(relativeTo: base) }
    }
}

/// One key in a registry or config file.
struct KeyFileEntry: Decodable {
    /// The keys an entry may have.
    static let shape = JSONInput.Shape.fields(["key_id", "team_id", "file", "pem", "environments", "topics"])
    var key_id: String
    var team_id: String
    var file: String?
    var pem: String?
    var environments: [String]?
    /// The bundle ids a topic-specific key may serve; missing or empty: any.
    var topics: [String]?

    func resolve(relativeTo base: URL) throws -> MockKey {
        var envs: Set<APNsEnvironment> = []
        for e in environments ?? [] {
            guard let env = APNsEnvironment(lenient: e) else {
                throw KKPushError(
                    code: .mockKeyEnvironmentInvalid,
                    message: "Key \(key_id): `environments` holds '\(e)', which is neither sandbox nor production.",
                    fix: "Use sandbox and/or production, e.g. \"environments\": [\"sandbox\"] (leave it out for both).")
            }
            envs.insert(env)
        }
        let text: String
        if let pem {
            text = pem
        } else if let file {
            let url = file.hasPrefix("/") ? URL(fileURLWithPath: file) : base.appendingPathComponent(file)
            text = try InputFile.readText(url.path, what: "key file of key \(key_id)", maximumSize: 1 << 20)
        } else {
            throw KKPushError(
                code: .mockKeyMissing, message: "Key \(key_id) has neither `file` nor `pem`.",
                fix: "Give the .p8 file name or the PEM text.")
        }
        for topic in topics ?? [] where topic.trimmingWhitespace().isEmpty || topic.contains(" ") {
            throw KKPushError(
                code: .mockKeyEnvironmentInvalid,
                message: "Key \(key_id): `topics` holds '\(topic)', which is not a bundle id.",
                fix: "List bundle ids, e.g. \"topics\": [\"com.example.app\"] (leave it out for any topic).")
        }
        return MockKey(teamID: team_id, keyID: key_id, pem: text, environments: envs, topics: Set(topics ?? []))
    }
}

/// The `--config` JSON file of `kkpush mock serve`; every field optional.
struct MockConfigFile: Decodable {
    /// The keys the file may have, at every level.
    static let shape = JSONInput.Shape.object([
        "sandbox_port": .any, "production_port": .any, "admin_port": .any, "strict": .any,
        "sandbox_channel_port": .any, "production_channel_port": .any, "max_channels_per_app": .any,
        "max_concurrent_streams": .any, "one_stream_until_auth": .any, "idle_timeout_s": .any,
        "goaway_grace_s": .any, "reset_limit": .any, "reset_window_s": .any, "first_request_timeout_s": .any,
        "body_timeout_s": .any, "max_connections": .any, "admin_host": .any, "delivery_log_capacity": .any,
        "rejection_log_capacity": .any, "device_rules": MockDeviceRules.shape,
        "certificates_directory": .any, "keys": .array(KeyFileEntry.shape),
        "devices": .array(MockDeviceRegistration.shape), "faults": .array(MockFault.shape),
    ])
    var sandbox_port: Int?
    var production_port: Int?
    var sandbox_channel_port: Int?
    var production_channel_port: Int?
    var max_channels_per_app: Int?
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
    var rejection_log_capacity: Int?
    var device_rules: MockDeviceRules?
    var certificates_directory: String?
    var keys: [KeyFileEntry]?
    var devices: [MockDeviceRegistration]?
    var faults: [MockFault]?
}

extension MockServerConfiguration {
    /// Applies a JSON config file: `{"sandbox_port", "production_port", "admin_port", "strict",
    /// "sandbox_channel_port", "production_channel_port", "max_channels_per_app",
    /// "max_concurrent_streams", "one_stream_until_auth", "idle_timeout_s", "goaway_grace_s",
    /// "reset_limit", "reset_window_s", "first_request_timeout_s", "body_timeout_s", "max_connections",
    /// "admin_host", "delivery_log_capacity", "rejection_log_capacity", "device_rules": {"storage_limit_s",
    /// "background_budget", "background_budget_window_s", "low_priority_hold_s"},
    /// "certificates_directory", "keys": [...as keys.json], "devices": [{"token", "environment",
    /// "topic", "unregistered_at_ms"}], "faults": [...as POST /faults]}`.
    public mutating func apply(configFile path: String) throws {
        let bytes = try InputFile.read(path, what: "mock config file", maximumSize: 16 << 20)
        try apply(configBytes: bytes, path: path)
    }

    /// Applies a config file's bytes, as ``apply(configFile:)`` does once it has read them: `path` names the file
    /// in messages, and its folder is where relative paths in it (`certificates_directory`, key files) start.
    public mutating func apply(configBytes bytes: [UInt8], path: String) throws {
        let file = try JSONInput.decodeStrict(
            MockConfigFile.self, from: bytes, shape: MockConfigFile.shape, what: "The config file \(path)",
            codePrefix: "mock-config",
            format:
                "a JSON object with MockServerConfiguration's keys; the serve command's help lists them (mockServeCommand)"
        )
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        if let v = file.sandbox_port { sandboxPort = v }
        if let v = file.production_port { productionPort = v }
        if let v = file.sandbox_channel_port { sandboxChannelPort = v }
        if let v = file.production_channel_port { productionChannelPort = v }
        if let v = file.max_channels_per_app { maxChannelsPerApp = v }
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
        if let v = file.rejection_log_capacity { rejectionLogCapacity = v }
        if let v = file.device_rules { deviceRules = v }
        if let v = file.certificates_directory {
            let folder = v.hasPrefix("/") ? v : base.appendingPathComponent(v).path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw KKPushError(
                    code: .mockConfigInvalid,
                    message: "The config file \(path): `certificates_directory` \(folder) is not a folder.",
                    fix:
                        "Give the folder with server.crt, server.key and ca.crt (relative to the config file's folder), or leave it out."
                )
            }
            certificatesDirectory = folder
        }
        func located(_ field: String, _ body: () throws -> Void) throws {
            do {
                try body()
            } catch let error as KKPushError {
                throw KKPushError(
                    code: .mockConfigInvalid,
                    message: "The config file \(path): \(field.isEmpty ? "" : "`\(field)`: ")\(error.message)",
                    fix: error.fix)
            }
        }
        for (i, entry) in (file.keys ?? []).enumerated() {
            try located("keys[\(i)]") {
                let key = try entry.resolve(relativeTo: base)
                try key.validate()
                keys.append(key)
            }
        }
        for (i, fault) in (file.faults ?? []).enumerated() {
            try located("faults[\(i)]") { try fault.validate() }
        }
        devices += file.devices ?? []
        faults += file.faults ?? []
        try located("") { try validateValues() }
    }
}
