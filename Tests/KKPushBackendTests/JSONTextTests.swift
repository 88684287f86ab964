import Foundation
import KKPushCore
import Testing

@testable import KKPushBackend

@Suite("The router's JSON writer")
struct JSONTextTests {
    static func text(_ value: Any) -> String { String(decoding: JSONText.data(value), as: UTF8.self) }

    @Test("keys sorted, compact, nested objects and arrays")
    func shape() {
        let value: [String: Any] = ["b": 1, "a": ["y": true, "x": [1, "two", NSNull()]], "c": "d"]
        #expect(Self.text(value) == #"{"a":{"x":[1,"two",null],"y":true},"b":1,"c":"d"}"#)
    }

    @Test("strings are escaped as RFC 8259 requires; slashes and non-ASCII are left as they are")
    func escaping() throws {
        let s = "quote \" backslash \\ newline \n tab \t cr \r bell \u{07} slash / é 🍟"
        let data = JSONText.data(["s": s])
        #expect(String(decoding: data, as: UTF8.self) == #"{"s":"quote \" backslash \\ newline \n tab \t cr \r bell \u0007 slash / é 🍟"}"#)
        let back = try #require(try JSONSerialization.jsonObject(with: data) as? [String: String])
        #expect(back["s"] == s)
    }

    @Test("booleans stay booleans and numbers stay numbers, native or from JSONSerialization")
    func numbers() throws {
        let parsed = try JSONSerialization.jsonObject(with: Data(#"{"t":true,"one":1,"half":0.5,"big":1700000000000}"#.utf8))
        #expect(Self.text(parsed) == #"{"big":1700000000000,"half":0.5,"one":1,"t":true}"#)
        let native: [String: Any] = ["t": true, "one": 1, "half": 0.5, "inf": Double.infinity, "none": Optional<String>.none as Any]
        #expect(Self.text(native) == #"{"half":0.5,"inf":null,"none":null,"one":1,"t":true}"#)
    }

    @Test("whatever it writes, JSONSerialization reads back to the same tree")
    func roundTrip() throws {
        let value: [String: Any] = [
            "dienst": ["id": "d-1", "volunteers": ["Sanne", "Jan"], "min_volunteers": 2],
            "fan_out": ["accepted": 600, "deliveries": (0..<50).map { ["token": "t\($0)", "status": 200] }],
        ]
        let back = try #require(try JSONSerialization.jsonObject(with: JSONText.data(value)) as? NSDictionary)
        #expect(back == (value as NSDictionary))
    }

    @Test("a dienst's pre-encoded JSON is its Codable form: same object, decodes to the same dienst")
    func dienstForm() throws {
        for dienst in DienstStore.seed(now: Date()).prefix(8) {
            let fragment = JSONText.data(dienst.jsonObject)
            #expect(try JSONDecoder().decode(Dienst.self, from: fragment) == dienst)
            let viaCodable = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(dienst)) as? NSDictionary
            let viaText = try JSONSerialization.jsonObject(with: fragment) as? NSDictionary
            #expect(viaCodable != nil && viaCodable == viaText)
            // And the app's reader (kkpush's parser, no JSONDecoder) reads it back to the same dienst.
            #expect(Dienst(json: try JSONValue.parse(Array(fragment))) == dienst)
        }
    }

    @Test("the app's reader refuses a dienst with a field missing or of the wrong type")
    func dienstReaderRefuses() throws {
        let dienst = DienstStore.seed(now: Date())[0]
        for key in ["id", "tenant_slug", "team_code", "title", "location", "start_time", "end_time", "volunteers", "min_volunteers"] {
            var object = dienst.jsonObject
            object[key] = nil
            #expect(Dienst(json: try JSONValue.parse(Array(JSONText.data(object)))) == nil, "without \(key)")
        }
        for (key, value) in [("start_time", "gisteren"), ("volunteers", "Jan"), ("min_volunteers", "2")] as [(String, Any)] {
            var object = dienst.jsonObject
            object[key] = value
            #expect(Dienst(json: try JSONValue.parse(Array(JSONText.data(object)))) == nil, "\(key) = \(value)")
        }
        var object = dienst.jsonObject
        object["volunteers"] = ["Jan", 3]
        #expect(Dienst(json: try JSONValue.parse(Array(JSONText.data(object)))) == nil)
    }
}
