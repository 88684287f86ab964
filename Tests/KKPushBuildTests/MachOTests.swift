import Foundation
import KKPushBuild
import KKPushCore
import KKPushTestSupport
import Testing

/// The generated executables in `Certificates/builds/executables/` and hostile variants of them made here.
@Suite("Mach-O code signatures")
struct MachOTests {
    static let bundleIdentifier = "nl.kantinekoning.app"
    static let teamIdentifier = "KKTEAM0001"

    static func executable(_ name: String) throws -> [UInt8] {
        try Repository.bytes("Certificates/builds/executables/\(name)")
    }

    static func parse(_ bytes: [UInt8], what: String = "test-executable") throws -> MachOFile {
        try MachOFile.parse(Data(bytes), what: what)
    }

    /// Expects `body` to throw a `KKPushError` with `code` whose message names `what` and contains `fragment`.
    static func expectError(
        _ code: String, what: String = "test-executable", mentioning fragment: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) {
        do {
            try body()
            Issue.record("expected \(code), but nothing was thrown", sourceLocation: sourceLocation)
        } catch let error as KKPushError {
            #expect(error.code.rawValue == code, "\(error.message)", sourceLocation: sourceLocation)
            #expect(error.message.contains(what), "\(error.message)", sourceLocation: sourceLocation)
            if let fragment {
                #expect(error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
            }
            #expect(error.fix != nil, sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected KKPushError \(code), got \(error)", sourceLocation: sourceLocation)
        }
    }

    // MARK: - The generated executables

    @Test("thin-development: one arm64 slice signed for development, both entitlement forms agree")
    func thinDevelopment() throws {
        let file = try Self.parse(Self.executable("thin-development"))
        #expect(!file.isUniversal)
        #expect(file.slices.map(\.architecture) == ["arm64"])
        let slice = try #require(file.slices.first)
        #expect(slice.offset == 0)
        #expect(slice.fileType == MachOSlice.fileTypeExecute)
        let signature = try #require(slice.codeSignature)
        #expect(signature.identifier == Self.bundleIdentifier)
        #expect(signature.teamIdentifier == Self.teamIdentifier)
        #expect(signature.entitlements?["aps-environment"] == .string("development"))
        #expect(signature.derEntitlements?["aps-environment"] == .string("development"))
        #expect(signature.effectiveEntitlements?["aps-environment"] == .string("development"))
        #expect(signature.entitlementDisagreements.isEmpty)
        #expect(signature.entitlementsXML.map { String(decoding: $0, as: UTF8.self).contains("<plist") } == true)
        #expect(signature.hashType == "sha256")
        #expect((signature.codeDirectoryVersion ?? 0) >= 0x20200)
        #expect(signature.hasCMSSignature)
        #expect(!signature.isAdHoc)
    }

    @Test("thin-production: one arm64 slice signed for production")
    func thinProduction() throws {
        let file = try Self.parse(Self.executable("thin-production"))
        #expect(!file.isUniversal)
        #expect(file.slices.map(\.architecture) == ["arm64"])
        let signature = try #require(file.slices.first?.codeSignature)
        #expect(signature.identifier == Self.bundleIdentifier)
        #expect(signature.teamIdentifier == Self.teamIdentifier)
        #expect(signature.entitlements?["aps-environment"] == .string("production"))
        #expect(signature.derEntitlements?["aps-environment"] == .string("production"))
        #expect(signature.effectiveEntitlements?["aps-environment"] == .string("production"))
        #expect(signature.entitlementDisagreements.isEmpty)
    }

    @Test("fat-production: arm64 and x86_64 slices, each signed for production")
    func fatProduction() throws {
        let bytes = try Self.executable("fat-production")
        let file = try Self.parse(bytes)
        #expect(file.isUniversal)
        #expect(file.slices.map(\.architecture) == ["arm64", "x86_64"])
        for slice in file.slices {
            #expect(slice.offset > 0)
            #expect(slice.offset + slice.size <= bytes.count)
            let signature = try #require(slice.codeSignature, "slice \(slice.architecture)")
            #expect(signature.identifier == Self.bundleIdentifier)
            #expect(signature.teamIdentifier == Self.teamIdentifier)
            #expect(signature.entitlements?["aps-environment"] == .string("production"))
            #expect(signature.derEntitlements?["aps-environment"] == .string("production"))
            #expect(signature.entitlementDisagreements.isEmpty)
        }
    }

    @Test("unsigned: the slice is read, and it has no code signature")
    func unsigned() throws {
        let file = try Self.parse(Self.executable("unsigned"))
        #expect(!file.slices.isEmpty)
        for slice in file.slices {
            #expect(slice.codeSignature == nil)
        }
    }

    @Test("entitlements-disagree: XML says development, DER production; DER wins and the key is listed")
    func entitlementsDisagree() throws {
        let file = try Self.parse(Self.executable("entitlements-disagree"))
        let signature = try #require(file.slices.first?.codeSignature)
        #expect(signature.entitlements?["aps-environment"] == .string("development"))
        #expect(signature.derEntitlements?["aps-environment"] == .string("production"))
        #expect(signature.effectiveEntitlements?["aps-environment"] == .string("production"))
        #expect(
            signature.entitlementDisagreements.contains(
                "aps-environment: XML \"development\", DER \"production\""),
            "\(signature.entitlementDisagreements)")
    }

    @Test("thin-development-legacy-der: the older DER form (a SET of pairs) reads the same as the XML form")
    func legacyDER() throws {
        let file = try Self.parse(Self.executable("thin-development-legacy-der"))
        let signature = try #require(file.slices.first?.codeSignature)
        #expect(signature.derEntitlements?["aps-environment"] == .string("development"))
        #expect(signature.derEntitlements == signature.entitlements)
        #expect(signature.entitlementDisagreements.isEmpty)
    }

    @Test("adhoc-signed: CS_ADHOC, an empty CMS wrapper, no team")
    func adHoc() throws {
        let file = try Self.parse(Self.executable("adhoc-signed"))
        let signature = try #require(file.slices.first?.codeSignature)
        #expect(signature.isAdHoc)
        #expect(!signature.hasCMSSignature)
        #expect(signature.teamIdentifier == nil)
        #expect(signature.identifier == Self.bundleIdentifier)
    }

    @Test("truncated: build-macho-truncated, naming the file and what runs past its end")
    func truncated() throws {
        let bytes = try Self.executable("truncated")
        #expect(MachOFile.hasMachOMagic(Data(bytes.prefix(4))))
        Self.expectError("build-macho-truncated", what: "truncated", mentioning: "past the end") {
            _ = try Self.parse(bytes, what: "truncated")
        }
    }

    @Test("not-macho: build-macho-not-macho, and no Mach-O magic")
    func notMachO() throws {
        let bytes = try Self.executable("not-macho")
        #expect(!MachOFile.hasMachOMagic(Data(bytes.prefix(4))))
        Self.expectError("build-macho-not-macho", what: "not-macho", mentioning: "Mach-O header") {
            _ = try Self.parse(bytes, what: "not-macho")
        }
    }

    @Test("Mach-O magic numbers: thin in both byte orders, 32 and 64 bits, and both fat headers")
    func magic() {
        for magic: [UInt8] in [
            [0xfe, 0xed, 0xfa, 0xce], [0xce, 0xfa, 0xed, 0xfe], [0xfe, 0xed, 0xfa, 0xcf], [0xcf, 0xfa, 0xed, 0xfe],
            [0xca, 0xfe, 0xba, 0xbe], [0xca, 0xfe, 0xba, 0xbf],
        ] {
            #expect(MachOFile.hasMachOMagic(Data(magic + [0, 0])))
        }
        #expect(!MachOFile.hasMachOMagic(Data([0xfe, 0xed, 0xfa])))
        #expect(!MachOFile.hasMachOMagic(Data("<?xml".utf8)))
        #expect(!MachOFile.hasMachOMagic(Data([0x50, 0x4b, 0x03, 0x04])))
        #expect(MachOFile.architectureName(cpuType: 0x0100_000c, cpuSubtype: 0x8000_0002) == "arm64e")
        #expect(MachOFile.architectureName(cpuType: 12, cpuSubtype: 11) == "armv7s")
        #expect(MachOFile.architectureName(cpuType: 0x99, cpuSubtype: 1) == "cputype 0x99/0x1")
    }

    // MARK: - Hostile variants of good files

    @Test("A fat header claiming 0xffffffff slices is refused, not allocated")
    func hugeSliceCount() throws {
        var bytes = try Self.executable("fat-production")
        Bytes.putBE32(&bytes, at: 4, 0xffff_ffff)
        Self.expectError("build-macho-malformed", mentioning: "4294967295 slices") { _ = try Self.parse(bytes) }
    }

    @Test("A fat slice past the end of the file is build-macho-truncated")
    func slicePastEnd() throws {
        var bytes = try Self.executable("fat-production")
        Bytes.putBE32(&bytes, at: 8 + 8, 0xffff_0000)  // slice 1's offset
        Self.expectError("build-macho-truncated", mentioning: "slice 1 of 2") { _ = try Self.parse(bytes) }
    }

    @Test("A load command with cmdsize 0 is refused (it would loop forever)")
    func zeroCommandSize() throws {
        var bytes = try Self.executable("thin-production")
        Bytes.putLE32(&bytes, at: 32 + 4, 0)
        Self.expectError("build-macho-malformed", mentioning: "cmdsize is 0") { _ = try Self.parse(bytes) }
    }

    @Test("sizeofcmds past the end of the file is build-macho-truncated")
    func commandsPastEnd() throws {
        var bytes = try Self.executable("thin-production")
        Bytes.putLE32(&bytes, at: 20, 0x7fff_0000)
        Self.expectError("build-macho-truncated", mentioning: "load commands") { _ = try Self.parse(bytes) }
    }

    @Test("A SuperBlob claiming 1,000,000 blobs is refused")
    func hugeBlobCount() throws {
        var bytes = try Self.executable("thin-production")
        let signature = try #require(Bytes.codeSignature(bytes))
        Bytes.putBE32(&bytes, at: signature.dataOffset + 8, 1_000_000)
        Self.expectError("build-macho-malformed", mentioning: "1000000 blobs") { _ = try Self.parse(bytes) }
    }

    @Test("A blob offset past the end of the SuperBlob is refused")
    func blobPastEnd() throws {
        var bytes = try Self.executable("thin-production")
        let signature = try #require(Bytes.codeSignature(bytes))
        let length = Bytes.be32(bytes, at: signature.dataOffset + 4)
        Bytes.putBE32(&bytes, at: signature.dataOffset + 16, length + 100)  // blob 1's offset
        Self.expectError("build-macho-malformed", mentioning: "blob 1 of") { _ = try Self.parse(bytes) }
    }

    @Test("A blob length past the end of the SuperBlob is refused")
    func blobLengthPastEnd() throws {
        var bytes = try Self.executable("thin-production")
        let signature = try #require(Bytes.codeSignature(bytes))
        let blobOffset = Int(Bytes.be32(bytes, at: signature.dataOffset + 16))
        Bytes.putBE32(&bytes, at: signature.dataOffset + blobOffset + 4, 0xffff_fff0)
        Self.expectError("build-macho-malformed", mentioning: "blob 1 of") { _ = try Self.parse(bytes) }
    }

    @Test("A DER element whose length runs past the DER blob is refused")
    func derLengthPastBlob() throws {
        let good = try Self.executable("thin-production")
        // [APPLICATION 16] claiming 65,535 bytes, with 3 actually there.
        let bytes = try Bytes.replacingBlob(in: good, slot: 7, payload: [0x70, 0x82, 0xff, 0xff, 0x02, 0x01, 0x01])
        Self.expectError("build-macho-entitlements-unreadable", mentioning: "DER entitlements") {
            _ = try Self.parse(bytes)
        }
    }

    @Test("100 nested DER dictionaries are refused (no unbounded recursion), and 20 too (the reader's own limit)")
    func deepDER() throws {
        let good = try Self.executable("thin-production")
        for levels in [100, 20] {
            var value = DERBuilder.utf8("production")
            for _ in 0..<levels {
                value = DERBuilder.dictionary([("a", value)])
            }
            let der = DERBuilder.entitlements([("aps-environment", value)])
            let bytes = try Bytes.replacingBlob(in: good, slot: 7, payload: der)
            Self.expectError("build-macho-entitlements-unreadable", mentioning: "DER entitlements") {
                _ = try Self.parse(bytes)
            }
        }
    }

    @Test("DER values of both encodings read as property-list values; an unknown tag names its key path")
    func derForms() throws {
        let good = try Self.executable("thin-production")
        let entries: [(String, [UInt8])] = [
            ("aps-environment", DERBuilder.utf8("production")),
            ("get-task-allow", DERBuilder.element(0x01, [0x00])),
            ("count", DERBuilder.element(0x02, [0x01, 0x00])),
            ("groups", DERBuilder.element(0x30, DERBuilder.utf8("a") + DERBuilder.utf8("b"))),
            ("nested", DERBuilder.dictionary([("flag", DERBuilder.element(0x01, [0xff]))])),
        ]
        let expected: PropertyListValue = .dictionary([
            "aps-environment": .string("production"), "get-task-allow": .bool(false), "count": .integer(256),
            "groups": .array([.string("a"), .string("b")]), "nested": .dictionary(["flag": .bool(true)]),
        ])
        // CoreEntitlements' form (codesign since Xcode 13).
        let modern = try Bytes.replacingBlob(in: good, slot: 7, payload: DERBuilder.entitlements(entries))
        #expect(try Self.parse(modern).slices.first?.codeSignature?.derEntitlements == expected)
        // The older form: the dictionary alone, as a SET of SEQUENCEs.
        let older = DERBuilder.element(0x31, entries.flatMap { DERBuilder.pair($0.0, $0.1) })
        let olderFile = try Bytes.replacingBlob(in: good, slot: 7, payload: older)
        #expect(try Self.parse(olderFile).slices.first?.codeSignature?.derEntitlements == expected)
        // A REAL (tag 9) has no place in entitlements: the error names the key.
        let real = DERBuilder.entitlements([("nested", DERBuilder.dictionary([("x", DERBuilder.element(0x09, [0]))]))])
        Self.expectError("build-macho-entitlements-unreadable", mentioning: "nested.x") {
            _ = try Self.parse(try Bytes.replacingBlob(in: good, slot: 7, payload: real))
        }
    }

    @Test("Every prefix of a signed file throws or reads; none traps")
    func everyPrefix() throws {
        let bytes = try Self.executable("thin-production")
        let signature = try #require(Bytes.codeSignature(bytes))
        // Every length in the header and the code signature, a stride through the rest.
        let lengths =
            Array(0..<min(bytes.count, 4096))
            + Array(stride(from: 4096, to: signature.dataOffset, by: 997))
            + Array(signature.dataOffset..<bytes.count)
        for length in lengths {
            _ = try? Self.parse(Array(bytes.prefix(length)))
        }
        Self.expectError("build-macho-truncated") { _ = try Self.parse(Array(bytes.dropLast())) }
    }

    @Test("Random byte changes in the headers and code signatures never trap")
    func randomMutations() throws {
        for name in ["thin-production", "fat-production", "entitlements-disagree"] {
            let good = try Self.executable(name)
            let file = try Self.parse(good)
            // Mutate where the reader looks: the first 4 KiB of each slice, and each code signature.
            var regions: [Range<Int>] = []
            for slice in file.slices {
                regions.append(slice.offset..<min(slice.offset + 4096, good.count))
            }
            for (offset, size) in Bytes.signatures(good) {
                regions.append(offset..<min(offset + size, good.count))
            }
            var random = SeededRandom(seed: 0x6b6b_7075_7368)
            for _ in 0..<3000 {
                var bytes = good
                for _ in 0..<(1 + Int(random.next() % 4)) {
                    let region = regions[Int(random.next() % UInt64(regions.count))]
                    guard !region.isEmpty else { continue }
                    let index = region.lowerBound + Int(random.next() % UInt64(region.count))
                    bytes[index] = random.next() % 3 == 0 ? 0xff : UInt8(truncatingIfNeeded: random.next())
                }
                _ = try? Self.parse(bytes)
            }
        }
    }
}

/// Reads and patches Mach-O bytes in tests (thin 64-bit little-endian slices, as the generated files are).
private enum Bytes {
    static func be32(_ b: [UInt8], at o: Int) -> UInt32 {
        b[o..<o + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func le32(_ b: [UInt8], at o: Int) -> UInt32 {
        b[o..<o + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func putBE32(_ b: inout [UInt8], at o: Int, _ v: UInt32) {
        for i in 0..<4 { b[o + i] = UInt8(truncatingIfNeeded: v >> (24 - 8 * i)) }
    }

    static func putLE32(_ b: inout [UInt8], at o: Int, _ v: UInt32) {
        for i in 0..<4 { b[o + i] = UInt8(truncatingIfNeeded: v >> (8 * i)) }
    }

    static func putLE64(_ b: inout [UInt8], at o: Int, _ v: UInt64) {
        for i in 0..<8 { b[o + i] = UInt8(truncatingIfNeeded: v >> (8 * i)) }
    }

    /// The LC_CODE_SIGNATURE of a little-endian image: where the command is and where it points.
    static func codeSignature(_ b: [UInt8], slice: Int = 0) -> (command: Int, dataOffset: Int, dataSize: Int)? {
        var position = slice + (le32(b, at: slice) == 0xfeed_facf ? 32 : 28)
        for _ in 0..<Int(le32(b, at: slice + 16)) {
            let size = Int(le32(b, at: position + 4))
            if le32(b, at: position) == 0x1d {
                return (position, slice + Int(le32(b, at: position + 8)), Int(le32(b, at: position + 12)))
            }
            position += size
        }
        return nil
    }

    /// Where each slice's code signature is, thin or fat.
    static func signatures(_ b: [UInt8]) -> [(offset: Int, size: Int)] {
        var slices = [0]
        if be32(b, at: 0) == 0xcafe_babe {
            slices = (0..<Int(be32(b, at: 4))).map { Int(be32(b, at: 8 + 20 * $0 + 8)) }
        }
        return slices.compactMap { codeSignature(b, slice: $0) }.map { ($0.dataOffset, $0.dataSize) }
    }

    /// A copy of thin file `b` whose SuperBlob has `payload` (after the 8-byte blob header) in `slot`, replacing or
    /// adding that blob. The signature moves to the end of the file; LC_CODE_SIGNATURE and __LINKEDIT follow it.
    static func replacingBlob(in b: [UInt8], slot: UInt32, payload: [UInt8]) throws -> [UInt8] {
        let signature = try #require(codeSignature(b))
        let superBlob = Array(b[signature.dataOffset..<(signature.dataOffset + signature.dataSize)])
        var blobs: [(UInt32, [UInt8])] = []
        for index in 0..<Int(be32(superBlob, at: 8)) {
            let type = be32(superBlob, at: 12 + 8 * index)
            let offset = Int(be32(superBlob, at: 16 + 8 * index))
            let length = Int(be32(superBlob, at: offset + 4))
            if type != slot { blobs.append((type, Array(superBlob[offset..<offset + length]))) }
        }
        var blob = [UInt8](repeating: 0, count: 8) + payload
        putBE32(&blob, at: 0, slot == 7 ? 0xfade_7172 : slot == 5 ? 0xfade_7171 : 0xfade_0000)
        putBE32(&blob, at: 4, UInt32(blob.count))
        blobs.append((slot, blob))
        blobs.sort { $0.0 < $1.0 }

        var newSuperBlob = [UInt8](repeating: 0, count: 12 + 8 * blobs.count)
        for (index, (type, data)) in blobs.enumerated() {
            putBE32(&newSuperBlob, at: 12 + 8 * index, type)
            putBE32(&newSuperBlob, at: 16 + 8 * index, UInt32(newSuperBlob.count))
            newSuperBlob += data
        }
        putBE32(&newSuperBlob, at: 0, 0xfade_0cc0)
        putBE32(&newSuperBlob, at: 4, UInt32(newSuperBlob.count))
        putBE32(&newSuperBlob, at: 8, UInt32(blobs.count))

        var out = Array(b[..<signature.dataOffset]) + newSuperBlob
        putLE32(&out, at: signature.command + 12, UInt32(newSuperBlob.count))
        // __LINKEDIT must still cover the end of the file.
        var position = 32
        for _ in 0..<Int(le32(out, at: 16)) {
            let isLinkEdit = Array(out[(position + 8)..<(position + 18)]) == Array("__LINKEDIT".utf8)
            if le32(out, at: position) == 0x19, isLinkEdit {
                let fileOffset = Int(le32(out, at: position + 40))
                putLE64(&out, at: position + 48, UInt64(out.count - fileOffset))
            }
            position += Int(le32(out, at: position + 4))
        }
        return out
    }
}

/// DER for test entitlements: definite lengths, short or long form.
private enum DERBuilder {
    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let n = content.count
        let length: [UInt8] =
            n < 0x80
            ? [UInt8(n)]
            : n < 0x100 ? [0x81, UInt8(n)] : [0x82, UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
        return [tag] + length + content
    }

    static func utf8(_ s: String) -> [UInt8] { element(0x0c, Array(s.utf8)) }
    static func pair(_ key: String, _ value: [UInt8]) -> [UInt8] { element(0x30, utf8(key) + value) }
    static func dictionary(_ entries: [(String, [UInt8])]) -> [UInt8] {
        element(0xb0, entries.flatMap { pair($0.0, $0.1) })
    }
    /// CoreEntitlements' form: [APPLICATION 16] { INTEGER 1, [CONTEXT 16] { ... } }.
    static func entitlements(_ entries: [(String, [UInt8])]) -> [UInt8] {
        element(0x70, element(0x02, [0x01]) + dictionary(entries))
    }
}
