import Foundation
import KKPushCLISupport
import KKPushCore
import Testing

@testable import KKPushCLI

/// The CLI's one JSON writer prints what `JSONSerialization` (`.prettyPrinted, .sortedKeys,
/// .withoutEscapingSlashes`) printed before issue #17: the same layout, key order, escapes and numbers.
struct OutputJSONTests {
    @Test("Output.pretty matches JSONSerialization's pretty printing")
    func sameAsFoundation() throws {
        let value: JSONValue = [
            "apns_id": .null, "APNS_ENV": "sandbox", "APNS_FORCE_ENV": .null, "a_b": 1, "aB": 2, "a9": 3, "a10": 4,
            "url": "https://example.com/a/b", "escapes": "quote \" backslash \\ tab \t newline \n bell \u{7} é",
            "whole": .double(12), "fraction": .double(0.5), "tiny": .double(1.5e-7), "huge": .double(1e20),
            "int": .int(-3), "yes": true, "no": false, "empty_object": [:], "empty_array": [],
            "nested": ["list": [1, [2.5], ["z": "last", "a": "first"]], "problems": []],
        ]
        let options: JSONSerialization.WritingOptions = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let foundation = try JSONSerialization.jsonObject(with: Data(value.encoded()))
        let expected = String(
            decoding: try JSONSerialization.data(withJSONObject: foundation, options: options), as: UTF8.self)
        #expect(Output.pretty(value) == expected)
        #expect(Output.pretty(.array([])) == "[\n\n]")
    }
}
