public import Foundation
import KKPushCore
import KKPushSystem

/// Reads a build as a CI job or a developer has it and reports what it is signed for.
///
/// Inputs: an `.ipa` (read member by member, never unpacked), an `.xcarchive`, an `.app` folder, an
/// `embedded.mobileprovision` / `.provisionprofile`, a bare Mach-O executable, an `.entitlements` (or `.xcent`)
/// property list, and an Xcode `DistributionSummary.plist` (with the `ExportOptions.plist` beside it, if any).
///
/// Which `aps-environment` is the truth: the executable's code-signature entitlements (the DER blob where present,
/// which iOS 15 and later enforce, else the XML blob), because that is what the system reads when the app registers
/// for remote notifications; the embedded profile's entitlements next (the signature must be a subset of them);
/// when the two disagree, the report says so. An `.entitlements` file from an Xcode project is only the request:
/// Xcode replaces `aps-environment` from the profile when it signs.
public enum BuildInspector {
    /// Inspects the build at `path`.
    ///
    /// - Parameters:
    ///   - trustedRoots: DER roots a profile's signature must chain to (default: Apple Root CA, pinned).
    ///   - now: the time expiry is judged at.
    /// - Throws: ``KKPushError`` when the input cannot be read at all (missing, a kind kkpush does not know, damaged
    ///   beyond reading); problems in a readable build are ``BuildReport/problems``, not errors.
    ///   - name: how messages and the report name the build (default: `path`): the name the user gave, when `path`
    ///     is a copy of it (a pipe copied by ``InputFile/copyToTemporaryFile(_:what:flag:maximumSize:suffix:)``).
    public static func inspect(
        path realPath: String, name: String? = nil, trustedRoots: [Data] = ProvisioningProfile.appleRoots,
        now: Date = Date()
    ) throws -> BuildReport {
        let path = name ?? realPath
        let url = URL(fileURLWithPath: realPath)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw KKPushError(
                code: .buildFileMissing, message: "The build \(path) does not exist.",
                fix: "Pass the path of an .ipa, .xcarchive, .app, profile, executable or entitlements file.")
        }
        // A zip is read at any offset, and a FIFO without a writer would hold the open forever: a pipe is copied to
        // a file first (InputFile.copyToTemporaryFile), never read here.
        if let kind = InputFile.specialKind(realPath) {
            throw KKPushError(
                code: .fileNotRegular,
                message: "The build \(path) is \(kind), not a file kkpush can read at any offset.",
                fix: "Copy it to a file first and pass that file.")
        }
        let context = Context(trustedRoots: trustedRoots, now: now)
        if isDirectory.boolValue { return try inspectFolder(url, path: path, context) }
        return try inspectFile(url, path: path, context)
    }

    struct Context {
        var trustedRoots: [Data]
        var now: Date
    }

    // MARK: Folders

    static func inspectFolder(_ url: URL, path: String, _ context: Context) throws -> BuildReport {
        let tree = try DirectoryFileTree(url: url, name: path)
        let files = Set(tree.paths)
        if url.pathExtension == "xcarchive"
            || (files.contains("Info.plist") && tree.paths.contains { $0.hasPrefix("Products/") })
        {
            return try inspectArchive(tree, path: path, context)
        }
        if files.contains("DistributionSummary.plist") {
            return try inspectDistributionSummary(
                tree.read("DistributionSummary.plist", limit: BuildReadLimit.smallFile),
                exportOptions: files.contains("ExportOptions.plist")
                    ? try? tree.read("ExportOptions.plist", limit: BuildReadLimit.smallFile) : nil,
                path: path)
        }
        if files.contains("Info.plist") || files.contains("Contents/Info.plist") {
            var report = BuildReport(path: path, kind: .app)
            try readBundle(tree, prefix: files.contains("Info.plist") ? "" : "Contents/", into: &report, context)
            return report
        }
        throw KKPushError(
            code: .buildKindUnknown,
            message:
                "\(path) is a folder but not an .app (no Info.plist), an .xcarchive (no Products/) or an export folder (no DistributionSummary.plist).",
            fix: "Pass the .ipa, .app or .xcarchive itself.")
    }

    static func inspectArchive(_ tree: DirectoryFileTree, path: String, _ context: Context) throws -> BuildReport {
        var report = BuildReport(path: path, kind: .xcarchive)
        let info = try PropertyListValue.parse(
            tree.read("Info.plist", limit: BuildReadLimit.smallFile), what: "\(path)/Info.plist"
        ).value
        report.schemeName = info["SchemeName"]?.stringValue
        guard let appPath = info["ApplicationProperties"]?["ApplicationPath"]?.stringValue else {
            throw KKPushError(
                code: .buildArchiveNoApp,
                message:
                    "\(path)/Info.plist has no ApplicationProperties.ApplicationPath: the archive holds no application (a framework or a command-line tool?).",
                fix: "Archive the app target (Product ▸ Archive with the app's scheme).")
        }
        let prefix = "Products/" + appPath.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/"
        guard tree.paths.contains(where: { $0.hasPrefix(prefix) }) else {
            throw KKPushError(
                code: .buildArchiveNoApp,
                message: "\(path): Info.plist names \(appPath), which is not in Products/.",
                fix: "Check the archive is whole.")
        }
        try readBundle(tree, prefix: prefix, into: &report, context)
        return report
    }

    // MARK: Files

    static func inspectFile(_ url: URL, path: String, _ context: Context) throws -> BuildReport {
        let head = try readHead(url, path: path)
        if head.starts(with: [0x50, 0x4B, 0x03, 0x04]) || head.starts(with: [0x50, 0x4B, 0x05, 0x06]) {
            let tree = try ZipFileTree(url: url, name: path)
            var report = BuildReport(path: path, kind: .ipa)
            let apps = Set(
                tree.paths.compactMap { p -> String? in
                    let parts = p.split(separator: "/", omittingEmptySubsequences: false)
                    guard parts.count > 2, parts[0] == "Payload", parts[1].hasSuffix(".app") else { return nil }
                    return "Payload/\(parts[1])/"
                })
            guard let app = apps.sorted().first else {
                throw KKPushError(
                    code: .buildIpaNoApp,
                    message: "\(path) is a zip without Payload/<App>.app/: not an .ipa.",
                    fix: "Pass the .ipa Xcode exported (it holds Payload/<App>.app).")
            }
            if apps.count > 1 {
                report.problems.append(
                    Problem(
                        .warning, code: .buildIpaSeveralApps,
                        message: "\(path) holds \(apps.count) apps under Payload/; the inspector read \(app).",
                        fix: "An .ipa holds one app: check how it was made."))
            }
            try readBundle(tree, prefix: app, into: &report, context)
            return report
        }
        let data = try readWhole(url, path: path, limit: BuildReadLimit.executable)
        if MachOFile.hasMachOMagic(head) {
            var report = BuildReport(path: path, kind: .executable)
            try readExecutable(data, path: path, into: &report)
            return report
        }
        if head.first == 0x30 {
            var report = BuildReport(path: path, kind: .profile)
            try readProfile(data, path: path, into: &report, context)
            return report
        }
        if head.starts(with: Array("bplist".utf8)) || String(decoding: head.prefix(64), as: UTF8.self).contains("<") {
            return try inspectPlistFile(data, url: url, path: path, context)
        }
        throw KKPushError(
            code: .buildKindUnknown,
            message:
                "\(path) is not a build the inspector can read: not a zip (.ipa), a Mach-O executable, a CMS profile or a property list.",
            fix:
                "Pass an .ipa, .xcarchive, .app, .mobileprovision/.provisionprofile, executable, .entitlements or DistributionSummary.plist."
        )
    }

    static func inspectPlistFile(_ data: Data, url: URL, path: String, _ context: Context) throws -> BuildReport {
        let value = try PropertyListValue.parse(data, what: path).value
        guard let dict = value.dictionaryValue else {
            throw KKPushError(
                code: .buildKindUnknown, message: "\(path) is a property list, but not a dictionary.",
                fix: "Pass an entitlements file, a profile or a DistributionSummary.plist.")
        }
        if dict["Entitlements"] != nil, dict["ExpirationDate"] != nil {
            var report = BuildReport(path: path, kind: .profile)
            try readProfile(data, path: path, into: &report, context)
            return report
        }
        if !dict.isEmpty, dict.values.allSatisfy({ $0.arrayValue?.first?["entitlements"] != nil }) {
            let options = url.deletingLastPathComponent().appendingPathComponent("ExportOptions.plist")
            return try inspectDistributionSummary(
                data, exportOptions: try? readWhole(options, path: options.path, limit: BuildReadLimit.smallFile),
                path: path)
        }
        if dict["CFBundleIdentifier"] != nil {
            throw KKPushError(
                code: .buildKindUnknown,
                message: "\(path) is an app's Info.plist, which says nothing about signing.",
                fix: "Pass the .app folder, the .ipa or the .xcarchive it belongs to.")
        }
        if dict["method"] != nil, dict["aps-environment"] == nil {
            throw KKPushError(
                code: .buildKindUnknown,
                message:
                    "\(path) looks like an ExportOptions.plist (method \(dict["method"]?.stringValue ?? "?")): it says how to export, not what was signed.",
                fix: "Pass the exported .ipa, or the DistributionSummary.plist next to it.")
        }
        var report = BuildReport(path: path, kind: .entitlements)
        report.entitlements = dict
        report.apsEnvironment = apsEnvironment(in: dict)
        report.apsEnvironmentSource = "the entitlements file \(url.lastPathComponent) (a request, not a signature)"
        report.problems.append(
            Problem(
                .info, code: .buildEntitlementsRequest,
                message:
                    "An entitlements file is what the project asks for; Xcode replaces aps-environment with the provisioning profile's value when it signs (development for development profiles, production for ad hoc, enterprise and App Store Connect).",
                fix: "Inspect the signed build (.ipa, .app or .xcarchive) to see what it got."))
        if report.apsEnvironment == nil {
            report.problems.append(
                Problem(
                    .error, code: .buildApsMissing,
                    message: "The entitlements have no aps-environment: the Push Notifications capability is off.",
                    fix: apsMissingFix(
                        applicationIdentifier: dict["application-identifier"]?.stringValue, bundleID: nil,
                        signed: false)))
        }
        return report
    }

    // MARK: Bundles

    static func readBundle(
        _ tree: any BuildFileTree, prefix: String, into report: inout BuildReport, _ context: Context
    )
        throws
    {
        let name = "\(tree.name)\(prefix.isEmpty ? "" : ": " + String(prefix.dropLast()))"
        let infoPath = prefix + "Info.plist"
        guard tree.paths.contains(infoPath) else {
            throw KKPushError(
                code: .buildBundleNoInfo,
                message: "\(name) has no Info.plist: not an app bundle.", fix: "Pass the .app or .ipa Xcode made.")
        }
        let info = try PropertyListValue.parse(
            tree.read(infoPath, limit: BuildReadLimit.smallFile), what: "\(tree.name): \(infoPath)"
        ).value
        report.bundleID = info["CFBundleIdentifier"]?.stringValue
        report.version = info["CFBundleShortVersionString"]?.stringValue
        report.buildNumber = info["CFBundleVersion"]?.stringValue
        let macOS = prefix.hasSuffix("Contents/")
        let profilePath = prefix + (macOS ? "embedded.provisionprofile" : "embedded.mobileprovision")
        if tree.paths.contains(profilePath) {
            try readProfile(
                tree.read(profilePath, limit: BuildReadLimit.smallFile), path: "\(tree.name): \(profilePath)",
                into: &report, context)
        } else {
            report.problems.append(
                Problem(
                    .info, code: .buildNoEmbeddedProfile,
                    message:
                        "\(name) has no \(macOS ? "embedded.provisionprofile" : "embedded.mobileprovision"): an App Store download (Apple strips it), a simulator build, or an unsigned one.",
                    fix:
                        "The executable's signature still tells its aps-environment; inspect the exported .ipa for the profile."
                ))
        }
        if let executable = info["CFBundleExecutable"]?.stringValue, !executable.isEmpty, !executable.contains("/") {
            let execPath = prefix + (macOS ? "MacOS/" : "") + executable
            if tree.paths.contains(execPath) {
                try readExecutable(
                    tree.read(execPath, limit: BuildReadLimit.executable), path: "\(tree.name): \(execPath)",
                    into: &report)
            } else {
                report.problems.append(
                    Problem(
                        .error, code: .buildExecutableMissing,
                        message: "\(name): Info.plist names the executable \(executable), which is not there.",
                        fix: "Check the bundle is whole."))
            }
        } else {
            report.problems.append(
                Problem(
                    .warning, code: .buildExecutableMissing,
                    message: "\(name): Info.plist has no usable CFBundleExecutable.", fix: "Check the bundle is whole.")
            )
        }
        if let bundle = report.bundleID, let appID = report.profile?.bundleID, !bundleMatches(bundle, appID) {
            report.problems.append(
                Problem(
                    .error, code: .buildBundleIdMismatch,
                    message:
                        "Info.plist says \(bundle), but the profile is for \(appID): the device refuses to install it, and its tokens are for the profile's app.",
                    fix: "Sign with a profile for \(bundle)."))
        }
        // App extensions: each its own profile and signature (a Notification Service Extension needs none of its own
        // push entitlement, but a wrong profile there still fails the install).
        let plugins = Set(
            tree.paths.compactMap { p -> String? in
                guard p.hasPrefix(prefix + "PlugIns/") else { return nil }
                let rest = p.dropFirst((prefix + "PlugIns/").count).split(separator: "/")
                guard let first = rest.first, first.hasSuffix(".appex"), rest.count > 1 else { return nil }
                return prefix + "PlugIns/" + first + "/"
            })
        for plugin in plugins.sorted() {
            var sub = BuildReport(path: "\(tree.name): \(plugin.dropLast())", kind: .app)
            do {
                try readBundle(tree, prefix: plugin, into: &sub, context)
            } catch let error as KKPushError {
                sub.problems.append(
                    Problem(.error, code: Problem.Code(error.code), message: error.message, fix: error.fix ?? ""))
            }
            // An extension (a Notification Service Extension, a widget) registers for no pushes of its own: the app's
            // token carries them. Without aps-environment it is fine; say so rather than fail the build.
            sub.problems = sub.problems.map { p in
                guard p.code == .buildApsMissing else { return p }
                return Problem(
                    .info, code: p.code,
                    message: p.message
                        + " For an app extension that is normal: pushes reach it through the app's token.",
                    fix: "Nothing, unless the extension itself registers for remote notifications.")
            }
            report.extensions.append(sub)
        }
        decide(&report)
    }

    static func bundleMatches(_ bundle: String, _ appID: String) -> Bool {
        if appID == "*" || appID == bundle { return true }
        if appID.hasSuffix(".*") { return bundle.hasPrefix(String(appID.dropLast(1))) }
        return false
    }

    // MARK: Parts

    static func readProfile(_ data: Data, path: String, into report: inout BuildReport, _ context: Context) throws {
        let profile = try ProvisioningProfile.parse(data, what: path, trustedRoots: context.trustedRoots)
        report.profile = profile
        report.problems += profileProblems(profile, path: path, now: context.now)
        if report.kind == .profile {
            report.bundleID = profile.bundleID
            report.teamID = profile.teamIdentifiers.first
            decide(&report)
        }
    }

    /// An expired profile, judged by its distribution (what Apple documents decides it):
    ///
    /// - **App Store Connect** (TestFlight, the App Store): a warning, not a delivery verdict. Apple re-signs the
    ///   builds it distributes, so installed copies keep launching and registering; what the expiry stops is the
    ///   next upload. Apple's "Certificates" support page ("What happens if my certificate expires or is revoked?",
    ///   iOS Distribution Certificate (App Store)): "your existing apps on the App Store will not be affected.
    ///   However, you will no longer be able to submit new apps or updates".
    /// - **In-house (enterprise)**: an error. The same page, iOS Distribution Certificate (In-house, Internal Use
    ///   Apps): "Users will no longer be able to run apps that have been signed with this certificate"; the
    ///   Apple Developer Enterprise Program's distribution guide ("Distributing proprietary in-house apps") has the
    ///   device check the certificate and the embedded profile when the app launches, so an expired in-house
    ///   profile stops it too.
    /// - **Ad hoc** and **development**: an error. The device validates the embedded profile (its devices list and
    ///   expiry) when the app launches ("Distributing your app to registered devices"); an expired one no longer
    ///   launches until a build with a renewed profile is installed. Apple documents no exception for these.
    /// - **Developer ID** (macOS): an error; the same support page: "you must ensure your Developer ID provisioning
    ///   profile is valid in order for installed versions of your application to run".
    static func expiredProfileProblem(_ shown: String, expiry: Date, distribution: ProfileDistribution) -> Problem {
        let when = expiry.formatted(.iso8601)
        switch distribution {
        case .appStore:
            return Problem(
                .warning, code: .buildProfileExpired,
                message:
                    "\(shown) (App Store Connect) expired on \(when). Not a delivery problem: Apple re-signs TestFlight and App Store installs, so installed copies keep launching and getting their tokens; App Store Connect refuses a new upload signed with it.",
                fix: "Renew the profile (or let Xcode manage signing) before the next upload to App Store Connect.")
        case .enterprise:
            return Problem(
                .error, code: .buildProfileExpired,
                message:
                    "\(shown) (in-house) expired on \(when): an in-house app signed with it no longer launches, so it registers for no pushes and receives none.",
                fix:
                    "Renew the in-house profile (and the distribution certificate if it expired too), re-sign and redistribute the app; do it before the expiry date next time."
            )
        case .adHoc, .development:
            let kind = distribution == .adHoc ? "ad hoc" : "development"
            return Problem(
                .error, code: .buildProfileExpired,
                message:
                    "\(shown) (\(kind)) expired on \(when): the device checks the embedded profile when the app launches, so a build signed with it no longer installs or launches, and gets no pushes.",
                fix:
                    "Renew the profile in the developer portal (or let Xcode manage signing), re-sign and install the build again."
            )
        case .developerID:
            return Problem(
                .error, code: .buildProfileExpired,
                message:
                    "\(shown) (Developer ID) expired on \(when): installed copies that use its capabilities no longer run.",
                fix: "Renew the Developer ID profile, re-sign and ship the build again.")
        }
    }

    /// The fix for a build without `aps-environment`. A wildcard App ID (`TEAMID.*`, `TEAMID.nl.x.*`) cannot have
    /// the Push Notifications capability (Apple, Developer Account Help, "Register an App ID": wildcard App IDs
    /// cannot use capabilities such as Push Notifications; an explicit App ID is needed), so "enable Push
    /// Notifications for the App ID" is impossible there: the fix is an explicit App ID.
    public static func apsMissingFix(applicationIdentifier: String?, bundleID: String?, signed: Bool = true) -> String {
        if let appID = applicationIdentifier, appID.hasSuffix("*") {
            let explicit =
                bundleID.map { "an explicit App ID for \($0)" } ?? "an explicit App ID for the app's bundle id"
            return
                "The App ID \(appID) is a wildcard, and a wildcard App ID cannot have Push Notifications: register \(explicit) in the developer portal, enable Push Notifications for it, make a profile for it\(signed ? " and re-sign" : "") (or let Xcode manage signing)."
        }
        return signed
            ? "Enable Push Notifications for the App ID (developer portal) and the target (Signing & Capabilities), regenerate the profile and re-sign."
            : "Enable Push Notifications for the target (Signing & Capabilities)."
    }

    static func profileProblems(_ profile: ProvisioningProfile, path: String, now: Date) -> [Problem] {
        var out: [Problem] = []
        let shown = profile.name.map { "The profile \"\($0)\"" } ?? "The profile"
        if let created = profile.creationDate, now < created {
            out.append(
                Problem(
                    .info, code: .buildTimeBeforeCreation,
                    message:
                        "The time judged at, \(now.formatted(.iso8601)), is before the profile was created (\(created.formatted(.iso8601))): no build was signed with it then.",
                    fix:
                        "Judge at a time after \(created.formatted(.iso8601)) (the time the build was installed or run)."
                ))
        }
        if let expiry = profile.expirationDate {
            let days = Int((expiry.timeIntervalSince(now) / 86_400).rounded(.down))
            if expiry <= now {
                out.append(expiredProfileProblem(shown, expiry: expiry, distribution: profile.distribution))
            } else if days < 30 {
                out.append(
                    Problem(
                        .warning, code: .buildProfileExpiring,
                        message: "\(shown) expires in \(days) day(s), on \(expiry.formatted(.iso8601)).",
                        fix: "Renew it before then and ship a build signed with the new one."))
            }
        }
        switch profile.signature.state {
        case .verified: break
        case .chainUntrusted:
            out.append(
                Problem(
                    .warning, code: .buildProfileUntrusted,
                    message:
                        "\(shown)'s CMS signature verifies, but its signer (\(profile.signature.signerSubject ?? "unknown")) does not chain to Apple Root CA: not a profile Apple issued. \(profile.signature.detail)",
                    fix: "Download the profile from the developer portal or let Xcode manage signing."))
        case .invalid:
            out.append(
                Problem(
                    .error, code: .buildProfileSignatureInvalid,
                    message:
                        "\(shown)'s CMS signature does not verify: the profile was changed after Apple signed it. \(profile.signature.detail)",
                    fix: "Use the profile as downloaded; devices refuse a tampered one."))
        case .unsigned:
            out.append(
                Problem(
                    .warning, code: .buildProfileUnsigned,
                    message: "\(path) is a bare property list, not a signed profile: nothing proves Apple issued it.",
                    fix: "Pass the .mobileprovision itself."))
        }
        if profile.apsEnvironment == nil {
            out.append(
                Problem(
                    .error, code: .buildApsMissing,
                    message:
                        "\(shown) has no aps-environment entitlement: the App ID's Push Notifications capability is off, so the app cannot register for remote notifications.",
                    fix: apsMissingFix(
                        applicationIdentifier: profile.applicationIdentifier, bundleID: nil)))
        }
        let expired = profile.developerCertificates.filter { ($0.notAfter ?? .distantFuture) <= now }
        if let first = expired.first {
            let certificates = profile.developerCertificates.count
            let which =
                expired.count == 1
                ? "The signing certificate \(first.commonName ?? first.subject) (SHA-1 \(first.sha1)) expired on \(first.notAfter.map { $0.formatted(.iso8601) } ?? "?")"
                : "\(expired.count) of the profile's \(certificates) signing certificates have expired (\(first.commonName ?? first.subject), SHA-1 \(first.sha1), on \(first.notAfter.map { $0.formatted(.iso8601) } ?? "?"), and others)"
            // In-house: Apple's "Certificates" support page: "Users will no longer be able to run apps that have
            // been signed with this certificate". When every certificate the profile lists has expired, the one
            // the build was signed with has too.
            let inHouseStopped = profile.distribution == .enterprise && expired.count == certificates
            out.append(
                Problem(
                    inHouseStopped ? .error : .warning, code: .buildCertificateExpired,
                    message:
                        "\(which)\(expired.count == certificates ? "; the profile lists no valid one, so nothing new can be signed with it" : "")\(inHouseStopped ? ". An in-house app signed with an expired distribution certificate no longer launches" : "").",
                    fix: inHouseStopped
                        ? "Create a new in-house distribution certificate, regenerate the profile with it, re-sign and redistribute the app."
                        : "Create a new certificate and regenerate the profile with it."))
        }
        return out
    }

    static func readExecutable(_ data: Data, path: String, into report: inout BuildReport) throws {
        let file = try MachOFile.parse(data, what: path)
        report.executable = BuildReport.Executable(path: path, isUniversal: file.isUniversal, slices: file.slices)
        for slice in file.slices {
            if let disagreements = slice.codeSignature?.entitlementDisagreements, !disagreements.isEmpty {
                report.problems.append(
                    Problem(
                        .warning, code: .buildEntitlementsFormsDisagree,
                        message:
                            "\(path) (\(slice.architecture)): the XML and DER entitlements of the signature disagree: \(disagreements.joined(separator: "; ")). iOS 15 and later enforce the DER form.",
                        fix: "Re-sign with a current codesign (it writes both forms from one plist)."))
            }
        }
        if file.slices.allSatisfy({ $0.codeSignature == nil }) {
            report.problems.append(
                Problem(
                    .warning, code: .buildUnsigned,
                    message: "\(path) has no code signature: a simulator or unsigned build.",
                    fix: "Inspect the signed build (an exported .ipa) to see its aps-environment."))
        }
        if report.kind == .executable { decide(&report) }
    }

    // MARK: The verdict

    /// The `aps-environment` of a set of entitlements (iOS key, else the macOS `com.apple.developer.` one).
    public static func apsEnvironment(in entitlements: [String: PropertyListValue]) -> String? {
        (entitlements["aps-environment"] ?? entitlements["com.apple.developer.aps-environment"])?.stringValue
    }

    /// Decides the signed aps-environment, its source, the team and the distribution from what was read.
    static func decide(_ report: inout BuildReport) {
        let signed =
            report.executable?.slices.compactMap { slice -> (String, PropertyListValue?)? in
                guard let signature = slice.codeSignature else { return nil }
                return (slice.architecture, signature.effectiveEntitlements)
            } ?? []
        let executableEnvironments = Set(signed.compactMap { $0.1?.dictionaryValue.flatMap(apsEnvironment(in:)) })
        let firstSignature = report.executable?.slices.lazy.compactMap(\.codeSignature).first
        if report.teamID == nil {
            report.teamID = firstSignature?.teamIdentifier ?? report.profile?.teamIdentifiers.first
        }
        if report.bundleID == nil { report.bundleID = firstSignature?.identifier ?? report.profile?.bundleID }
        let profileEnvironment = report.profile?.apsEnvironment

        if !signed.isEmpty {
            if let entitlements = signed.first?.1?.dictionaryValue { report.entitlements = entitlements }
            if executableEnvironments.count > 1 {
                report.problems.append(
                    Problem(
                        .error, code: .buildSlicesDisagree,
                        message:
                            "The executable's slices are signed for different aps-environments (\(executableEnvironments.sorted().joined(separator: ", "))): devices of one architecture get the other environment's tokens.",
                        fix: "Re-sign every slice with one profile."))
            }
            report.apsEnvironment = executableEnvironments.sorted().first
            let form = firstSignature?.derEntitlements != nil ? "DER entitlements" : "XML entitlements"
            report.apsEnvironmentSource = "the executable's code signature (\(form))"
            if report.apsEnvironment == nil, signed.allSatisfy({ $0.1 == nil }) {
                // Signed without entitlements at all: fall back on the profile, and say so.
                report.apsEnvironment = profileEnvironment
                report.apsEnvironmentSource =
                    profileEnvironment != nil ? "the embedded profile (the signature carries no entitlements)" : nil
            } else if report.apsEnvironment == nil, !report.problems.contains(where: { $0.code == .buildApsMissing }) {
                report.problems.append(
                    Problem(
                        .error, code: .buildApsMissing,
                        message:
                            "The executable is signed without aps-environment: registerForRemoteNotifications fails (\"no valid aps-environment entitlement string found\") and the app gets no token at all.",
                        fix: apsMissingFix(
                            applicationIdentifier: report.entitlements["application-identifier"]?.stringValue
                                ?? report.profile?.applicationIdentifier,
                            bundleID: report.bundleID)))
            }
            if let profileEnvironment, let executable = report.apsEnvironment, profileEnvironment != executable {
                report.problems.append(
                    Problem(
                        .error, code: .buildProfileSignatureDisagree,
                        message:
                            "The embedded profile says aps-environment \(profileEnvironment), the executable's signature says \(executable): the signature is what the system enforces, so the build's tokens are \(APNsEnvironment(entitlementValue: executable)?.rawValue ?? executable) tokens. The build was re-signed, or its profile replaced, by hand.",
                        fix: "Re-sign the whole bundle with one profile (Xcode's export, or fastlane sigh resign)."))
            }
        } else if let profile = report.profile {
            report.entitlements = profile.entitlements
            report.apsEnvironment = profileEnvironment
            report.apsEnvironmentSource = profileEnvironment != nil ? "the provisioning profile's entitlements" : nil
        }
        if let profile = report.profile {
            report.distribution = profile.distribution
            report.distributionSource = "the provisioning profile: \(profile.distributionReason)"
        } else if let getTaskAllow = report.entitlements["get-task-allow"]?.boolValue {
            // No profile (an App Store download, or an executable alone): the entitlements tell part of it.
            if getTaskAllow {
                report.distribution = .development
                report.distributionSource =
                    "the signature's get-task-allow is true (only development profiles allow it)"
            } else if report.entitlements["beta-reports-active"]?.boolValue == true {
                report.distribution = .appStore
                report.distributionSource =
                    "the signature's beta-reports-active is true (App Store Connect distribution: TestFlight or the App Store)"
            } else {
                report.distributionSource =
                    "not told: get-task-allow is false (ad hoc, enterprise or App Store Connect); pass the embedded profile to tell which"
            }
        }
    }

    // MARK: Xcode's export summary

    static func inspectDistributionSummary(_ data: Data, exportOptions: Data?, path: String) throws -> BuildReport {
        var report = BuildReport(path: path, kind: .distributionSummary)
        let value = try PropertyListValue.parse(data, what: path).value
        guard let dict = value.dictionaryValue,
            let (ipa, items) = dict.sorted(by: { $0.key < $1.key }).first.map({ ($0.key, $0.value.arrayValue ?? []) }),
            let main = items.first(where: { ($0["name"]?.stringValue ?? "").hasSuffix(".app") }) ?? items.first
        else {
            throw KKPushError(
                code: .buildSummaryUnreadable,
                message:
                    "\(path) is not a DistributionSummary.plist: expected {\"<App>.ipa\": [{name, entitlements, …}]}.",
                fix:
                    "Pass the DistributionSummary.plist xcodebuild -exportArchive (or Xcode Cloud) wrote next to the .ipa."
            )
        }
        let entitlements = main["entitlements"]?.dictionaryValue ?? [:]
        report.entitlements = entitlements
        report.apsEnvironment = apsEnvironment(in: entitlements)
        report.apsEnvironmentSource = "DistributionSummary.plist: the entitlements \(ipa) was signed with"
        report.teamID =
            main["team"]?["id"]?.stringValue ?? entitlements["com.apple.developer.team-identifier"]?.stringValue
        report.version = main["versionNumber"]?.stringValue
        report.buildNumber = main["buildNumber"]?.stringValue
        if let appID = entitlements["application-identifier"]?.stringValue, let team = report.teamID,
            appID.hasPrefix(team + ".")
        {
            report.bundleID = String(appID.dropFirst(team.count + 1))
        }
        if let exportOptions,
            let method = try? PropertyListValue.parse(exportOptions, what: "ExportOptions.plist").value["method"]?
                .stringValue
        {
            report.exportMethod = method
            // Xcode 15.3 renamed the methods: app-store → app-store-connect, ad-hoc → release-testing,
            // development → debugging; both spellings are in use.
            let map: [String: ProfileDistribution] = [
                "app-store": .appStore, "app-store-connect": .appStore, "ad-hoc": .adHoc, "release-testing": .adHoc,
                "enterprise": .enterprise, "development": .development, "debugging": .development,
                "developer-id": .developerID,
            ]
            if let d = map[method] {
                report.distribution = d
                report.distributionSource = "ExportOptions.plist: method \(method)"
            }
        }
        if report.distribution == nil {
            if entitlements["get-task-allow"]?.boolValue == true {
                report.distribution = .development
                report.distributionSource = "get-task-allow is true (only development profiles allow it)"
            } else if entitlements["beta-reports-active"]?.boolValue == true {
                report.distribution = .appStore
                report.distributionSource = "beta-reports-active is true (App Store Connect distribution)"
            } else {
                report.distributionSource =
                    "not told: get-task-allow is false (ad hoc, enterprise or App Store Connect) and no ExportOptions.plist is beside it"
            }
        }
        if report.apsEnvironment == nil {
            report.problems.append(
                Problem(
                    .error, code: .buildApsMissing,
                    message:
                        "\(ipa) was signed without aps-environment: the app cannot register for remote notifications.",
                    fix: apsMissingFix(
                        applicationIdentifier: entitlements["application-identifier"]?.stringValue,
                        bundleID: report.bundleID)))
        }
        if let expires = main["certificate"]?["dateExpires"]?.dateValue, expires <= Date() {
            report.problems.append(
                Problem(
                    .warning, code: .buildCertificateExpired,
                    message:
                        "The signing certificate (SHA-1 \(main["certificate"]?["SHA1"]?.stringValue ?? "?")) expired on \(expires.formatted(.iso8601)).",
                    fix: "Create a new distribution certificate."))
        }
        return report
    }

    // MARK: Reading files

    static func readHead(_ url: URL, path: String) throws -> Data {
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            let head = try handle.read(upToCount: 4096) ?? Data()
            if head.isEmpty {
                throw KKPushError(
                    code: .buildFileEmpty, message: "The build \(path) is empty.",
                    fix: "Check the file was copied whole.")
            }
            return head
        } catch let error as KKPushError {
            throw error
        } catch {
            throw KKPushError(
                code: .buildFileUnreadable, message: "The build \(path) cannot be read.",
                fix: "Check its permissions.",
                underlying: KKPushError.Cause(String(describing: error)))
        }
    }

    static func readWhole(_ url: URL, path: String, limit: Int) throws -> Data {
        let size = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
        if size > limit {
            throw KKPushError(
                code: .buildMemberTooLarge, message: "\(path) is \(size) bytes, over kkpush's limit of \(limit).",
                fix: "Pass the .ipa, .app or profile rather than a large unrelated file.")
        }
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            return try handle.read(upToCount: limit) ?? Data()
        } catch {
            throw KKPushError(
                code: .buildFileUnreadable, message: "The build \(path) cannot be read.",
                fix: "Check its permissions.",
                underlying: KKPushError.Cause(String(describing: error)))
        }
    }
}
