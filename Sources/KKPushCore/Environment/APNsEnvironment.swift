/// An APNs environment: where a device token is valid.
///
/// A token belongs to exactly one environment: the one of the `aps-environment` entitlement the app is
/// signed with, which Xcode sets from the provisioning profile (Apple's documentation of the entitlement),
/// not from the build configuration. A build run from Xcode with a development profile gets sandbox tokens;
/// ad hoc, enterprise, TestFlight and App Store builds get production tokens, even when built in the Debug
/// configuration. Sending a token to the other environment gets `400 BadDeviceToken`.
public enum APNsEnvironment: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// `api.sandbox.push.apple.com`: apps signed with `aps-environment: development`.
    case sandbox
    /// `api.push.apple.com`: apps signed with `aps-environment: production`.
    case production

    /// Apple's host for device pushes in this environment.
    public var host: String {
        switch self {
        case .sandbox: "api.sandbox.push.apple.com"
        case .production: "api.push.apple.com"
        }
    }

    /// The other environment.
    public var other: APNsEnvironment { self == .sandbox ? .production : .sandbox }

    /// The value of the app's `aps-environment` entitlement for this environment.
    public var entitlementValue: String { self == .sandbox ? "development" : "production" }

    /// The environment of an `aps-environment` entitlement value: exactly `development` or `production`, as the
    /// entitlement and the `aps_environment` field carry it; nil for anything else.
    public init?(entitlementValue: String) {
        switch entitlementValue {
        case "development": self = .sandbox
        case "production": self = .production
        default: return nil
        }
    }

    /// `sandbox` or `production`.
    public var description: String { rawValue }

    /// Parses `sandbox`/`development` and `production`, ignoring case and surrounding white space.
    /// For user input (flags); a backend matching the values an app sends should match them exactly.
    public init?(lenient text: String) {
        switch text.trimmingWhitespace().lowercased() {
        case "sandbox", "development", "dev": self = .sandbox
        case "production", "prod": self = .production
        default: return nil
        }
    }
}

/// Where to send pushes: a host, a port and, for stand-ins such as the mock server, a CA file.
///
/// An open set, as APNSwift's `APNSEnvironment`: Apple's two hosts on 443 or 2197, or any custom
/// endpoint (the mock server, the nginx stand-in).
public struct APNsEndpoint: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The host name or address.
    public var host: String
    /// The TCP port.
    public var port: Int
    /// A PEM file with the CA certificates to trust instead of the system's, if any.
    public var caFile: String?
    /// The environment this endpoint serves, if known.
    public var environment: APNsEnvironment?

    /// Creates an endpoint.
    public init(host: String, port: Int = 443, caFile: String? = nil, environment: APNsEnvironment? = nil) {
        self.host = host
        self.port = port
        self.caFile = caFile
        self.environment = environment
    }

    /// Apple's port for APNs, `443`.
    public static let standardPort = 443
    /// Apple's alternative port, `2197`, for networks that block outgoing 443.
    public static let alternatePort = 2197

    /// Apple's sandbox host on port 443.
    public static let sandbox = APNsEndpoint.apple(.sandbox)
    /// Apple's production host on port 443.
    public static let production = APNsEndpoint.apple(.production)

    /// Apple's host for `environment`, on `port` (443 or 2197).
    public static func apple(_ environment: APNsEnvironment, port: Int = standardPort) -> APNsEndpoint {
        APNsEndpoint(host: environment.host, port: port, environment: environment)
    }

    /// True for Apple's own hosts.
    public var isApple: Bool { APNsEnvironment.allCases.contains { $0.host == host } }

    /// `https://host:port`.
    public var baseURL: String {
        let h = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "https://\(h):\(port)"
    }

    /// The URL of a device push: `https://host:port/3/device/<token>`.
    public func deviceURL(token: String) -> String { "\(baseURL)/3/device/\(token)" }

    /// Parses `https://host[:port]` (the path, if any, is ignored).
    public static func parse(url: String, caFile: String? = nil, environment: APNsEnvironment? = nil) throws
        -> APNsEndpoint
    {
        var rest = url.trimmingWhitespace()
        guard rest.lowercased().hasPrefix("https://") else {
            throw KKPushError(
                code: .endpointScheme,
                message: "The URL '\(url)' is not https: APNs speaks HTTP/2 over TLS only.",
                fix: "Use an https:// URL, for example https://127.0.0.1:2197")
        }
        rest.removeFirst("https://".count)
        if let slash = rest.firstIndex(of: "/") { rest = String(rest[..<slash]) }
        var host = rest
        var port = standardPort
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw KKPushError(code: .endpointHost, message: "The URL '\(url)' has an unclosed IPv6 address.")
            }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65535).contains(p) else {
                    throw KKPushError(code: .endpointPort, message: "The URL '\(url)' has an invalid port.")
                }
                port = p
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = String(rest[..<colon])
            guard let p = Int(rest[rest.index(after: colon)...]), (1...65535).contains(p) else {
                throw KKPushError(
                    code: .endpointPort, message: "The URL '\(url)' has an invalid port.",
                    fix: "Give a port between 1 and 65535, for example https://127.0.0.1:2197")
            }
            port = p
        }
        guard !host.isEmpty else {
            throw KKPushError(code: .endpointHost, message: "The URL '\(url)' has no host.")
        }
        let env = environment ?? APNsEnvironment.allCases.first { $0.host == host }
        return APNsEndpoint(host: host, port: port, caFile: caFile, environment: env)
    }

    /// `host:port`, and the CA file if one is set.
    public var description: String {
        caFile.map { "\(host):\(port) (CA \($0))" } ?? "\(host):\(port)"
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces, tabs and newlines.
    public func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
