import Foundation

// The JSON of `tls check` and of `mock certs --chain`'s certificates: the stable field names scripts read. Times are
// RFC 3339 text whatever the encoder's date strategy; an unknown value is `null`, never left out.

extension ServerCertificate: Encodable {
    private enum CodingKeys: String, CodingKey {
        case subject, issuer
        case commonName = "common_name"
        case notBefore = "not_before"
        case notAfter = "not_after"
        case keyType = "key_type"
        case keyBits = "key_bits"
        case sha256
        case spkiSHA256 = "spki_sha256"
        case selfIssued = "self_issued"
        case ca
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(subject, forKey: .subject)
        try c.encode(issuer, forKey: .issuer)
        try c.encode(commonName, forKey: .commonName)
        try c.encode(notBefore.formatted(.iso8601), forKey: .notBefore)
        try c.encode(notAfter.formatted(.iso8601), forKey: .notAfter)
        try c.encode(keyType, forKey: .keyType)
        try c.encode(keyBits, forKey: .keyBits)
        try c.encode(sha256, forKey: .sha256)
        try c.encode(spkiSHA256, forKey: .spkiSHA256)
        try c.encode(selfIssued, forKey: .selfIssued)
        try c.encode(isCA, forKey: .ca)
    }
}

extension TrustAnchors: Encodable {
    private enum CodingKeys: String, CodingKey {
        case kind, path, pins
        case completedFrom = "completed_from"
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .systemBundle(let path):
            try c.encode("system", forKey: .kind)
            try c.encode(path, forKey: .path)
        case .caFile(let path):
            try c.encode("ca-file", forKey: .kind)
            try c.encode(path, forKey: .path)
        case .caFolder(let path):
            try c.encode("ca-path", forKey: .kind)
            try c.encode(path, forKey: .path)
        case .pins(let pins, let bundle):
            try c.encode("pins", forKey: .kind)
            try c.encode(pins, forKey: .pins)
            try c.encode(bundle, forKey: .completedFrom)
        }
    }
}

extension ServerTrustReport: Encodable {
    private enum CodingKeys: String, CodingKey {
        case host, port
        case serverName = "server_name"
        case tlsVersion = "tls_version"
        case alpn, chain, root
        case rootSource = "root_source"
        case trustStore = "trust_store"
        case verdict, trusted
        case verifyCode = "verify_code"
        case problem, missing
        case matchedPin = "matched_pin"
        case fix
    }

    /// The certificate the chain needs and the store lacks.
    private struct Missing: Encodable {
        var report: ServerTrustReport
        enum CodingKeys: String, CodingKey {
            case name
            case commonName = "common_name"
            case kind
            case storeHasNamesake = "store_has_namesake"
            case unhashedFile = "unhashed_file"
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(report.missingIssuer, forKey: .name)
            try c.encode(report.missingIssuerCommonName, forKey: .commonName)
            try c.encode(report.missingKind?.rawValue ?? MissingKind.issuer.rawValue, forKey: .kind)
            try c.encode(report.storeHasNamesake, forKey: .storeHasNamesake)
            try c.encode(report.missingUnhashedFile, forKey: .unhashedFile)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(host, forKey: .host)
        try c.encode(port, forKey: .port)
        try c.encode(serverName, forKey: .serverName)
        try c.encode(tlsVersion, forKey: .tlsVersion)
        try c.encode(alpn, forKey: .alpn)
        try c.encode(served, forKey: .chain)
        try c.encode(root, forKey: .root)
        try c.encode(rootSource?.rawValue, forKey: .rootSource)
        try c.encode(anchors, forKey: .trustStore)
        try c.encode(verdict.rawValue, forKey: .verdict)
        try c.encode(verdict == .trusted, forKey: .trusted)
        try c.encode(verifyCode, forKey: .verifyCode)
        try c.encode(problem, forKey: .problem)
        try c.encode(missingIssuer != nil ? Missing(report: self) : nil, forKey: .missing)
        try c.encode(matchedPin, forKey: .matchedPin)
        try c.encode(fix, forKey: .fix)
    }
}

extension ServerTrustCheck {
    /// `HOST[:PORT]` (`[ADDRESS]:PORT` for IPv6) as a host and a port (443 when none); nil when the port is not one
    /// from 1 to 65535 or there is no host.
    package static func hostAndPort(_ text: String) -> (host: String, port: Int)? {
        var host = text
        var port = 443
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let number = Int(rest.dropFirst()) else { return nil }
                port = number
            }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = String(text[..<colon])
            guard let number = Int(text[text.index(after: colon)...]) else { return nil }
            port = number
        }
        guard !host.isEmpty, (1...65_535).contains(port) else { return nil }
        return (host, port)
    }

    /// One check of `host`:`port` against what the caller gave: `pins` (with the chain completed from `caFile` or
    /// `caFolder` when given), else `caFile`, else `caFolder`, else the system's CA bundle; on a thread of its own.
    /// Throws ``KKPushError/Code/trustPinInvalid`` for a pin that is not one, and what
    /// ``run(host:port:anchors:timeout:now:systemBundle:)`` throws.
    package static func check(
        host: String, port: Int, pins: [String], caFile: String?, caFolder: String?, timeout: Int
    ) async throws -> ServerTrustReport {
        let anchors: Anchors
        if !pins.isEmpty {
            anchors = .pins(try pins.map(Pin.init), caFile: caFile, caFolder: caFolder)
        } else if let caFile {
            anchors = .caFile(caFile)
        } else if let caFolder {
            anchors = .caFolder(caFolder)
        } else {
            anchors = .system
        }
        return try await runOffThread(host: host, port: port, anchors: anchors, timeout: timeout)
    }
}
