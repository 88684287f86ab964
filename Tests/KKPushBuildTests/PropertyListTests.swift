import Foundation
import KKPushBuild
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
}
