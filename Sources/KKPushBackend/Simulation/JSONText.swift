import Foundation
import KKPushCore

/// Writes a JSON value built from dictionaries, arrays, strings, numbers, booleans and `NSNull`
/// (what the router's responses are made of) as compact UTF-8 with the object keys sorted, without
/// going through `JSONSerialization`; strings are escaped by ``JSONValue/writeString(_:to:)``, as
/// payloads are.
///
/// Why not `JSONSerialization.data(withJSONObject:options: .sortedKeys)`: on Linux it bridges every
/// value through `NSObject` and sorts keys with ICU collation. A dienst change's answer lists one
/// delivery per device; for 600 devices that took about 50 ms of CPU, in the middle of the refresh
/// burst the change causes. Keys here sort by their UTF-8 bytes (the backend's keys are ASCII).
enum JSONText {
    /// JSON text written as it is (a value encoded before, such as a dienst).
    struct Raw {
        var bytes: [UInt8]
    }

    /// The JSON text of `value`; values that are not JSON (a `Date`, a struct) are written as `null`.
    static func data(_ value: Any) -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, to: &out)
        return Data(out)
    }

    private static func write(_ value: Any, to out: inout [UInt8]) {
        // Native Swift scalars by their exact type first: casts such as `as? Bool` would also match an
        // NSNumber 1 (the numbers `JSONSerialization.jsonObject` makes), which must stay a number.
        let type = Swift.type(of: value)
        if let raw = value as? Raw {
            out += raw.bytes
        } else if type == Bool.self {
            out += (value as! Bool) ? Array("true".utf8) : Array("false".utf8)
        } else if type == Int.self {
            out += Array(String(value as! Int).utf8)
        } else if type == Double.self {
            writeDouble(value as! Double, to: &out)
        } else if let s = value as? String {
            writeString(s, to: &out)
        } else if let dictionary = value as? [String: Any] {
            out.append(UInt8(ascii: "{"))
            var first = true
            for key in dictionary.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                write(dictionary[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        } else if let array = value as? [Any] {
            out.append(UInt8(ascii: "["))
            for (i, element) in array.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        } else if let n = value as? NSNumber {
            if String(cString: n.objCType) == "c" {  // how Foundation marks a boolean NSNumber
                out += n.boolValue ? Array("true".utf8) : Array("false".utf8)
            } else {
                writeDouble(n.doubleValue, to: &out)
            }
        } else {
            // NSNull, nil, and anything that is not JSON.
            out += Array("null".utf8)
        }
    }

    private static func writeDouble(_ d: Double, to out: inout [UInt8]) {
        guard d.isFinite else {
            out += Array("null".utf8)
            return
        }
        if d == d.rounded(), abs(d) < 1e15 {
            out += Array(String(Int(d)).utf8)
        } else {
            out += Array("\(d)".utf8)
        }
    }

    private static func writeString(_ s: String, to out: inout [UInt8]) { JSONValue.writeString(s, to: &out) }
}
