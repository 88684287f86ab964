public import Foundation

/// Reads the APNs environment the running app is signed for from its embedded provisioning profile.
///
/// ## Why
///
/// The Kantine Koning app reports `build_environment` from `#if DEBUG`. But the token's environment is not the
/// build configuration's: it is the `aps-environment` entitlement of the signature, and Xcode sets that from the
/// provisioning profile the build is signed with. A Debug-configuration build archived and uploaded to TestFlight is
/// signed for production and gets production tokens while it reports "development", and the backend pushes them to
/// the sandbox (`BadDeviceToken`). This reader answers what the signature says, on the device, at run time.
///
/// ## Usage in the app
///
/// Add the `KantineKoningSigning` library (Foundation only: no kkpush modules, no OpenSSL) and send its answer next
/// to `build_environment` in the token update; the backend prefers `aps_environment` when it is present:
///
/// ```swift
/// import KantineKoningSigning
///
/// let signed = SignedEnvironmentReader.current()
/// var body: [String: Any] = ["token": hexToken, "build_environment": buildEnvironment]
/// body["aps_environment"] = signed.tokenUpdateValue  // "development" / "production"; left out when unknown
/// logger.info("\(signed)")  // e.g. aps-environment=production (no-embedded-profile): No embedded ...
/// ```
///
/// ## How it decides, and what is documented
///
/// In this order:
///
/// 1. **Simulator** (`#if targetEnvironment(simulator)`): `development`. *Documented by Apple*: the Xcode 14 release
///    notes say the Simulator supports remote notifications (iOS 16 on macOS 13, Apple silicon or T2 Macs) in the
///    APNs Sandbox environment. Simulator builds carry no embedded profile, so without this rule they would look
///    like App Store installs.
/// 2. **An embedded profile** (`embedded.mobileprovision` at the bundle's root; on macOS
///    `Contents/embedded.provisionprofile`): the `aps-environment` of its `Entitlements` (iOS, iPadOS, tvOS,
///    watchOS, visionOS), or `com.apple.developer.aps-environment` (macOS). *Documented by Apple*: the two keys
///    and their platforms ("APS Environment Entitlement", "APS Environment (macOS) Entitlement" in Bundle
///    Resources), and that "Xcode sets the value of the entitlement based on your app's current provisioning
///    profile": a development profile gives `development`, a production profile and TestFlight give
///    `production`. The profile's layout (a CMS SignedData whose content is an XML property list) is described in
///    TN3125 "Inside Code Signing: Provisioning Profiles", which says such details are *not considered API*; the
///    reader therefore takes no more from the structure than the property list (see ``read(profileData:)``) and
///    does not verify the signature (the system checked the profile when it installed the app).
/// 3. **No embedded profile**: `production`. Apple documents that it re-signs apps sold on the App Store (Xcode
///    Help, "code signing") and that TestFlight builds use `production` (the entitlement's page above). *Observed,
///    not documented*: the App Store and TestFlight install carries no `embedded.mobileprovision`, while every
///    other way onto a device (Xcode, ad hoc, enterprise) keeps it; Firebase, GoogleUtilities' `isFromAppStore`
///    and many others rely on this. On macOS it is weaker: a locally signed Mac build without push has no profile
///    either.
/// 4. **A profile without the key**: `nil`, not a guess. Push is not enabled for the App ID, so the app gets no
///    device token (`registerForRemoteNotifications` fails); there is no environment to report.
/// 5. **A profile that cannot be read** (too large, no property list, not a dictionary, an unknown value): `nil`
///    with source ``SignedEnvironment/Source/unreadableProfile``; the backend then falls back to
///    `build_environment`.
///
/// What the profile says is what the app is *allowed*; the signature's own entitlement is what counts. They agree
/// for Xcode-signed builds (Xcode sets the value from the profile, as documented above, and TN3125 describes the
/// profile's entitlements as an allowlist the system enforces), and iOS offers an app no public API to read its
/// own entitlements (the `SecTask` entitlement lookup is macOS only), which is why the profile is read.
///
/// ## Firebase
///
/// The same decision as Firebase Messaging's `FIRMessagingIsProductionApp()` in
/// `FirebaseMessaging/Sources/FIRMessagingUtilities.m` of github.com/firebase/firebase-ios-sdk (read at commit
/// eed63a35a90dbd46184ca1a6afeb144ee783b5fd), learnt from, not copied. Where this reader differs: Firebase answers
/// `production` for the Simulator (its log says the Simulator has no APNs, which Xcode 14 changed), for a profile
/// without `aps-environment` and for any read error, where this reader answers `development` for the Simulator and
/// "unknown" (`nil`) for the other two; Firebase rewrites NUL and non-ASCII bytes to `.` and scans the whole file
/// as an ASCII string from `<plist` to `</plist>`, where this reader takes the content out of the CMS structure
/// first (so a BER profile whose content is split into segments still parses) and scans bytes, keeping the
/// profile's UTF-8 text (its `Name`) intact; and Firebase uses the macOS key only for `TARGET_OS_OSX`, where this
/// reader picks the key from the profile's `Platform` and falls back to the other key.
public enum SignedEnvironmentReader {
    /// The largest profile the reader accepts, 1 MiB. Real profiles are 5 to 30 KiB (a development profile with
    /// many devices and certificates stays well under 100 KiB).
    public static let maximumProfileSize = 1 << 20

    /// The iOS, iPadOS, tvOS, watchOS and visionOS entitlement.
    public static let apsEnvironmentKey = "aps-environment"
    /// The macOS entitlement.
    public static let macOSAPSEnvironmentKey = "com.apple.developer.aps-environment"

    /// The file names of an embedded profile, relative to the bundle's root: iOS first, then macOS.
    public static let embeddedProfilePaths = ["embedded.mobileprovision", "Contents/embedded.provisionprofile"]

    /// The APNs environment of the running app (or app extension): `bundle`'s embedded profile, the Simulator, or
    /// no profile (App Store and TestFlight). Never fails; an unknown environment is a `nil`
    /// ``SignedEnvironment/apsEnvironment``. Reads a small file: call it when sending the token update.
    public static func current(bundle: Bundle = .main) -> SignedEnvironment {
        #if targetEnvironment(simulator)
            return decide(bundleURL: bundle.bundleURL, isSimulator: true)
        #else
            return decide(bundleURL: bundle.bundleURL, isSimulator: false)
        #endif
    }

    /// The APNs environment of the app bundle at `bundleURL` (an `.app` folder), as ``current(bundle:)`` decides
    /// on a device: its embedded profile, or production when it has none. For tests and tools.
    public static func read(bundleURL: URL) -> SignedEnvironment {
        decide(bundleURL: bundleURL, isSimulator: false)
    }

    /// The APNs environment a provisioning profile file (`.mobileprovision` or `.provisionprofile`) grants.
    public static func read(profileURL: URL) throws(SignedEnvironmentError) -> SignedEnvironment {
        let path = profileURL.path
        let values: URLResourceValues
        do {
            values = try profileURL.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey])
        } catch {
            throw .unreadable(path: path, reason: reason(error))
        }
        guard values.isRegularFile == true else { throw .unreadable(path: path, reason: "not a regular file") }
        let size = values.fileSize ?? 0
        // Checked before reading, so a huge file is never loaded, and again after (the file may have changed).
        guard size <= maximumProfileSize else { throw .tooLarge(byteCount: size, limit: maximumProfileSize) }
        let data: Data
        do {
            data = try Data(contentsOf: profileURL)
        } catch {
            throw .unreadable(path: path, reason: reason(error))
        }
        return try read(profileData: data)
    }

    /// The APNs environment a provisioning profile's bytes grant.
    ///
    /// The profile is a CMS SignedData (DER, or BER with indefinite lengths) whose content, an XML property list,
    /// sits uncompressed in its bytes. The reader takes the content out of the CMS structure (joining the segments
    /// BER may split it into), then scans it, or the raw bytes if they are not CMS, for `<?xml` (or `<plist`) and
    /// the following `</plist>`, within the data's bounds, and parses that slice with `PropertyListSerialization`.
    /// NUL bytes and bytes above 127 around it (the CMS structure, the certificates) do not matter. The signature
    /// is not verified.
    ///
    /// - Returns: source ``SignedEnvironment/Source/embeddedProfile``, with a `nil` environment when the profile
    ///   grants no `aps-environment`.
    /// - Throws: ``SignedEnvironmentError`` when the bytes are empty or larger than ``maximumProfileSize``, when
    ///   they hold no property list or one that is not a profile's, or when the value is neither `development` nor
    ///   `production`.
    public static func read(profileData: Data) throws(SignedEnvironmentError) -> SignedEnvironment {
        guard !profileData.isEmpty else { throw .empty }
        guard profileData.count <= maximumProfileSize else {
            throw .tooLarge(byteCount: profileData.count, limit: maximumProfileSize)
        }
        guard let plistData = ProfileContent.propertyList(in: profileData) else { throw .noPropertyList }

        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: plistData, options: [], format: nil)
        } catch {
            throw .invalidPropertyList(reason: reason(error))
        }
        guard let plist = object as? [String: Any] else {
            throw .invalidPropertyList(reason: "the top level is not a dictionary")
        }
        guard let entitlements = plist["Entitlements"] as? [String: Any] else { throw .missingEntitlements }

        let name = plist["Name"] as? String
        let named = name.map { "The embedded profile \"\($0)\"" } ?? "The embedded profile"
        let platforms = plist["Platform"] as? [String] ?? []
        let isMacOS = platforms.contains { $0 == "OSX" || $0 == "macOS" }
        let keys = isMacOS ? [macOSAPSEnvironmentKey, apsEnvironmentKey] : [apsEnvironmentKey, macOSAPSEnvironmentKey]

        guard let key = keys.first(where: { entitlements[$0] != nil }), let value = entitlements[key] else {
            return SignedEnvironment(
                apsEnvironment: nil, source: .embeddedProfile, profileName: name,
                detail: "\(named) grants no \(keys[0]): push is not enabled for this App ID, so the app gets no "
                    + "device token.")
        }
        guard let string = value as? String, let environment = APSEnvironment(rawValue: string) else {
            throw .unknownAPSEnvironment((value as? String) ?? String(describing: value))
        }
        let tokens = environment == .development ? "APNs sandbox" : "APNs production"
        return SignedEnvironment(
            apsEnvironment: environment, source: .embeddedProfile, profileName: name,
            detail: "\(named) grants \(key) \(environment.rawValue): device tokens are \(tokens) tokens.")
    }

    /// The decision of ``current(bundle:)``, with the Simulator as a parameter so tests can take either branch.
    static func decide(bundleURL: URL, isSimulator: Bool) -> SignedEnvironment {
        if isSimulator {
            return SignedEnvironment(
                apsEnvironment: .development, source: .simulator,
                detail: "A Simulator build: its device tokens are APNs sandbox tokens.")
        }
        let fileManager = FileManager.default
        for relativePath in embeddedProfilePaths {
            let url = bundleURL.appendingPathComponent(relativePath)
            guard fileManager.fileExists(atPath: url.path) else { continue }
            do {
                return try read(profileURL: url)
            } catch {
                return SignedEnvironment(
                    apsEnvironment: nil, source: .unreadableProfile,
                    detail: "The embedded profile \(relativePath) cannot be read (\(error)), so the APNs "
                        + "environment is unknown.")
            }
        }
        return SignedEnvironment(
            apsEnvironment: .production, source: .noEmbeddedProfile,
            detail: "No embedded provisioning profile: an App Store or TestFlight install, re-signed by Apple for "
                + "APNs production.")
    }

    private static func reason(_ error: any Error) -> String {
        (error as NSError).localizedDescription
    }
}
