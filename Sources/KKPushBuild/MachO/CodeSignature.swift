public import Foundation
import KKPushCore

/// What a slice's embedded code signature (the SuperBlob `LC_CODE_SIGNATURE` points to) says: the identifier and
/// team it was signed for, whether a certificate signed it, and the entitlements in both forms.
///
/// All code-signature structures are big-endian (`<kern/cs_blobs.h>`): a SuperBlob (`0xfade0cc0`) indexes blobs by
/// slot: the CodeDirectory (slot 0, `0xfade0c02`, with alternates from slot `0x1000`), the requirements (slot 2,
/// `0xfade0c01`), the entitlements as an XML property list (slot 5, `0xfade7171`), the entitlements in DER (slot 7,
/// `0xfade7172`) and the CMS signature (slot `0x10000`, `0xfade0b01`).
public struct CodeSignature: Sendable, Hashable {
    /// The CodeDirectory's identifier: the bundle identifier the code was signed as.
    public var identifier: String?
    /// The CodeDirectory's team identifier (CodeDirectory version `0x20200` and later), or nil when it has none.
    public var teamIdentifier: String?
    /// The version of the CodeDirectory these values come from (`0x20400` from current Xcode).
    public var codeDirectoryVersion: UInt32?
    /// The hash type of the CodeDirectory these values come from: `sha1`, `sha256`, `sha256-truncated`, `sha384`,
    /// `sha512`, or `hash type N`. When a signature has several CodeDirectories (a SHA-1 one for old systems and a
    /// SHA-256 alternate), this is the strongest one's, the one current systems check.
    public var hashType: String?
    /// The raw XML property list of the entitlements blob (`0xfade7171`, slot 5), if the signature has one.
    public var entitlementsXML: Data?
    /// ``entitlementsXML`` as read by ``PropertyListValue/parse(_:what:)``.
    public var entitlements: PropertyListValue?
    /// The DER entitlements blob (`0xfade7172`, slot 7), decoded into the same values a property list holds.
    public var derEntitlements: PropertyListValue?
    /// True when the signature has a CMS blob (`0xfade0b01`) with a non-empty payload: signed with a certificate.
    /// False for an ad hoc signature.
    public var hasCMSSignature: Bool
    /// True when the CodeDirectory has the `CS_ADHOC` flag (`0x2`) or there is no CMS signature: no certificate
    /// vouches for this code, and no iOS device runs it as an App Store, ad hoc or development build.
    public var isAdHoc: Bool

    /// Creates a code signature from its parts (for tests and tools that build one).
    public init(
        identifier: String? = nil, teamIdentifier: String? = nil, codeDirectoryVersion: UInt32? = nil,
        hashType: String? = nil, entitlementsXML: Data? = nil, entitlements: PropertyListValue? = nil,
        derEntitlements: PropertyListValue? = nil, hasCMSSignature: Bool = false, isAdHoc: Bool = true
    ) {
        self.identifier = identifier
        self.teamIdentifier = teamIdentifier
        self.codeDirectoryVersion = codeDirectoryVersion
        self.hashType = hashType
        self.entitlementsXML = entitlementsXML
        self.entitlements = entitlements
        self.derEntitlements = derEntitlements
        self.hasCMSSignature = hasCMSSignature
        self.isAdHoc = isAdHoc
    }

    /// The entitlements the system enforces: the DER form where present (iOS 15 and later require it and read only
    /// it), else the XML form; nil when the signature has neither.
    public var effectiveEntitlements: PropertyListValue? { derEntitlements ?? entitlements }

    /// Where the XML and DER forms disagree, one line per key (sorted) whose values differ or that only one form has,
    /// such as `aps-environment: XML "development", DER "production"`. Empty when they agree or one form is absent.
    public var entitlementDisagreements: [String] {
        guard let xml = entitlements, let der = derEntitlements else { return [] }
        guard let xmlKeys = xml.dictionaryValue, let derKeys = der.dictionaryValue else {
            return xml == der ? [] : ["(whole): XML \(Self.describe(xml)), DER \(Self.describe(der))"]
        }
        return Set(xmlKeys.keys).union(derKeys.keys).sorted().compactMap { key in
            let x = xmlKeys[key]
            let d = derKeys[key]
            guard x != d else { return nil }
            return "\(key): XML \(x.map(Self.describe) ?? "absent"), DER \(d.map(Self.describe) ?? "absent")"
        }
    }

    /// A value on one line: strings quoted, arrays in brackets, dictionaries in braces with sorted keys.
    static func describe(_ value: PropertyListValue) -> String {
        switch value {
        case .string(let s): "\"\(s)\""
        case .integer(let i): String(i)
        case .real(let r): String(r)
        case .bool(let b): b ? "true" : "false"
        case .date(let d): d.formatted(.iso8601)
        case .data(let d): "<\(d.count) bytes>"
        case .array(let a): "[" + a.map(describe).joined(separator: ", ") + "]"
        case .dictionary(let d):
            "{" + d.keys.sorted().map { "\($0): \(d[$0].map(describe) ?? "")" }.joined(separator: ", ") + "}"
        }
    }

    // MARK: - Constants (<kern/cs_blobs.h>)

    static let magicEmbeddedSignature: UInt32 = 0xfade_0cc0
    static let magicCodeDirectory: UInt32 = 0xfade_0c02
    static let magicRequirements: UInt32 = 0xfade_0c01
    static let magicEntitlements: UInt32 = 0xfade_7171
    static let magicDEREntitlements: UInt32 = 0xfade_7172
    static let magicBlobWrapper: UInt32 = 0xfade_0b01

    static let slotCodeDirectory: UInt32 = 0
    static let slotRequirements: UInt32 = 2
    static let slotEntitlements: UInt32 = 5
    static let slotDEREntitlements: UInt32 = 7
    static let slotAlternateCodeDirectories: ClosedRange<UInt32> = 0x1000...0x1004
    static let slotSignature: UInt32 = 0x10000

    static let flagAdHoc: UInt32 = 0x2

    /// The most blobs a SuperBlob may index (codesign writes at most about ten).
    public static let maximumBlobs = 64

    // MARK: - Reading

    /// Reads the SuperBlob in `region` (the bytes `LC_CODE_SIGNATURE` points to).
    static func parse(_ region: MachOBytes) throws -> CodeSignature {
        let context = region.context
        let superBlobName = "the code signature SuperBlob"
        let magic = try region.uint32(at: 0, .big, superBlobName)
        guard magic == magicEmbeddedSignature else {
            throw context.error(
                .buildMachoMalformed, superBlobName,
                "its magic is \(machOHex(magic)), not 0xfade0cc0 (CSMAGIC_EMBEDDED_SIGNATURE)")
        }
        let length = Int(try region.uint32(at: 4, .big, superBlobName))
        let count = Int(try region.uint32(at: 8, .big, superBlobName))
        guard length >= 12, length <= region.count else {
            throw context.error(
                .buildMachoMalformed, superBlobName,
                "its length is \(length) bytes, but LC_CODE_SIGNATURE gives it \(region.count)")
        }
        let superBlob = try region.window(at: 0, length: length, superBlobName)
        guard count <= maximumBlobs else {
            throw context.error(
                .buildMachoMalformed, superBlobName,
                "it claims \(count) blobs; a code signature has at most \(maximumBlobs)")
        }
        let indexEnd = 12 + 8 * count
        guard indexEnd <= length else {
            throw context.error(
                .buildMachoMalformed, superBlobName,
                "its index of \(count) blobs takes \(indexEnd) bytes, more than its length (\(length))")
        }

        var blobs: [UInt32: MachOBytes] = [:]
        for index in 0..<count {
            let entry = 12 + 8 * index
            let slot = try superBlob.uint32(at: entry, .big, superBlobName)
            let offset = Int(try superBlob.uint32(at: entry + 4, .big, superBlobName))
            let name = "blob \(index + 1) of \(count) (slot \(machOHex(slot)), at offset \(machOHex(offset)))"
            guard offset >= indexEnd, offset <= length - 8 else {
                throw context.error(
                    .buildMachoMalformed, name,
                    "it must start after the SuperBlob's index (\(indexEnd) bytes) and its 8-byte header must end "
                        + "inside the SuperBlob (\(length) bytes)")
            }
            let blobLength = Int(try superBlob.uint32(at: offset + 4, .big, name))
            guard blobLength >= 8, blobLength <= length - offset else {
                throw context.error(
                    .buildMachoMalformed, name,
                    "its length is \(blobLength) bytes; it must be at least 8 and end inside the SuperBlob "
                        + "(\(length - offset) bytes left)")
            }
            guard blobs[slot] == nil else {
                throw context.error(.buildMachoMalformed, name, "another blob has the same slot")
            }
            blobs[slot] = try superBlob.window(at: offset, length: blobLength, name)
        }

        // The CodeDirectories: the primary one and its alternates (other hash types).
        var directories: [CodeDirectory] = []
        for slot in [slotCodeDirectory] + Array(slotAlternateCodeDirectories) {
            guard let blob = blobs[slot] else { continue }
            directories.append(try CodeDirectory(blob, slot: slot))
        }
        guard let primary = directories.first else {
            throw context.error(.buildMachoMalformed, superBlobName, "it has no CodeDirectory (slot 0)")
        }
        for other in directories.dropFirst() where other.identifier != primary.identifier {
            throw context.error(
                .buildMachoMalformed, "the CodeDirectory in slot \(machOHex(other.slot))",
                "its identifier \"\(other.identifier)\" differs from the primary CodeDirectory's "
                    + "\"\(primary.identifier)\"")
        }
        let chosen = directories.max { $0.hashRank < $1.hashRank } ?? primary

        var signature = CodeSignature(
            identifier: chosen.identifier, teamIdentifier: chosen.teamIdentifier,
            codeDirectoryVersion: chosen.version, hashType: chosen.hashTypeName)

        if let blob = blobs[slotRequirements] {
            try expect(blob, magic: magicRequirements, "the requirements blob (slot 2)", "CSMAGIC_REQUIREMENTS")
        }
        if let blob = blobs[slotSignature] {
            let name = "the CMS signature blob (slot 0x10000)"
            try expect(blob, magic: magicBlobWrapper, name, "CSMAGIC_BLOBWRAPPER")
            signature.hasCMSSignature = blob.count > 8
        }
        signature.isAdHoc = chosen.flags & flagAdHoc != 0 || !signature.hasCMSSignature

        if let blob = blobs[slotEntitlements] {
            let name = "the entitlements blob (slot 5)"
            try expect(blob, magic: magicEntitlements, name, "CSMAGIC_EMBEDDED_ENTITLEMENTS")
            let xml = try blob.bytes(at: 8, length: blob.count - 8, name)
            signature.entitlementsXML = xml
            signature.entitlements = try readXMLEntitlements(xml, context: context, name: name)
        }
        if let blob = blobs[slotDEREntitlements] {
            let name = "the DER entitlements blob (slot 7)"
            try expect(blob, magic: magicDEREntitlements, name, "CSMAGIC_EMBEDDED_DER_ENTITLEMENTS")
            let der = try blob.bytes(at: 8, length: blob.count - 8, name)
            signature.derEntitlements = try DEREntitlements.decode([UInt8](der), context: context, blobName: name)
        }
        return signature
    }

    private static func expect(_ blob: MachOBytes, magic: UInt32, _ name: String, _ constant: String) throws {
        let found = try blob.uint32(at: 0, .big, name)
        guard found == magic else {
            throw blob.context.error(
                .buildMachoMalformed, name, "its magic is \(machOHex(found)), not \(machOHex(magic)) (\(constant))")
        }
    }

    private static func readXMLEntitlements(
        _ xml: Data, context: MachOReadContext, name: String
    ) throws -> PropertyListValue {
        let value: PropertyListValue
        do {
            value = try PropertyListValue.parse(xml, what: name).value
        } catch {
            throw context.error(
                .buildMachoEntitlementsUnreadable, name, "it is no XML or binary property list", underlying: error)
        }
        guard value.dictionaryValue != nil else {
            throw context.error(
                .buildMachoEntitlementsUnreadable, name, "its property list is not a dictionary")
        }
        return value
    }
}

/// The fields of one CodeDirectory blob this reader uses.
struct CodeDirectory {
    var slot: UInt32
    var version: UInt32
    var flags: UInt32
    var hashType: UInt8
    var identifier: String
    var teamIdentifier: String?

    /// The fixed part up to `spare2`, every version has it.
    static let earliestSize = 44
    /// Up to `teamOffset` (version `0x20200`).
    static let withTeamSize = 52
    static let versionWithTeam: UInt32 = 0x20200

    init(_ blob: MachOBytes, slot: UInt32) throws {
        let name = "the CodeDirectory (slot \(machOHex(slot)))"
        let magic = try blob.uint32(at: 0, .big, name)
        guard magic == CodeSignature.magicCodeDirectory else {
            throw blob.context.error(
                .buildMachoMalformed, name,
                "its magic is \(machOHex(magic)), not 0xfade0c02 (CSMAGIC_CODEDIRECTORY)")
        }
        self.slot = slot
        _ = try blob.window(at: 0, length: Self.earliestSize, name)
        version = try blob.uint32(at: 8, .big, name)
        flags = try blob.uint32(at: 12, .big, name)
        let identOffset = Int(try blob.uint32(at: 20, .big, name))
        hashType = try blob.uint8(at: 37, name)
        guard identOffset >= Self.earliestSize else {
            throw blob.context.error(
                .buildMachoMalformed, name,
                "its identifier offset \(machOHex(identOffset)) points into the CodeDirectory's header")
        }
        identifier = try blob.cString(at: identOffset, "the identifier of \(name)")
        if version >= Self.versionWithTeam {
            _ = try blob.window(at: 0, length: Self.withTeamSize, "\(name), version \(machOHex(version))")
            let teamOffset = Int(try blob.uint32(at: 48, .big, name))
            if teamOffset != 0 {
                guard teamOffset >= Self.withTeamSize else {
                    throw blob.context.error(
                        .buildMachoMalformed, name,
                        "its team identifier offset \(machOHex(teamOffset)) points into the CodeDirectory's header")
                }
                teamIdentifier = try blob.cString(at: teamOffset, "the team identifier of \(name)")
            }
        }
    }

    /// `sha1`, `sha256`, ... for the `cdHashType` constants.
    var hashTypeName: String {
        switch hashType {
        case 1: "sha1"
        case 2: "sha256"
        case 3: "sha256-truncated"
        case 4: "sha384"
        case 5: "sha512"
        default: "hash type \(hashType)"
        }
    }

    /// How strong the hash is, the order in which the system prefers CodeDirectories (unknown types last).
    var hashRank: Int {
        switch hashType {
        case 1: 1
        case 3: 2
        case 2: 3
        case 4: 4
        case 5: 5
        default: 0
        }
    }
}
