import Foundation
import KKPushCore

/// Rule 5: the credentials (the key, the certificate, a captured provider token).
extension Diagnoser {
    static func keyFindings(_ f: DiagnosisFacts, pushEnvironment: APNsEnvironment?) -> [Finding] {
        guard let key = f.key else { return [] }
        var out: [Finding] = []
        if let error = key.loadError {
            out.append(
                Finding(
                    .error, DiagnosisCode.keyInvalid,
                    message: "The provider key \(quote(key.file)) cannot be used: \(error)",
                    why: "Without a loadable P-256 key no valid provider token can be signed.",
                    fix:
                        "Download the .p8 again from the developer portal (Keys); it must be an unencrypted PKCS#8 P-256 key."
                ))
        }
        let ids = keyIDs(key)
        // A key id that is not the file's is one finding that names the right id, not also a format error.
        var fileNamesKeyID = false
        if case .mismatch(let fileKeyID) = ids { fileNamesKeyID = fileKeyID != nil }
        for (name, value) in [("key id", key.keyID), ("team id", key.teamID)]
        where !isAppleID(value) && !(name == "key id" && fileNamesKeyID) {
            out.append(
                Finding(
                    .error, DiagnosisCode.keyInvalid,
                    message: "The \(name) \(quote(value)) is not 10 letters and digits.",
                    why: "APNs answers InvalidProviderToken to a token whose kid or iss is not an Apple id.",
                    fix:
                        "The key id is the 10 characters in AuthKey_<KEYID>.p8; the team id is on the developer account's Membership page."
                ))
        }
        if let finding = keyIDFinding(key, ids: ids) { out.append(finding) }
        if let only = key.environmentRestriction, let push = pushEnvironment, only != push {
            out.append(
                Finding(
                    .error, DiagnosisCode.keyEnvironment,
                    message: "The key \(key.keyID) is restricted to \(only), but pushes go to \(push).",
                    why:
                        "APNs \(push) answers 403 BadEnvironmentKeyIdInToken to tokens signed with a \(only)-only key.",
                    fix: "Use a key enabled for \(push) (or for both) for these pushes."))
        }
        if let topic = f.topic, !topic.isEmpty, !key.topics.isEmpty,
            !TopicScope.covers(anyOf: key.topics, topic: topic)
        {
            out.append(
                Finding(
                    .error, DiagnosisCode.keyTopic,
                    message:
                        "The key \(key.keyID) is scoped to \(key.topics.sorted().joined(separator: ", ")), but pushes go to the topic \(quote(topic)).",
                    why:
                        "A topic-specific key signs tokens only for its own bundle ids: APNs refuses the push (TopicDisallowed).",
                    fix:
                        "Use a key scoped to \(topic) (or a team key for any topic), or add the bundle id to the key's topics on developer.apple.com → Keys."
                ))
        }
        if f.sendAnswer == APNsReason.invalidProviderToken.rawValue, Set(f.teamsInUse).count > 1,
            keyIDs(key) == .consistent, key.loadError == nil
        {
            let teams = Array(Set(f.teamsInUse)).sorted()
            out.append(
                Finding(
                    .error, DiagnosisCode.teamsOnOneConnection,
                    message:
                        "APNs answered InvalidProviderToken while the sender uses keys of \(teams.count) teams (\(teams.joined(separator: ", "))), and this key and its ids are in order.",
                    why:
                        "APNs ties a connection to the team of its first provider token: a token of another team on the same connection is refused with 403 InvalidProviderToken.",
                    fix:
                        "Give each team (and each key) connections of its own: send with a credentials file, (sendBatchCommand) with (credentials), which keeps one connection pool per credential and environment; or open a new connection for each team."
                ))
        }
        return out
    }

    /// The finding for key ids that do not fit the key or each other (``keyIDs(_:)``), nil when they fit.
    /// `seen` (a probe's answer) is put before the message and marks it confirmed.
    static func keyIDFinding(_ key: DiagnosisFacts.Key, ids: KeyIDs, seen: String? = nil) -> Finding? {
        let given = quote(key.keyID)
        var finding: Finding
        switch ids {
        case .consistent:
            return nil
        case .mismatch(let fileKeyID):
            let message =
                fileKeyID.map {
                    "The key id \(given) is not the key file's: the file is AuthKey_\($0).p8, whose key id is \($0)."
                }
                ?? "The key id \(given) is not the key's: \(key.swapProblems.first { $0.code == .keyIdMismatch }?.message ?? "the key file belongs to another key id.")"
            finding = Finding(
                .error, DiagnosisCode.keyIDMismatch, message: message,
                why:
                    "APNs looks the key up by the key id (the token's kid): a token signed with this key under another key's id does not verify, so APNs answers 403 InvalidProviderToken to every push.",
                fix: fileKeyID.map {
                    "Use the key id from the file name, \($0) (developer.apple.com → Keys lists it too), or the key file that belongs to \(given)\(isAppleID(key.keyID) ? " (AuthKey_\(key.keyID).p8)" : "")."
                }
                    ?? "Use the key id of this key file (the 10 characters in AuthKey_<KEYID>.p8, or developer.apple.com → Keys), or the key file of \(given)."
            )
        case .swapped(let fileKeyID):
            let message =
                fileKeyID.map {
                    "The team id \(quote(key.teamID)) is the key id in the key file's name AuthKey_\($0).p8, and the key id given is \(given): key id and team id are given the other way round."
                } ?? "The key id \(given) and the team id \(quote(key.teamID)) are given the other way round."
            let keyIDText =
                fileKeyID.map { "\($0) (the file name AuthKey_\($0).p8)" } ?? "the 10 characters in AuthKey_<KEYID>.p8"
            let teamIDText =
                isAppleID(key.keyID)
                ? "\(key.keyID) (the value given as the key id; developer.apple.com → Membership shows it)"
                : "your 10-character team id (developer.apple.com → Membership)"
            finding = Finding(
                .error, DiagnosisCode.keyTeamSwapped, message: message,
                why:
                    "The token's kid must be the key id and its iss the team id; swapped, APNs finds no key for the kid and answers 403 InvalidProviderToken to every push.",
                fix: "Swap them back: the key id is \(keyIDText), and the team id is \(teamIDText).")
        case .same(let fileKeyID):
            if let fileKeyID {
                finding = Finding(
                    .error, DiagnosisCode.keyInvalid,
                    message: "The team id \(quote(key.teamID)) is the key id of the key file AuthKey_\(fileKeyID).p8.",
                    why:
                        "The token's iss must be the team id; APNs answers 403 InvalidProviderToken to a token whose iss is a key id.",
                    fix:
                        "Keep the key id \(fileKeyID), and use your team id (10 characters, developer.apple.com → Membership) as the team id."
                )
            } else {
                finding = Finding(
                    .error, DiagnosisCode.keyInvalid,
                    message: "The key id and the team id are both \(given): one of them is wrong.",
                    why:
                        "The token's kid is the key id and its iss the team id, never the same value: APNs answers 403 InvalidProviderToken.",
                    fix:
                        "The key id is in the key file's name (AuthKey_<KEYID>.p8) and on developer.apple.com → Keys; the team id is on developer.apple.com → Membership."
                )
            }
        }
        if let seen {
            finding.message = "\(seen): \(finding.message)"
            finding.confirmed = true
        }
        return finding
    }

    static func certificateFindings(_ f: DiagnosisFacts, pushEnvironment: APNsEnvironment?) -> [Finding] {
        guard let cert = f.certificate else { return [] }
        if let error = cert.loadError {
            return [
                Finding(
                    .error, DiagnosisCode.certificateInvalid,
                    message: "The certificate \(quote(cert.file)) cannot be used: \(error)",
                    why: "Without a loadable certificate and key, the TLS handshake with APNs fails.",
                    fix:
                        "Export the certificate with its private key as .p12 (Keychain Access), and give its password (certPassword)."
                )
            ]
        }
        var out: [Finding] = []
        if let notAfter = cert.notAfter {
            if notAfter < f.now {
                out.append(
                    Finding(
                        .error, DiagnosisCode.certificateExpired,
                        message: "The certificate \(quote(cert.file)) expired on \(iso(notAfter)).",
                        why: "APNs refuses expired client certificates: every push fails.",
                        fix:
                            "Create a new APNs certificate in the developer portal (or move to a .p8 key, which does not expire)."
                    ))
            } else if notAfter.timeIntervalSince(f.now) < 30 * 86400 {
                out.append(
                    Finding(
                        .warning, .certificateExpiring,
                        message: "The certificate \(quote(cert.file)) expires on \(iso(notAfter)).",
                        why: "Within 30 days every push will fail.", fix: "Renew it now (or move to a .p8 key)."))
            }
        }
        if let push = pushEnvironment, !cert.environments.isEmpty, !cert.environments.contains(push) {
            out.append(
                Finding(
                    .error, DiagnosisCode.certificateEnvironment,
                    message:
                        "The certificate is for \(cert.environments.map(\.rawValue).joined(separator: " and ")), but pushes go to \(push).",
                    why: "APNs \(push) answers BadCertificateEnvironment (or closes the connection with it).",
                    fix: "Use a \(push) or a universal (Sandbox & Production) certificate."))
        }
        if let topic = f.topic, !topic.isEmpty {
            var covered = Set(cert.topics)
            if let b = cert.bundleID { covered.formUnion([b, b + ".voip", b + ".complication"]) }
            if !covered.isEmpty, !covered.contains(topic) {
                out.append(
                    Finding(
                        .error, DiagnosisCode.certificateTopic,
                        message:
                            "The certificate covers \(covered.sorted().joined(separator: ", ")), not the topic \(quote(topic)).",
                        why: "APNs rejects topics the certificate does not cover (BadTopic / TopicDisallowed).",
                        fix: "Use the certificate of the app you push to, or push to one of its topics."))
            }
        }
        return out
    }

    static func providerTokenFindings(_ f: DiagnosisFacts) -> [Finding] {
        var out: [Finding] = []
        if let t = f.providerToken {
            if let reason = t.invalidReason {
                out.append(
                    Finding(
                        .error, DiagnosisCode.keyInvalid, message: "The provider token does not verify: \(reason)",
                        why: "APNs answers InvalidProviderToken.",
                        fix: "Sign it with the .p8 of its key id, ES256, raw or DER signature (jwtSignCommand)."))
            }
            // The token's kid against the key id, when the key id itself fits the key (else that is the finding).
            if let kid = t.kid, let key = f.key, keyIDs(key) == .consistent, kid != key.keyID {
                if kid == key.teamID, t.iss == key.keyID {
                    out.append(
                        Finding(
                            .error, DiagnosisCode.keyTeamSwapped,
                            message:
                                "The provider token's kid is \(quote(kid)), the team id, and its iss \(quote(t.iss)), the key id: the sender gives them the other way round.",
                            why:
                                "APNs looks the key up by kid and checks iss against the key's team: swapped, it answers 403 InvalidProviderToken.",
                            fix:
                                "Make the sender sign with kid = the key id \(key.keyID) and iss = the team id \(key.teamID)."
                        ))
                } else {
                    out.append(
                        Finding(
                            .error, DiagnosisCode.keyIDMismatch,
                            message:
                                "The provider token's kid is \(quote(kid)), but the key id is \(quote(key.keyID)).",
                            why:
                                "APNs looks the key up by kid: a token signed with this key under another key's id gets 403 InvalidProviderToken.",
                            fix:
                                "Make the sender sign with kid \(key.keyID), the key id of the .p8 it signs with (or sign with the key of \(quote(kid)))."
                        ))
                }
            } else if let kid = t.kid, let iss = t.iss, f.key == nil, kid == iss {
                out.append(
                    Finding(
                        .warning, DiagnosisCode.keyInvalid,
                        message: "The provider token's kid and iss are both \(quote(kid)): one of them is wrong.",
                        why:
                            "kid is the key id and iss the team id, never the same value: APNs answers InvalidProviderToken.",
                        fix:
                            "kid is the key id (AuthKey_<KEYID>.p8), iss the team id (developer.apple.com → Membership)."
                    ))
            }
            if t.iatNotInteger {
                out.append(
                    Finding(
                        .warning, .providerTokenIATFormat, message: "The provider token's iat is not an integer.",
                        why: "APNs expects whole seconds since 1970; whether it accepts a string is unconfirmed.",
                        fix: "Send iat as a JSON integer (seconds)."))
            }
            if let iat = t.issuedAt {
                let age = f.now.timeIntervalSince(iat)
                if age < -60 {
                    out.append(
                        Finding(
                            .error, DiagnosisCode.providerTokenClockSkew,
                            message:
                                "The provider token was issued at \(iso(iat)), \(InputNumbers.text((-age).rounded(.towardZero))) s in the future of this machine's clock.",
                            why:
                                "The sender's clock is ahead: APNs rejects tokens from the future (InvalidProviderToken) and expires them early or late.",
                            fix: "Synchronise the sender's clock (NTP: timedatectl set-ntp true)."))
                } else if age > 3600 {
                    out.append(
                        Finding(
                            .error, DiagnosisCode.providerTokenExpired,
                            message:
                                "The provider token was issued at \(iso(iat)), \(InputNumbers.text((age / 60).rounded(.towardZero))) minutes ago.",
                            why: "APNs rejects provider tokens older than one hour with ExpiredProviderToken.",
                            fix: "Refresh the token every 20–60 minutes (and after ExpiredProviderToken, once)."))
                }
            }
        }
        if let interval = f.providerTokenRefreshInterval {
            if interval < 20 * 60 {
                out.append(
                    Finding(
                        .error, DiagnosisCode.providerTokenChurn,
                        message:
                            "The sender makes a new provider token every \(InputNumbers.text(interval.rounded(.towardZero))) s.",
                        why:
                            "APNs answers 429 TooManyProviderTokenUpdates when a connection's token changes more often than every 20 minutes.",
                        fix: "Reuse one token for 20–60 minutes, shared by all connections."))
            } else if interval > 60 * 60 {
                out.append(
                    Finding(
                        .error, DiagnosisCode.providerTokenExpired,
                        message:
                            "The sender refreshes its provider token every \(InputNumbers.text((interval / 60).rounded(.towardZero))) minutes.",
                        why: "Tokens older than one hour get ExpiredProviderToken.",
                        fix: "Refresh at most every 60 minutes (40–55 is safe)."))
            }
        }
        return out
    }
}
