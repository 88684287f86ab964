package import Foundation
package import KKPushCore

// The reports of the provider-token commands (`jwt verify`, `jwt decode`, `jwt scope`): each one value a command line
// renders as text and encodes as JSON. Their coding keys are the stable field names scripts read; `encode(to:)` writes
// `null` for an unknown value. A `note` is the caller's own words (it may name its commands and flags, which a library
// does not): the engine says when one is due, the caller writes it.

/// A provider token verified as APNs would verify it, and its ids judged as APNs would judge them
/// (``verify(_:key:keyFile:now:maxAge:)``).
package struct ProviderTokenVerificationReport: Encodable, Sendable {
    /// The oldest token APNs itself accepts, in seconds.
    package static let apnsMaxAge = 3600

    /// The token's claims, when its signature verified.
    package var claims: ProviderTokenClaims?
    /// Its age at the time judged, when its signature verified.
    package var ageSeconds: Int?
    /// Why the token is invalid (structure, signature, age), if it is.
    package var failure: ProviderTokenFailure?
    /// Ids APNs rejects although the signature verifies: swapped, another key's, not of Apple's form (errors).
    package var idProblems: [Problem]
    /// Valid by the caller's `maxAge`, but older than ``apnsMaxAge``: APNs itself would answer ExpiredProviderToken.
    package var olderThanAPNsAccepts: Bool
    /// The caller's note on a valid token (for ``olderThanAPNsAccepts``), in its words.
    package var note: String?

    /// APNs accepts the token.
    package var valid: Bool { failure == nil && idProblems.isEmpty }

    /// Verifies `token` with `key` at `now`, accepting tokens up to `maxAge` seconds old; `keyFile` (the key's file
    /// name, `AuthKey_<KEYID>.p8`) lets the ids be checked against the key's own id.
    package static func verify(
        _ token: String, key: ES256PublicKey, keyFile: String?, now: Date, maxAge: Int
    ) -> ProviderTokenVerificationReport {
        switch ProviderToken.verify(token, key: key, now: now, maxAge: TimeInterval(maxAge)) {
        case .valid(let claims):
            let age = Int(now.timeIntervalSince(claims.issuedAt))
            // The signature verifies, but kid and iss can still be ones APNs rejects: swapped (the team id is the key
            // file's AuthKey_<KEYID>.p8 id, or kid = iss), another key's id, or not of Apple's form. APNs answers 403
            // InvalidProviderToken to all of them: a verdict, not a warning.
            let idProblems = KeyTeamSwapCheck.check(
                keyFile: keyFile, keyID: claims.keyID, teamID: claims.teamID, inToken: true
            ).map { Problem(.error, code: $0.code, message: $0.message, fix: $0.fix) }
            return ProviderTokenVerificationReport(
                claims: claims, ageSeconds: age, failure: nil, idProblems: idProblems,
                olderThanAPNsAccepts: idProblems.isEmpty && age > apnsMaxAge)
        case .invalid(let failure):
            return ProviderTokenVerificationReport(
                claims: nil, ageSeconds: nil, failure: failure, idProblems: [], olderThanAPNsAccepts: false)
        }
    }

    /// Whether the signature verified: false for `bad-signature`, true for failures found after it was checked (the
    /// issue time), nil when the token failed before the signature was checked.
    package static func signatureVerdict(_ failure: ProviderTokenFailure) -> Bool? {
        switch failure.code {
        case .badSignature: false
        case .iatOutOfRange, .iatInFuture, .expired: true
        default: nil
        }
    }

    /// The message of a token whose ids APNs rejects.
    package static func idMessage(_ problem: Problem) -> String {
        "The signature is valid, but APNs will reject the token: \(problem.message)"
    }

    private enum CodingKeys: String, CodingKey {
        case valid
        case signatureValid = "signature_valid"
        case kid, iss, iat
        case ageSeconds = "age_seconds"
        case note, code, message
        case fix
        case apnsReason = "apns_reason"
        case problems
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(valid, forKey: .valid)
        if let failure {
            try c.encode(Self.signatureVerdict(failure), forKey: .signatureValid)
            try c.encode(failure.code, forKey: .code)
            try c.encode(failure.message, forKey: .message)
            try c.encode(failure.apnsReason.rawValue, forKey: .apnsReason)
            return
        }
        try c.encode(true, forKey: .signatureValid)
        if let claims {
            try c.encode(claims.keyID, forKey: .kid)
            try c.encode(claims.teamID, forKey: .iss)
            try c.encode(Int(claims.issuedAt.timeIntervalSince1970), forKey: .iat)
        }
        try c.encode(ageSeconds, forKey: .ageSeconds)
        if let problem = idProblems.first {
            try c.encode(problem.code, forKey: .code)
            try c.encode(Self.idMessage(problem), forKey: .message)
            try c.encode(problem.fix, forKey: .fix)
            try c.encode(APNsReason.invalidProviderToken.rawValue, forKey: .apnsReason)
            try c.encode(idProblems, forKey: .problems)
        } else {
            try c.encode(note, forKey: .note)
        }
    }
}

/// A provider token decoded without a signature check: header, claims, issue time and age, the signature's form and
/// what is wrong with it (``decode(_:now:)``).
package struct ProviderTokenDecodeReport: Encodable, Sendable {
    /// The token, if it decodes.
    package var decoded: DecodedProviderToken?
    /// Why it does not decode.
    package var failure: ProviderTokenFailure?
    /// What is wrong with a decoded token (``DecodedProviderToken/problems(now:maxAge:allowedFutureSkew:)``).
    package var problems: [Problem]
    /// Its age at the time judged (negative: issued in the future), if its `iat` is a time.
    package var ageSeconds: Int?
    /// How the signature is encoded, in words (``signatureForm(alg:bytes:)``).
    package var signatureForm: String?
    /// The caller's note (for ``hmacAlgorithm``), in its words.
    package var note: String?

    /// The algorithm of an HS* token (an HMAC, not an APNs provider token), else nil.
    package var hmacAlgorithm: String? {
        guard let alg = decoded?.alg, alg.hasPrefix("HS") else { return nil }
        return alg
    }

    /// Decodes `token` and judges it at `now`.
    package static func decode(_ token: String, now: Date) -> ProviderTokenDecodeReport {
        let decoded: DecodedProviderToken
        do {
            decoded = try ProviderToken.decode(token)
        } catch {
            return ProviderTokenDecodeReport(decoded: nil, failure: error, problems: [])
        }
        return ProviderTokenDecodeReport(
            decoded: decoded, failure: nil, problems: decoded.problems(now: now),
            ageSeconds: decoded.age(now: now).map { Int($0) },
            signatureForm: signatureForm(alg: decoded.alg, bytes: decoded.signature))
    }

    /// How the signature is encoded, in words: APNs wants ES256's raw r‖s (64 bytes); a DER-encoded ECDSA signature
    /// (what OpenSSL's plain sign call gives) starts with 0x30; an HS* token carries an HMAC.
    package static func signatureForm(alg: String?, bytes: [UInt8]) -> String {
        switch alg {
        case .some(let a) where a.hasPrefix("HS"):
            "\(bytes.count) bytes (an HMAC: \(a) is signed with a shared secret, not an APNs key)"
        case "ES256" where bytes.count == 64:
            "raw r‖s (64 bytes, as APNs requires)"
        case "ES256" where bytes.first == 0x30:
            "\(bytes.count) bytes, DER-encoded: APNs requires the raw 64-byte r‖s form (JWS, RFC 7518 §3.4)"
        default:
            "\(bytes.count) bytes (not the 64-byte r‖s of an ES256 signature)"
        }
    }

    private enum CodingKeys: String, CodingKey {
        case header, claims
        case issuedAt = "issued_at"
        case ageSeconds = "age_seconds"
        case signatureBytes = "signature_bytes"
        case signatureForm = "signature_form"
        case warnings, note
    }

    /// A failure as a warning: `{code, message}`.
    private struct FailureWarning: Encodable {
        var code: Problem.Code
        var message: String
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        guard let decoded else {
            try c.encodeNil(forKey: .header)
            try c.encodeNil(forKey: .claims)
            try c.encodeNil(forKey: .ageSeconds)
            try c.encode(
                failure.map { [FailureWarning(code: $0.code, message: $0.message)] } ?? [], forKey: .warnings)
            return
        }
        try c.encode(decoded.header, forKey: .header)
        try c.encode(decoded.claims, forKey: .claims)
        try c.encode(decoded.issuedAt?.formatted(.iso8601), forKey: .issuedAt)
        try c.encode(ageSeconds, forKey: .ageSeconds)
        try c.encode(decoded.signature.count, forKey: .signatureBytes)
        try c.encode(signatureForm, forKey: .signatureForm)
        try c.encode(problems, forKey: .warnings)
        try c.encode(note, forKey: .note)
    }
}

/// Whether a credential of a credentials file may serve a topic in an environment, and if not, why
/// (``judge(credentialsFile:credential:keyID:topic:environment:)``).
package struct CredentialScopeReport: Encodable, Sendable {
    package var topic: String
    package var environment: APNsEnvironment
    /// The entries that may serve the topic in the environment, in the order they are chosen.
    package var servers: [String]
    /// The credential that serves it, if one does.
    package var chosen: ProviderCredential?
    /// Why none does (the one asked for, or any), if none does.
    package var problem: CredentialScopeProblem?

    /// The credential may serve the topic.
    package var serves: Bool { chosen != nil }

    /// Loads the credentials file `path` and judges the entry named `credential` (or the one whose Key ID is `keyID`,
    /// or, without either, whichever serves) for `topic` in `environment`. Throws ``KKPushError/Code/unknownCredential``
    /// for a Key ID no entry has, and the file's own errors.
    package static func judge(
        credentialsFile path: String, credential: String?, keyID: String?, topic: String,
        environment: APNsEnvironment
    ) throws -> CredentialScopeReport {
        let set = try ProviderCredentialSet.load(path: path)
        var name = credential
        if let keyID {
            guard let entry = set.credentials.first(where: { $0.keyID == keyID }) else {
                throw KKPushError(
                    code: .unknownCredential,
                    message: "No key of the credentials file '\(path)' has the Key ID \(keyID).",
                    fix: "Add the key to the file, or check the token's kid (jwtDecodeCommand).")
            }
            name = entry.name
        }
        var report = CredentialScopeReport(
            topic: topic, environment: environment,
            servers: set.servers(topic: topic, environment: environment).map(\.name))
        switch set.resolve(credential: name, topic: topic, environment: environment) {
        case .success(let chosen): report.chosen = chosen
        case .failure(let problem): report.problem = problem
        }
        return report
    }

    private enum CodingKeys: String, CodingKey { case topic, environment, servers, credential, serves, problem }

    /// The problem: `{code, message, fix, apns_reason}`.
    private struct Described: Encodable {
        var problem: CredentialScopeProblem
        enum CodingKeys: String, CodingKey {
            case code, message, fix
            case apnsReason = "apns_reason"
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(problem.kind.rawValue, forKey: .code)
            try c.encode(problem.message, forKey: .message)
            try c.encode(problem.fix, forKey: .fix)
            try c.encode(problem.apnsReason?.rawValue, forKey: .apnsReason)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(topic, forKey: .topic)
        try c.encode(environment.rawValue, forKey: .environment)
        try c.encode(servers, forKey: .servers)
        try c.encode(chosen?.name ?? problem?.credential, forKey: .credential)
        try c.encode(serves, forKey: .serves)
        try c.encode(problem.map(Described.init), forKey: .problem)
    }
}
