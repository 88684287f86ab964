package import Foundation
package import KKPushBuild
package import KKPushCore
import KKPushSystem
package import KantineKoning

// `build inspect`'s report: the judgement's verdict and its JSON document (the stable field names scripts read). A
// command line renders the text from the same value. Library words (`(apiName)` placeholders) stay in the report's
// strings; the command line maps them when it prints.

extension BuildPushJudgement {
    /// Reads the build at `path` (an .ipa, .xcarchive, .app, profile, executable, entitlements file or
    /// DistributionSummary.plist; `-` for standard input) and judges it: profiles' signatures may chain to Apple's roots
    /// or `extraRoots`, expiry is judged at `now`, `scheme` is the scheme the caller was given by `schemeOption`.
    /// Standard input, a pipe, a FIFO or a name that is not UTF-8 is copied to a private file first (at most
    /// `streamLimit` bytes, never waiting forever for a writer), as a zip needs random access. Throws what the reader
    /// throws for a build it cannot read.
    package static func inspect(
        path: String, scheme: AppBuildScheme?, schemeOption: String, extraRoots: [Data], now: Date,
        streamLimit: Int = 2 << 30
    ) throws -> BuildPushJudgement {
        let roots = ProvisioningProfile.appleRoots + extraRoots
        let report: BuildReport
        if InputFile.needsCopy(path) {
            let pathExtension = URL(fileURLWithPath: path).pathExtension
            let copy = try InputFile.copyToTemporaryFile(
                path, what: "build", maximumSize: streamLimit, suffix: pathExtension.isEmpty ? "" : "." + pathExtension)
            defer {
                try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: copy).deletingLastPathComponent().path)
            }
            report = try BuildInspector.inspect(
                path: copy, name: path == "-" ? "standard input" : path, trustedRoots: roots, now: now)
        } else {
            report = try BuildInspector.inspect(path: path, trustedRoots: roots, now: now)
        }
        return BuildPushJudgement(report: report, schemeFlag: scheme, schemeOption: schemeOption, now: now)
    }

    /// The verdict in diagnose's shape: a code, a message, a fix (empty when there is nothing to do) and why.
    package struct Verdict: Encodable, Sendable, Equatable {
        package var code: Problem.Code
        package var message: String
        package var fix: String
        package var why: String

        /// Nothing is wrong.
        package var isOK: Bool { code == .ok }
    }

    /// The first error of the build, else of an extension, else no aps-environment, else ok.
    package var verdict: Verdict {
        if let first = problems.first(where: { $0.severity == .error }) {
            return Verdict(
                code: first.code, message: first.message, fix: first.fix,
                why: "the first error of the build: until it is fixed, its pushes fail or go to the wrong place")
        }
        if let ext = report.extensions.lazy.flatMap(\.problems).first(where: { $0.severity == .error }) {
            return Verdict(
                code: ext.code, message: "(extension) \(ext.message)", fix: ext.fix,
                why: "the first error of an app extension the build holds")
        }
        guard let token = report.tokenEnvironment else {
            return Verdict(
                code: .buildNoApsEnvironment, message: "no aps-environment",
                fix: "Enable the Push Notifications capability and sign with a profile that has it.",
                why: "without the entitlement the app gets no APNs token")
        }
        return scheme != nil
            ? Verdict(
                code: .ok, message: "ok: \(token) tokens, and the backend sends them to \(token).", fix: "",
                why: "the token environment the signature gives and the one the backend resolves agree")
            : Verdict(
                code: .ok,
                message:
                    "ok as far as the build tells: \(token) tokens (pass \(schemeOption) to judge what the app reports).",
                fix: "",
                why: "the signature tells the token environment; the configuration it was built with is unknown")
    }

    /// The verdict as one line of text (the text report's `Verdict:`, and JSON's `verdict_text`).
    package var verdictText: String {
        let v = verdict
        return v.code == .ok || v.code == .buildNoApsEnvironment ? v.message : "\(v.code): \(v.message)"
    }

    /// The configuration of the known scheme, and whether the backend misroutes it (nil when the scheme is unknown).
    package var misrouted: Bool? {
        scheme.flatMap { s in configurations.first { $0.scheme == s } }.map(\.misrouted)
    }
}

extension BuildPushJudgement: Encodable {
    private enum CodingKeys: String, CodingKey {
        case path, kind
        case bundleID = "bundle_id"
        case teamID = "team_id"
        case version
        case buildNumber = "build_number"
        case apsEnvironment = "aps_environment"
        case apsEnvironmentSource = "aps_environment_source"
        case tokenEnvironment = "token_environment"
        case apnsHost = "apns_host"
        case distribution
        case distributionSource = "distribution_source"
        case exportMethod = "export_method"
        case scheme
        case schemeSource = "scheme_source"
        case expires, entitlements, configurations
        case fixedAppBackendEnvironment = "fixed_app_backend_environment"
        case misrouted, problems, verdict
        case verdictText = "verdict_text"
        case ok, profile, executable, extensions
    }

    package func encode(to encoder: any Encoder) throws {
        let r = report
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(r.path, forKey: .path)
        try c.encode(r.kind.rawValue, forKey: .kind)
        try c.encode(r.bundleID, forKey: .bundleID)
        try c.encode(r.teamID, forKey: .teamID)
        try c.encode(r.version, forKey: .version)
        try c.encode(r.buildNumber, forKey: .buildNumber)
        try c.encode(r.apsEnvironment, forKey: .apsEnvironment)
        try c.encode(r.apsEnvironmentSource, forKey: .apsEnvironmentSource)
        try c.encode(r.tokenEnvironment?.rawValue, forKey: .tokenEnvironment)
        try c.encode(r.tokenEnvironment?.host, forKey: .apnsHost)
        try c.encode(r.distribution?.rawValue, forKey: .distribution)
        try c.encode(r.distributionSource, forKey: .distributionSource)
        try c.encode(r.exportMethod, forKey: .exportMethod)
        try c.encode(scheme?.rawValue, forKey: .scheme)
        try c.encode(schemeSource, forKey: .schemeSource)
        try c.encode(Self.time(r.expires), forKey: .expires)
        try c.encode(JSONValue.object(r.entitlements.mapValues(\.json)), forKey: .entitlements)
        try c.encode(configurations, forKey: .configurations)
        try c.encode(fixedServer?.rawValue, forKey: .fixedAppBackendEnvironment)
        try c.encode(misrouted, forKey: .misrouted)
        try c.encode(problems, forKey: .problems)
        try c.encode(verdict, forKey: .verdict)
        try c.encode(verdictText, forKey: .verdictText)
        try c.encode(!failed, forKey: .ok)
        // A profile and an executable only when the build has them (absent, not null: older readers tell by the key).
        try c.encodeIfPresent(r.profile.map(ProfileFields.init), forKey: .profile)
        try c.encodeIfPresent(r.executable.map(ExecutableFields.init), forKey: .executable)
        try c.encode(r.extensions.map(ExtensionFields.init), forKey: .extensions)
    }

    /// A time as RFC 3339 text, whatever the encoder's date strategy.
    static func time(_ date: Date?) -> String? { date?.formatted(.iso8601) }

    private struct ProfileFields: Encodable {
        var p: ProvisioningProfile
        enum CodingKeys: String, CodingKey {
            case name, uuid
            case teamIDs = "team_ids"
            case teamName = "team_name"
            case appIDName = "app_id_name"
            case applicationIdentifier = "application_identifier"
            case bundleID = "bundle_id"
            case platforms, created
            case expires
            case apsEnvironment = "aps_environment"
            case getTaskAllow = "get_task_allow"
            case betaReportsActive = "beta_reports_active"
            case distribution
            case distributionReason = "distribution_reason"
            case provisionedDevices = "provisioned_devices"
            case provisionsAllDevices = "provisions_all_devices"
            case xcodeManaged = "xcode_managed"
            case signature, certificates
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(p.name, forKey: .name)
            try c.encode(p.uuid, forKey: .uuid)
            try c.encode(p.teamIdentifiers, forKey: .teamIDs)
            try c.encode(p.teamName, forKey: .teamName)
            try c.encode(p.appIDName, forKey: .appIDName)
            try c.encode(p.applicationIdentifier, forKey: .applicationIdentifier)
            try c.encode(p.bundleID, forKey: .bundleID)
            try c.encode(p.platforms, forKey: .platforms)
            try c.encode(BuildPushJudgement.time(p.creationDate), forKey: .created)
            try c.encode(BuildPushJudgement.time(p.expirationDate), forKey: .expires)
            try c.encode(p.apsEnvironment, forKey: .apsEnvironment)
            try c.encode(p.getTaskAllow, forKey: .getTaskAllow)
            try c.encode(p.betaReportsActive, forKey: .betaReportsActive)
            try c.encode(p.distribution.rawValue, forKey: .distribution)
            try c.encode(p.distributionReason, forKey: .distributionReason)
            try c.encode(p.provisionedDevices?.count, forKey: .provisionedDevices)
            try c.encode(p.provisionsAllDevices, forKey: .provisionsAllDevices)
            try c.encode(p.isXcodeManaged, forKey: .xcodeManaged)
            try c.encode(SignatureFields(s: p.signature), forKey: .signature)
            try c.encode(p.developerCertificates.map(CertificateFields.init), forKey: .certificates)
        }
    }

    private struct SignatureFields: Encodable {
        var s: ProfileSignature
        enum CodingKeys: String, CodingKey {
            case state, signer, issuer, chain
            case trustAnchor = "trust_anchor"
            case detail
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(s.state.rawValue, forKey: .state)
            try c.encode(s.signerSubject, forKey: .signer)
            try c.encode(s.signerIssuer, forKey: .issuer)
            try c.encode(s.chain, forKey: .chain)
            try c.encode(s.trustAnchor, forKey: .trustAnchor)
            try c.encode(s.detail, forKey: .detail)
        }
    }

    private struct CertificateFields: Encodable {
        var certificate: SigningCertificate
        enum CodingKeys: String, CodingKey {
            case subject
            case commonName = "common_name"
            case teamID = "team_id"
            case notBefore = "not_before"
            case notAfter = "not_after"
            case sha1, serial
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(certificate.subject, forKey: .subject)
            try c.encode(certificate.commonName, forKey: .commonName)
            try c.encode(certificate.organizationalUnit, forKey: .teamID)
            try c.encode(BuildPushJudgement.time(certificate.notBefore), forKey: .notBefore)
            try c.encode(BuildPushJudgement.time(certificate.notAfter), forKey: .notAfter)
            try c.encode(certificate.sha1, forKey: .sha1)
            try c.encode(certificate.serialNumber, forKey: .serial)
        }
    }

    private struct ExecutableFields: Encodable {
        var e: BuildReport.Executable
        enum CodingKeys: String, CodingKey { case path, universal, slices }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(e.path, forKey: .path)
            try c.encode(e.isUniversal, forKey: .universal)
            try c.encode(e.slices.map(SliceFields.init), forKey: .slices)
        }
    }

    private struct SliceFields: Encodable {
        var s: MachOSlice
        enum CodingKeys: String, CodingKey {
            case architecture, signed, identifier
            case teamID = "team_id"
            case apsEnvironment = "aps_environment"
            case derEntitlements = "der_entitlements"
            case xmlEntitlements = "xml_entitlements"
            case cmsSignature = "cms_signature"
            case adHoc = "ad_hoc"
            case entitlementDisagreements = "entitlement_disagreements"
        }
        func encode(to encoder: any Encoder) throws {
            let sig = s.codeSignature
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(s.architecture, forKey: .architecture)
            try c.encode(sig != nil, forKey: .signed)
            try c.encode(sig?.identifier, forKey: .identifier)
            try c.encode(sig?.teamIdentifier, forKey: .teamID)
            try c.encode(
                sig?.effectiveEntitlements?.dictionaryValue.flatMap(BuildInspector.apsEnvironment(in:)),
                forKey: .apsEnvironment)
            try c.encode(sig?.derEntitlements != nil, forKey: .derEntitlements)
            try c.encode(sig?.entitlements != nil, forKey: .xmlEntitlements)
            try c.encode(sig?.hasCMSSignature ?? false, forKey: .cmsSignature)
            try c.encode(sig?.isAdHoc ?? false, forKey: .adHoc)
            try c.encode(sig?.entitlementDisagreements ?? [], forKey: .entitlementDisagreements)
        }
    }

    private struct ExtensionFields: Encodable {
        var ext: BuildReport
        enum CodingKeys: String, CodingKey {
            case path
            case bundleID = "bundle_id"
            case apsEnvironment = "aps_environment"
            case distribution, expires, problems
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(ext.path, forKey: .path)
            try c.encode(ext.bundleID, forKey: .bundleID)
            try c.encode(ext.apsEnvironment, forKey: .apsEnvironment)
            try c.encode(ext.distribution?.rawValue, forKey: .distribution)
            try c.encode(BuildPushJudgement.time(ext.expires), forKey: .expires)
            try c.encode(ext.problems, forKey: .problems)
        }
    }
}

extension BuildPushJudgement.Configuration: Encodable {
    private enum CodingKeys: String, CodingKey {
        case scheme
        case buildConfiguration = "build_configuration"
        case buildEnvironment = "build_environment"
        case backendEnvironment = "backend_environment"
        case misrouted
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(scheme.rawValue, forKey: .scheme)
        try c.encode(scheme.buildConfiguration, forKey: .buildConfiguration)
        try c.encode(buildEnvironment, forKey: .buildEnvironment)
        try c.encode(server.rawValue, forKey: .backendEnvironment)
        try c.encode(misrouted, forKey: .misrouted)
    }
}
