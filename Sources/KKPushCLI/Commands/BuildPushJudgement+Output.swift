import Foundation
import KKPushBuild
import KKPushBuildJudgement
import KKPushCLISupport
import KKPushCore
import KantineKoning

// How `build inspect` and `diagnose --build` print a build's push judgement (KKPushBuildJudgement): text and JSON.

extension BuildPushJudgement {
    // MARK: Text

    var lines: [String] {
        var out: [String] = []
        let r = report
        out.append("Build: \(r.path) (\(r.kind.rawValue))")
        var app = "  App: \(r.bundleID ?? "unknown bundle id")"
        if let v = r.version { app += " \(v)" + (r.buildNumber.map { " (\($0))" } ?? "") }
        app += ", team \(r.teamID ?? "unknown")"
        out.append(app)
        out.append(
            "  Signed for: "
                + (r.apsEnvironment.map { "aps-environment \($0)" } ?? "no aps-environment (push not enabled)")
                + (r.apsEnvironmentSource.map { " — from \($0)" } ?? ""))
        out.append(
            "  Distribution: \(Self.distributionText(r.distribution))"
                + (r.distributionSource.map { " — from \($0)" } ?? ""))
        if let method = r.exportMethod { out.append("  Export method: \(method)") }
        if let s = scheme {
            out.append("  Scheme: \(s.rawValue) (\(s.buildConfiguration)), from \(schemeSource ?? "")")
        }
        if let p = r.profile {
            var line = "  Profile: \"\(p.name ?? "unnamed")\" \(p.uuid ?? "")"
            line += ", created \(Self.day(p.creationDate)), expires \(Self.day(p.expirationDate))"
            out.append(line)
            if p.provisionsAllDevices {
                out.append("    Devices: all (enterprise)")
            } else if let devices = p.provisionedDevices {
                out.append("    Devices: \(devices.count) provisioned")
            }
            let s = p.signature
            var sig = "    Signature: \(s.state.rawValue)"
            if let signer = s.signerSubject { sig += " — signed by \(signer)" }
            if let anchor = s.trustAnchor { sig += ", anchored at \(anchor)" }
            out.append(sig)
            if s.state != .verified { out.append("      \(s.detail)") }
            for c in p.developerCertificates {
                out.append(
                    "    Certificate: \(c.commonName ?? c.subject), SHA-1 \(c.sha1), expires \(Self.day(c.notAfter))")
            }
        }
        if let e = r.executable {
            out.append("  Executable: \(e.path)\(e.isUniversal ? " (universal)" : "")")
            for slice in e.slices {
                guard let sig = slice.codeSignature else {
                    out.append("    \(slice.architecture): not signed")
                    continue
                }
                let aps = sig.effectiveEntitlements?.dictionaryValue.flatMap(BuildInspector.apsEnvironment(in:))
                let forms = [sig.derEntitlements != nil ? "DER" : nil, sig.entitlements != nil ? "XML" : nil]
                    .compactMap { $0 }.joined(separator: "+")
                out.append(
                    "    \(slice.architecture): \(sig.identifier ?? "?"), team \(sig.teamIdentifier ?? "?"), aps-environment \(aps ?? "none") (\(forms.isEmpty ? "no entitlements" : forms))\(sig.isAdHoc ? ", ad hoc signed" : "")"
                )
            }
        }
        out.append("Pushes:")
        if let token = r.tokenEnvironment {
            out.append(
                "  APNs \(token) (\(token.host)) accepts this build's tokens; \(token.other) answers BadDeviceToken.")
            out.append("  What the Kantine Koning app reports, by configuration:")
            for c in configurations {
                out.append(
                    "    \(c.scheme.buildConfiguration) (\(c.scheme.rawValue)): build_environment \"\(c.buildEnvironment)\" → backend: \(c.server) \(c.misrouted ? "✗ MISMATCH (BadDeviceToken)" : "✓")"
                        + (c.scheme == scheme ? "   ← this build" : ""))
            }
            if let fixedServer {
                out.append(
                    "    Fixed app (sends aps_environment \"\(r.apsEnvironment ?? "")\"): backend: \(fixedServer) \(fixedServer == token ? "✓" : "✗")"
                )
            }
        } else {
            out.append("  No APNs environment accepts this build's tokens: it gets none (no aps-environment).")
        }
        for ext in r.extensions {
            out.append(
                "Extension: \(ext.path): \(ext.bundleID ?? "?"), aps-environment \(ext.apsEnvironment ?? "none"), \(Self.distributionText(ext.distribution))"
            )
            for line in Output.lines(ext.problems, indent: "  ") { out.append(line) }
        }
        if problems.isEmpty {
            out.append("Problems: none")
        } else {
            out.append("Problems:")
            out += Output.lines(problems)
        }
        out.append("Verdict: \(verdict)")
        return out
    }

    /// The verdict in diagnose's shape: a code, a message, a fix (empty when there is nothing to do) and why.
    struct Verdict {
        var code: String
        var message: String
        var fix: String
        var why: String

        /// `{code, message, fix, why}`, as `diagnose --json`'s `verdict`.
        var json: JSONValue {
            ["code": .string(code), "message": .string(message), "fix": .string(fix), "why": .string(why)]
        }
    }

    var verdictDetail: Verdict {
        if let first = problems.first(where: { $0.severity == .error }) {
            return Verdict(
                code: first.code, message: FlagWords.common.apply(first.message),
                fix: FlagWords.common.apply(first.fix),
                why: "the first error of the build: until it is fixed, its pushes fail or go to the wrong place")
        }
        if let ext = report.extensions.lazy.flatMap(\.problems).first(where: { $0.severity == .error }) {
            return Verdict(
                code: ext.code, message: "(extension) \(FlagWords.common.apply(ext.message))",
                fix: FlagWords.common.apply(ext.fix),
                why: "the first error of an app extension the build holds")
        }
        guard let token = report.tokenEnvironment else {
            return Verdict(
                code: "build-no-aps-environment", message: "no aps-environment",
                fix: "Enable the Push Notifications capability and sign with a profile that has it.",
                why: "without the entitlement the app gets no APNs token")
        }
        return scheme != nil
            ? Verdict(
                code: "ok", message: "ok: \(token) tokens, and the backend sends them to \(token).", fix: "",
                why: "the token environment the signature gives and the one the backend resolves agree")
            : Verdict(
                code: "ok",
                message: "ok as far as the build tells: \(token) tokens (pass --scheme to judge what the app reports).",
                fix: "",
                why: "the signature tells the token environment; the configuration it was built with is unknown")
    }

    /// The verdict as one line of text (the text report's `Verdict:`, and JSON's `verdict_text`).
    var verdict: String {
        let v = verdictDetail
        return v.code == "ok" || v.code == "build-no-aps-environment" ? v.message : "\(v.code): \(v.message)"
    }

    // MARK: JSON

    var json: JSONValue {
        let r = report
        var o: [String: JSONValue] = [
            "path": .string(r.path), "kind": .string(r.kind.rawValue),
            "bundle_id": JSONValue(r.bundleID), "team_id": JSONValue(r.teamID),
            "version": JSONValue(r.version), "build_number": JSONValue(r.buildNumber),
            "aps_environment": JSONValue(r.apsEnvironment),
            "aps_environment_source": JSONValue(r.apsEnvironmentSource),
            "token_environment": JSONValue(r.tokenEnvironment?.rawValue),
            "apns_host": JSONValue(r.tokenEnvironment?.host),
            "distribution": JSONValue(r.distribution?.rawValue),
            "distribution_source": JSONValue(r.distributionSource),
            "export_method": JSONValue(r.exportMethod),
            "scheme": JSONValue(scheme?.rawValue), "scheme_source": JSONValue(schemeSource),
            "expires": JSONValue(r.expires.map { $0.formatted(.iso8601) }),
            "entitlements": .object(r.entitlements.mapValues(\.json)),
            "configurations": .array(
                configurations.map { c in
                    [
                        "scheme": .string(c.scheme.rawValue),
                        "build_configuration": .string(c.scheme.buildConfiguration),
                        "build_environment": .string(c.buildEnvironment),
                        "backend_environment": .string(c.server.rawValue),
                        "misrouted": .bool(c.misrouted),
                    ]
                }),
            "fixed_app_backend_environment": JSONValue(fixedServer?.rawValue),
            "misrouted": scheme.flatMap { s in configurations.first { $0.scheme == s } }.map { .bool($0.misrouted) }
                ?? .null,
            "problems": Output.json(problems),
            "verdict": verdictDetail.json,
            "verdict_text": .string(verdict),
            "ok": .bool(!failed),
        ]
        if let p = r.profile {
            o["profile"] = [
                "name": JSONValue(p.name), "uuid": JSONValue(p.uuid),
                "team_ids": .array(p.teamIdentifiers.map(JSONValue.string)),
                "team_name": JSONValue(p.teamName), "app_id_name": JSONValue(p.appIDName),
                "application_identifier": JSONValue(p.applicationIdentifier), "bundle_id": JSONValue(p.bundleID),
                "platforms": .array(p.platforms.map(JSONValue.string)),
                "created": JSONValue(p.creationDate.map { $0.formatted(.iso8601) }),
                "expires": JSONValue(p.expirationDate.map { $0.formatted(.iso8601) }),
                "aps_environment": JSONValue(p.apsEnvironment), "get_task_allow": JSONValue(p.getTaskAllow),
                "beta_reports_active": JSONValue(p.betaReportsActive),
                "distribution": .string(p.distribution.rawValue), "distribution_reason": .string(p.distributionReason),
                "provisioned_devices": p.provisionedDevices.map { .int($0.count) } ?? .null,
                "provisions_all_devices": .bool(p.provisionsAllDevices),
                "xcode_managed": JSONValue(p.isXcodeManaged),
                "signature": [
                    "state": .string(p.signature.state.rawValue), "signer": JSONValue(p.signature.signerSubject),
                    "issuer": JSONValue(p.signature.signerIssuer),
                    "chain": .array(p.signature.chain.map(JSONValue.string)),
                    "trust_anchor": JSONValue(p.signature.trustAnchor), "detail": .string(p.signature.detail),
                ],
                "certificates": .array(
                    p.developerCertificates.map { c in
                        [
                            "subject": .string(c.subject), "common_name": JSONValue(c.commonName),
                            "team_id": JSONValue(c.organizationalUnit),
                            "not_before": JSONValue(c.notBefore.map { $0.formatted(.iso8601) }),
                            "not_after": JSONValue(c.notAfter.map { $0.formatted(.iso8601) }),
                            "sha1": .string(c.sha1), "serial": .string(c.serialNumber),
                        ]
                    }),
            ]
        }
        if let e = r.executable {
            o["executable"] = [
                "path": .string(e.path), "universal": .bool(e.isUniversal),
                "slices": .array(
                    e.slices.map { s in
                        let sig = s.codeSignature
                        let aps = sig?.effectiveEntitlements?.dictionaryValue.flatMap(
                            BuildInspector.apsEnvironment(in:))
                        return [
                            "architecture": .string(s.architecture), "signed": .bool(sig != nil),
                            "identifier": JSONValue(sig?.identifier), "team_id": JSONValue(sig?.teamIdentifier),
                            "aps_environment": JSONValue(aps),
                            "der_entitlements": .bool(sig?.derEntitlements != nil),
                            "xml_entitlements": .bool(sig?.entitlements != nil),
                            "cms_signature": .bool(sig?.hasCMSSignature ?? false),
                            "ad_hoc": .bool(sig?.isAdHoc ?? false),
                            "entitlement_disagreements": .array(
                                (sig?.entitlementDisagreements ?? []).map(JSONValue.string)),
                        ]
                    }),
            ]
        }
        o["extensions"] = .array(
            r.extensions.map { ext in
                [
                    "path": .string(ext.path), "bundle_id": JSONValue(ext.bundleID),
                    "aps_environment": JSONValue(ext.apsEnvironment),
                    "distribution": JSONValue(ext.distribution?.rawValue),
                    "expires": JSONValue(ext.expires.map { $0.formatted(.iso8601) }),
                    "problems": Output.json(ext.problems),
                ]
            })
        return .object(o)
    }
}
