import Foundation
import KKPushBuild
import KKPushBuildJudgement
import KKPushCLISupport
import KKPushCore
import KantineKoning

// How `build inspect` prints a build's push judgement (KKPushBuildJudgement) as text; its JSON is the judgement's own
// encoding (`BuildPushJudgement+Report.swift`).

extension BuildPushJudgement: CommandReport {
    var textLines: [String] {
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
        out.append("Verdict: \(FlagWords.common.apply(verdictText))")
        return out
    }
}
