import Foundation
import KKPushBuild
import KKPushCore
import KKPushTestSupport
import Testing

@Suite("Property lists")
struct PropertyListTests {
    @Test("XML and binary forms keep each value's type: a boolean is never the integer 1")
    func typesKept() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>b</key><true/><key>i</key><integer>1</integer>\
            <key>r</key><real>1.5</real><key>d</key><date>2020-01-01T00:00:00Z</date>\
            <key>x</key><data>AAE=</data><key>a</key><array><string>s</string><false/></array></dict></plist>
            """
        let (value, format) = try PropertyListValue.parse(Data(xml.utf8), what: "test")
        #expect(format == .xml)
        #expect(value["b"] == .bool(true))
        #expect(value["i"] == .integer(1))
        #expect(value["r"] == .real(1.5))
        #expect(value["d"] == .date(Date(timeIntervalSince1970: 1_577_836_800)))
        #expect(value["x"] == .data(Data([0, 1])))
        #expect(value["a"] == .array([.string("s"), .bool(false)]))
    }

    @Test("Bytes that are no property list are an error naming what they were")
    func garbage() {
        #expect {
            _ = try PropertyListValue.parse(Data("not a plist \u{1}".utf8), what: "Info.plist")
        } throws: { error in
            "\(error)".contains("Info.plist")
        }
    }

    /// A binary property list of `objects` (each its encoded bytes; references one byte, offsets one byte),
    /// object 0 at the top.
    static func bplist(_ objects: [[UInt8]]) -> Data {
        var bytes = Array("bplist00".utf8)
        var offsets: [UInt8] = []
        for object in objects {
            offsets.append(UInt8(bytes.count))
            bytes += object
        }
        let table = bytes.count
        bytes += offsets
        bytes += [0, 0, 0, 0, 0, 0, 1, 1]
        bytes += [0, 0, 0, 0, 0, 0, 0, UInt8(objects.count)]
        bytes += [UInt8](repeating: 0, count: 8)
        bytes += [0, 0, 0, 0, 0, 0, 0, UInt8(table)]
        return Data(bytes)
    }

    @Test(
        "A binary plist holding what a property list cannot (a set, a UID, a non-string key, itself) is refused, not trapped on",
        arguments: [
            ("a set", [[0xA1, 1], [0xC1, 2], [0x10, 7]]),
            ("a keyed archiver's UID", [[0xA1, 1], [0x80, 3]]),
            ("a key that is not a string", [[0xD1, 1, 2], [0xA1, 2], [0x10, 7]]),
            ("contains itself", [[0xA1, 0]]),
            ("an unknown marker", [[0xA1, 1], [0x70]]),
            ("a reference to nothing", [[0xA1, 9]]),
        ] as [(String, [[UInt8]])])
    func binaryShape(_ what: String, _ objects: [[UInt8]]) {
        #expect {
            _ = try PropertyListValue.parse(Self.bplist(objects), what: "Info.plist")
        } throws: { error in
            (error as? KKPushError)?.code.rawValue == "build-plist-unreadable" && "\(error)".contains("Info.plist")
        }
    }

    @Test("The same writer's well-formed plist reads: an array of a string-keyed dictionary and an integer")
    func binaryShapeAccepted() throws {
        let (value, format) = try PropertyListValue.parse(
            Self.bplist([[0xA2, 1, 3], [0xD1, 2, 3], [0x51, 0x6B], [0x10, 7]]), what: "test")
        #expect(format == .binary)
        #expect(value == .array([.dictionary(["k": .integer(7)]), .integer(7)]))
    }

    /// Found by the fuzz target `build-plist` (kept as its seeds): Foundation's reader accepted a set inside a binary
    /// plist and trapped bridging it; the second file starts `bplist0.`, which CoreFoundation reads as well.
    @Test(
        "The fuzzer's sets inside binary plists are errors",
        arguments: ["set-inside-binary-plist", "set-inside-bplist-with-other-version"])
    func fuzzSet(_ seed: String) throws {
        let data = try Data(contentsOf: Repository.file("Tests/Fuzz/Corpus/build-plist/\(seed)"))
        #expect(throws: KKPushError.self) { _ = try PropertyListValue.parse(data, what: "Info.plist") }
    }
}
