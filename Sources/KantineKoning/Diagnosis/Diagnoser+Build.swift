import Foundation
import KKPushCore

/// Rule 2a: the signed build given, before it is used as evidence of the token's environment.
extension Diagnoser {
    /// The signed build as evidence of the token's environment: nil when there is none, when it is an
    /// entitlements file (a request, not a signature), another app's build, or signed without aps-environment
    /// (``buildFindings(_:)`` says which).
    static func signedEvidence(_ f: DiagnosisFacts) -> DiagnosisFacts.SignedBuild? {
        guard let signed = f.signedBuild, !signed.isRequest, signed.apsEnvironment != nil else { return nil }
        return otherApp(signed, topic: f.topic) == nil ? signed : nil
    }

    /// The topic's bundle id when the build is another app's, else nil. A wildcard bundle id (`nl.x.*`, from a
    /// profile) covers every bundle id it prefixes.
    static func otherApp(_ signed: DiagnosisFacts.SignedBuild, topic: String?) -> String? {
        guard let topic, !topic.isEmpty, let bundle = signed.bundleID, !bundle.isEmpty else { return nil }
        let base = baseBundleID(of: topic)
        if bundle == topic || bundle == base { return nil }
        if bundle.hasSuffix("*"), base.hasPrefix(bundle.dropLast()) { return nil }
        return base
    }

    static func buildFindings(_ f: DiagnosisFacts) -> [Finding] {
        guard let signed = f.signedBuild else { return [] }
        if signed.isRequest {
            var out = [
                Finding(
                    .info, .buildEntitlementsRequest,
                    message:
                        "The build given (\(signed.source)) is an entitlements file: what the project requests, not what a build was signed with.",
                    why:
                        "Xcode replaces aps-environment with the provisioning profile's value when it signs, so the file is no evidence of the token's environment; the diagnosis does not use it as such.",
                    fix: "Give the signed build (.ipa, .app or .xcarchive) installed on the phone to judge its tokens.")
            ]
            if signed.apsEnvironment == nil {
                out.append(
                    Finding(
                        .warning, .buildAPSNotRequested,
                        message: "The entitlements file (\(signed.source)) requests no aps-environment.",
                        why:
                            "A build signed from this project would have no aps-environment, and such an app gets no device token; the signed build itself decides.",
                        fix: signed.problems.first { $0.code == .buildApsMissing }?.fix
                            ?? "Enable Push Notifications for the target (Signing & Capabilities)."))
            }
            return out
        }
        if let base = otherApp(signed, topic: f.topic), let bundle = signed.bundleID {
            return [
                Finding(
                    .error, DiagnosisCode.buildOtherApp,
                    message:
                        "The build given (\(signed.source)) is \(bundle), but the topic \(quote(f.topic)) is the app \(base).",
                    why:
                        "A device token belongs to one app: another app's build says nothing about this one's tokens, so the diagnosis sets its signature aside.",
                    fix:
                        "Give the build of \(base) installed on the phone, or the topic of the app the build is (\(bundle))."
                )
            ]
        }
        if signed.apsEnvironment == nil {
            return [
                Finding(
                    .error, DiagnosisCode.buildAPSMissing,
                    message: "The build given (\(signed.source)) is signed without aps-environment.",
                    why:
                        "Without the entitlement registerForRemoteNotifications fails (\"no valid aps-environment entitlement string found\"): the app never gets a device token, so no push can reach it, whatever the backend does.",
                    fix: signed.problems.first { $0.code == .buildApsMissing }?.fix
                        ?? "Enable Push Notifications for the App ID and the target, regenerate the profile and re-sign."
                )
            ]
        }
        return []
    }
}
