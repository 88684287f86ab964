import Foundation
import KKPushBuild
import KKPushCore

/// Targets of KKPushBuild: what `kkpush build inspect` and `diagnose --build` read from outside — provisioning
/// profiles (CMS, DER or BER), property lists (XML and binary), Mach-O executables with code signatures and DER
/// entitlements, and `.ipa` zips. Each must answer or throw a ``KKPushError``; never trap.
enum BuildTargets {
    static let all: [FuzzTarget] = [profile, plist, machO, ipa]

    /// A provisioning profile's bytes.
    static let profile = FuzzTarget(
        name: "build-profile", maxLength: 32_768,
        summary: "ProvisioningProfile.parse (CMS SignedData via OpenSSL, the plist inside, certificates, distribution)"
    ) { bytes in
        guard let profile = try? ProvisioningProfile.parse(Data(bytes), what: "fuzz") else { return }
        // A profile read as verified has a signer and an anchor.
        if profile.signature.state == .verified {
            fuzzCheck(profile.signature.trustAnchor != nil, "a verified profile without a trust anchor")
        }
        _ = profile.distributionReason
    }

    /// A property list (XML or binary), as every Info.plist, entitlements file and summary is read.
    static let plist = FuzzTarget(
        name: "build-plist", maxLength: 16_384,
        summary: "PropertyListValue.parse (Foundation's XML and binary readers); the JSON form of what it read"
    ) { bytes in
        guard let (value, _) = try? PropertyListValue.parse(Data(bytes), what: "fuzz") else { return }
        _ = value.json.encoded()
    }

    /// A Mach-O file: thin or fat, load commands, the code-signature SuperBlob, XML and DER entitlements.
    static let machO = FuzzTarget(
        name: "build-macho", maxLength: 131_072,
        summary: "MachOFile.parse: fat/thin headers, LC_CODE_SIGNATURE, SuperBlob, CodeDirectory, DER entitlements"
    ) { bytes in
        guard let file = try? MachOFile.parse(Data(bytes), what: "fuzz") else { return }
        for slice in file.slices {
            fuzzCheck(slice.offset >= 0 && slice.size >= 0, "a slice with a negative offset or size")
            fuzzCheck(slice.offset <= bytes.count, "a slice that starts past the end of the file")
            _ = slice.codeSignature?.effectiveEntitlements
        }
    }

    /// An `.ipa`: the bytes are written to a temporary file and inspected whole (zip, bundle, profile, executable).
    static let ipa = FuzzTarget(
        name: "build-ipa", maxLength: 65_536,
        summary: "BuildInspector.inspect on a zip: central directory, bounded member reads, the bundle inside"
    ) { bytes in
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "kkpush-fuzz-\(getpid()).ipa")
        guard FileManager.default.createFile(atPath: url.path, contents: Data(bytes)) else { return }
        defer { try? FileManager.default.removeItem(at: url) }
        _ = try? BuildInspector.inspect(path: url.path, trustedRoots: [], now: FuzzFixtures.now)
    }
}
