public import Foundation
import KKPushCore

/// How an app signed with a profile may be distributed.
public enum ProfileDistribution: String, Sendable, Codable {
    /// Run from Xcode on the listed devices; push goes to the sandbox (`aps-environment` `development`).
    case development
    /// Installed on the listed devices outside the App Store.
    case adHoc = "ad-hoc"
    /// Uploaded to App Store Connect (the App Store and TestFlight).
    case appStore = "app-store"
    /// In-house distribution of the Apple Developer Enterprise Program, on any device.
    case enterprise
    /// A macOS app distributed outside the Mac App Store, signed with a Developer ID Application certificate.
    case developerID = "developer-id"
}

/// A provisioning profile (`.mobileprovision`, `.provisionprofile`, an app's `embedded.mobileprovision`), read as
/// Apple's tools read it: the property list inside a CMS SignedData, with what its signature says.
public struct ProvisioningProfile: Sendable, Hashable {
    /// `Name`: the profile's name on the developer portal.
    public var name: String?
    /// `UUID`: what Xcode and `PROVISIONING_PROFILE_SPECIFIER` know it by.
    public var uuid: String?
    /// `TeamIdentifier`: the team (usually one) the profile belongs to.
    public var teamIdentifiers: [String]
    /// `TeamName`.
    public var teamName: String?
    /// `AppIDName`: the App ID's description on the portal.
    public var appIDName: String?
    /// The App ID with its prefix: `Entitlements["application-identifier"]` (iOS, tvOS, watchOS, visionOS) or
    /// `Entitlements["com.apple.application-identifier"]` (macOS).
    public var applicationIdentifier: String?
    /// ``applicationIdentifier`` without its `TEAMID.` prefix: the bundle ID, or a wildcard (`*`, `nl.x.*`). Nil when
    /// there is no application identifier, or when it has no prefix that is one of ``teamIdentifiers``, an
    /// `ApplicationIdentifierPrefix` or a 10-character Apple ID prefix.
    public var bundleID: String?
    /// `Platform`: `iOS`, `OSX`, `xrOS`, … as Apple spells them.
    public var platforms: [String]
    /// `CreationDate`.
    public var creationDate: Date?
    /// `ExpirationDate`: after it, devices refuse the app. The signature check does not look at it.
    public var expirationDate: Date?
    /// `Entitlements`: every entitlement the profile allows, with its allowed value.
    public var entitlements: [String: PropertyListValue]
    /// The push environment the profile allows: `Entitlements["aps-environment"]` (iOS) or
    /// `Entitlements["com.apple.developer.aps-environment"]` (macOS); nil when push is not enabled for the App ID.
    public var apsEnvironment: String?
    /// `Entitlements["get-task-allow"]` (iOS) or `Entitlements["com.apple.security.get-task-allow"]` (macOS): a
    /// debugger may attach. True for development profiles.
    public var getTaskAllow: Bool?
    /// `Entitlements["beta-reports-active"]`: the profile allows TestFlight; true for App Store profiles.
    public var betaReportsActive: Bool?
    /// `ProvisionedDevices`: the device UDIDs the app may run on; nil when the key is absent.
    public var provisionedDevices: [String]?
    /// `ProvisionsAllDevices`: true for enterprise (in-house) and Developer ID profiles; false when absent.
    public var provisionsAllDevices: Bool
    /// `IsXcodeManaged`: Xcode's automatic signing made the profile.
    public var isXcodeManaged: Bool?
    /// `DeveloperCertificates`: the certificates an app signed with this profile may be signed with.
    public var developerCertificates: [SigningCertificate]
    /// How an app signed with the profile may be distributed, inferred as ``inferDistribution()`` says.
    public var distribution: ProfileDistribution
    /// How ``distribution`` was inferred, one sentence ("ProvisionedDevices present and get-task-allow true.").
    public var distributionReason: String
    /// What the CMS signature says; ``ProfileSignature/State/unsigned`` for a bare property list.
    public var signature: ProfileSignature
    /// The whole property list.
    public var plist: PropertyListValue

    /// Reads a profile: a CMS SignedData (DER, or BER with indefinite lengths) with the plist inside, as Apple signs
    /// them; a bare XML or binary plist is read too, with ``ProfileSignature/State/unsigned``.
    ///
    /// The signature never makes the read fail: a changed byte or an unknown signer is reported in ``signature``,
    /// and the caller decides. What cannot be read is an error: an empty file, bytes that are neither CMS nor a
    /// plist, a truncated or damaged CMS, a CMS that is not SignedData or carries no content, content that is no
    /// property list or not a dictionary, a known key with a value of the wrong type, or a developer certificate
    /// OpenSSL cannot parse.
    ///
    /// - Parameters:
    ///   - data: the file's bytes.
    ///   - what: what the bytes are, for errors ("Payload/App.app/embedded.mobileprovision", a path).
    ///   - trustedRoots: the roots (DER or PEM) the signer must chain to for ``ProfileSignature/State/verified``;
    ///     Apple Root CA by default.
    /// - Throws: ``KKPushError`` with a `build-profile-…` code naming `what` and what could not be read.
    /// Checks that `data` holds a certificate ``parse(_:what:trustedRoots:)`` can use as a trusted root (PEM or DER),
    /// so a bad root is named when it is given, not only once a profile is read.
    /// - Throws: ``KKPushError`` `build-profile-trusted-root-unreadable`, naming `what`.
    public static func checkTrustedRoot(_ data: Data, what: String) throws {
        _ = try ProfileX509.certificates(from: data, what: what)
    }

    public static func parse(
        _ data: Data, what: String, trustedRoots: [Data] = ProvisioningProfile.appleRoots
    ) throws -> ProvisioningProfile {
        guard !data.isEmpty else {
            throw KKPushError(
                code: .buildProfileEmpty, message: "\(what) is empty (0 bytes).",
                fix: "Download the profile again from Xcode or the developer portal.")
        }
        let content: Data
        let signature: ProfileSignature
        if data.first == 0x30 {
            let envelope = try ProfileCMS.open(data, what: what, trustedRoots: trustedRoots)
            content = envelope.content
            signature = envelope.signature
        } else if looksLikePropertyList(data) {
            content = data
            signature = ProfileSignature(
                state: .unsigned, detail: "The file is a bare property list, not signed by Apple.")
        } else {
            throw KKPushError(
                code: .buildProfileUnreadable,
                message:
                    "\(what) is neither a signed provisioning profile (CMS) nor a property list (\(data.count) bytes, "
                    + "starting \(data.prefix(4).map { String(format: "%02x", $0) }.joined(separator: " "))).",
                fix: "Give the .mobileprovision or .provisionprofile file as downloaded.")
        }
        let plist: PropertyListValue
        do {
            plist = try PropertyListValue.parse(content, what: "The content of \(what)").value
        } catch {
            throw KKPushError(
                code: .buildProfilePlistUnreadable,
                message: signature.state == .unsigned
                    ? "\(what) looks like a property list but cannot be read as one (\(data.count) bytes)."
                    : "\(what) is a CMS SignedData, but its content (\(content.count) bytes) is not a property list.",
                fix: signature.state == .unsigned
                    ? "Give the .mobileprovision or .provisionprofile file as downloaded, or a complete plist."
                    : "Check the file is a provisioning profile and not another signed file.",
                underlying: (error as? KKPushError)?.underlying ?? KKPushError.Cause(String(describing: error)))
        }
        return try ProvisioningProfile(plist: plist, signature: signature, what: what)
    }

    /// `bplist`, or `<` after an optional byte-order mark and white space.
    private static func looksLikePropertyList(_ data: Data) -> Bool {
        if data.starts(with: Data("bplist".utf8)) { return true }
        var bytes = data.prefix(1024)[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        return bytes.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) } == UInt8(ascii: "<")
    }

    init(plist: PropertyListValue, signature: ProfileSignature, what: String) throws {
        guard let root = plist.dictionaryValue else {
            throw KKPushError(
                code: .buildProfileNotADictionary,
                message: "The property list in \(what) is not a dictionary, as a provisioning profile's is.",
                fix: "Check the file is a provisioning profile.")
        }
        let fields = ProfileFields(root, what: what)
        name = try fields.string("Name")
        uuid = try fields.string("UUID")
        teamIdentifiers = try fields.strings("TeamIdentifier") ?? []
        teamName = try fields.string("TeamName")
        appIDName = try fields.string("AppIDName")
        platforms = try fields.strings("Platform") ?? []
        creationDate = try fields.date("CreationDate")
        expirationDate = try fields.date("ExpirationDate")
        entitlements = try fields.dictionary("Entitlements") ?? [:]
        provisionedDevices = try fields.strings("ProvisionedDevices")
        provisionsAllDevices = try fields.bool("ProvisionsAllDevices") ?? false
        isXcodeManaged = try fields.bool("IsXcodeManaged")

        let granted = ProfileFields(entitlements, what: what, prefix: "Entitlements.")
        applicationIdentifier =
            try granted.string("application-identifier") ?? granted.string("com.apple.application-identifier")
        apsEnvironment = try granted.string("aps-environment") ?? granted.string("com.apple.developer.aps-environment")
        getTaskAllow = try granted.bool("get-task-allow") ?? granted.bool("com.apple.security.get-task-allow")
        betaReportsActive = try granted.bool("beta-reports-active")
        let prefixes = teamIdentifiers + (try fields.strings("ApplicationIdentifierPrefix") ?? [])
        bundleID = applicationIdentifier.flatMap { Self.bundleID(of: $0, prefixes: prefixes) }

        developerCertificates = try (fields.array("DeveloperCertificates") ?? []).enumerated().map { index, item in
            guard let der = item.dataValue else {
                throw fields.wrongType("DeveloperCertificates[\(index)]", expected: "data (a DER certificate)")
            }
            guard let certificate = ProfileX509.parse(der: der)?.signingCertificate() else {
                throw ProfileOpenSSL.error(
                    code: .buildProfileCertificateUnreadable,
                    message:
                        "DeveloperCertificates[\(index)] in \(what) is not a certificate OpenSSL can read "
                        + "(\(der.count) bytes).",
                    fix: "Download the profile again; if it persists, regenerate it on the developer portal.")
            }
            return certificate
        }
        self.signature = signature
        self.plist = plist
        distribution = .appStore
        distributionReason = ""
        (distribution, distributionReason) = inferDistribution()
    }

    /// The part of `applicationIdentifier` after its prefix, if the prefix is one of `prefixes` or looks like an Apple
    /// App ID prefix (10 upper-case letters and digits).
    static func bundleID(of applicationIdentifier: String, prefixes: [String]) -> String? {
        guard let dot = applicationIdentifier.firstIndex(of: ".") else { return nil }
        let prefix = applicationIdentifier[..<dot]
        let rest = applicationIdentifier[applicationIdentifier.index(after: dot)...]
        let applePrefix =
            prefix.count == 10 && prefix.allSatisfy { ($0.isASCII && $0.isUppercase) || ($0.isASCII && $0.isNumber) }
        guard !rest.isEmpty, prefixes.contains(String(prefix)) || applePrefix else { return nil }
        return String(rest)
    }

    /// Whether the profile is for macOS: `Platform` names `OSX` and not `iOS`, or, with no `Platform`, the App ID is
    /// in `com.apple.application-identifier` only (macOS's spelling).
    public var isMacOS: Bool {
        if !platforms.isEmpty { return platforms.contains("OSX") && !platforms.contains("iOS") }
        return entitlements["application-identifier"] == nil && entitlements["com.apple.application-identifier"] != nil
    }

    /// Infers how an app signed with the profile may be distributed; Apple's plist has no such field. The rules agree
    /// with app_info's and deploygate-cli's readers of profiles, and with what the developer portal puts in each
    /// kind, macOS Developer ID profiles (`ProvisionsAllDevices` true) included:
    ///
    /// 1. `ProvisionsAllDevices` true: ``ProfileDistribution/developerID`` for macOS, else
    ///    ``ProfileDistribution/enterprise`` (in-house).
    /// 2. `ProvisionedDevices` present: ``ProfileDistribution/development`` if get-task-allow is true, or for macOS
    ///    (which has no ad-hoc distribution; Mac development profiles may leave get-task-allow out), else
    ///    ``ProfileDistribution/adHoc``.
    /// 3. Neither: ``ProfileDistribution/appStore``, except for macOS when every developer certificate is a Developer
    ///    ID Application certificate (``ProfileDistribution/developerID``).
    ///
    /// - Returns: the distribution and the reason, one sentence.
    public func inferDistribution() -> (ProfileDistribution, String) {
        let task = getTaskAllow.map { "get-task-allow \($0)" } ?? "get-task-allow absent"
        if provisionsAllDevices {
            return isMacOS
                ? (.developerID, "ProvisionsAllDevices true on a macOS profile (Developer ID).")
                : (.enterprise, "ProvisionsAllDevices true (in-house enterprise).")
        }
        if let devices = provisionedDevices {
            let listed = "ProvisionedDevices present (\(devices.count))"
            if getTaskAllow == true { return (.development, "\(listed) and get-task-allow true.") }
            if isMacOS { return (.development, "\(listed) on a macOS profile, which has no ad-hoc kind.") }
            return (.adHoc, "\(listed) and \(task).")
        }
        if isMacOS, !developerCertificates.isEmpty,
            developerCertificates.allSatisfy({ $0.commonName?.hasPrefix("Developer ID Application") == true })
        {
            return (.developerID, "No devices on a macOS profile and only Developer ID Application certificates.")
        }
        return (.appStore, "No ProvisionedDevices and ProvisionsAllDevices absent or false (\(task)).")
    }
}

/// Typed reads of a profile's dictionary: an absent key is nil, a key with a value of another type is an error.
private struct ProfileFields {
    let values: [String: PropertyListValue]
    let what: String
    let prefix: String

    init(_ values: [String: PropertyListValue], what: String, prefix: String = "") {
        self.values = values
        self.what = what
        self.prefix = prefix
    }

    func wrongType(_ key: String, expected: String) -> KKPushError {
        KKPushError(
            code: .buildProfileFieldInvalid,
            message: "\(prefix)\(key) in \(what) is not \(expected).",
            fix: "Download the profile again; a profile Apple made always has the right types.")
    }

    func string(_ key: String) throws -> String? {
        guard let value = values[key] else { return nil }
        guard let string = value.stringValue else { throw wrongType(key, expected: "a string") }
        return string
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = values[key] else { return nil }
        guard let bool = value.boolValue else { throw wrongType(key, expected: "a boolean") }
        return bool
    }

    func date(_ key: String) throws -> Date? {
        guard let value = values[key] else { return nil }
        guard let date = value.dateValue else { throw wrongType(key, expected: "a date") }
        return date
    }

    func array(_ key: String) throws -> [PropertyListValue]? {
        guard let value = values[key] else { return nil }
        guard let array = value.arrayValue else { throw wrongType(key, expected: "an array") }
        return array
    }

    func strings(_ key: String) throws -> [String]? {
        guard let array = try array(key) else { return nil }
        return try array.enumerated().map { index, item in
            guard let string = item.stringValue else { throw wrongType("\(key)[\(index)]", expected: "a string") }
            return string
        }
    }

    func dictionary(_ key: String) throws -> [String: PropertyListValue]? {
        guard let value = values[key] else { return nil }
        guard let dictionary = value.dictionaryValue else { throw wrongType(key, expected: "a dictionary") }
        return dictionary
    }
}
