import Foundation
import KKPushCore
import Testing

@testable import KKPushBackend

/// The router writes JSON only through `JSONValue` (compact, sorted keys) and Codable; these check the
/// pre-built dienst trees the diensten endpoint answers with.
@Suite("The router's dienst JSON")
struct DienstJSONTests {
    static func text(_ value: JSONValue) -> String { String(decoding: value.encoded(), as: UTF8.self) }

    @Test("keys sorted, compact, nested objects and arrays")
    func shape() {
        let value: JSONValue = .object([
            "b": .int(1), "a": .object(["y": .bool(true), "x": .array([.int(1), .string("two"), .null])]),
            "c": .string("d"),
        ])
        #expect(Self.text(value) == #"{"a":{"x":[1,"two",null],"y":true},"b":1,"c":"d"}"#)
    }

    @Test("a dienst's pre-built JSON is its Codable form: same object, decodes to the same dienst")
    func dienstForm() throws {
        for dienst in DienstStore.seed(now: Date()).prefix(8) {
            let fragment = Data(dienst.jsonValue.encoded())
            #expect(try JSONDecoder().decode(Dienst.self, from: fragment) == dienst)
            let viaCodable = try JSONValue.parse(Array(try JSONEncoder().encode(dienst)))
            #expect(viaCodable == dienst.jsonValue)
            // And the app's reader (kkpush's parser, no JSONDecoder) reads it back to the same dienst.
            #expect(Dienst(json: try JSONValue.parse(Array(fragment))) == dienst)
        }
    }

    @Test("the app's reader refuses a dienst with a field missing or of the wrong type")
    func dienstReaderRefuses() throws {
        let dienst = DienstStore.seed(now: Date())[0]
        let members = try #require(dienst.jsonValue.objectValue)
        for key in [
            "id", "tenant_slug", "team_code", "title", "location", "start_time", "end_time", "volunteers",
            "min_volunteers",
        ] {
            var object = members
            object[key] = nil
            #expect(Dienst(json: .object(object)) == nil, "without \(key)")
        }
        for (key, value) in [("start_time", "gisteren"), ("volunteers", "Jan"), ("min_volunteers", "2")] {
            var object = members
            object[key] = .string(value)
            #expect(Dienst(json: .object(object)) == nil, "\(key) = \(value)")
        }
        var object = members
        object["volunteers"] = .array([.string("Jan"), .int(3)])
        #expect(Dienst(json: .object(object)) == nil)
    }
}
