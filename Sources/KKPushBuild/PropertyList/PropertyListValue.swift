public import Foundation
public import KKPushCore

/// A property-list value with its type kept: what a provisioning profile, an entitlements blob, an Info.plist or an
/// Xcode `DistributionSummary.plist` holds. XML and binary property lists are read by Foundation's
/// `PropertyListSerialization` (the well-kept parser of both forms); this type only names what came back, so that a
/// boolean is never mistaken for the integer 1 and a date or data blob keeps its type.
public indirect enum PropertyListValue: Sendable, Hashable {
    case string(String)
    case integer(Int)
    case real(Double)
    case bool(Bool)
    case date(Date)
    case data(Data)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    /// The string, if this is one.
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    /// The boolean, if this is one.
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    /// The integer, if this is one.
    public var integerValue: Int? { if case .integer(let i) = self { i } else { nil } }
    /// The date, if this is one.
    public var dateValue: Date? { if case .date(let d) = self { d } else { nil } }
    /// The data, if this is one.
    public var dataValue: Data? { if case .data(let d) = self { d } else { nil } }
    /// The array, if this is one.
    public var arrayValue: [PropertyListValue]? { if case .array(let a) = self { a } else { nil } }
    /// The dictionary, if this is one.
    public var dictionaryValue: [String: PropertyListValue]? { if case .dictionary(let d) = self { d } else { nil } }

    /// The value at `key`, if this is a dictionary that has it.
    public subscript(key: String) -> PropertyListValue? { dictionaryValue?[key] }

    /// The value as JSON (dates as ISO 8601 text, data as base64), for `--json` output.
    public var json: JSONValue {
        switch self {
        case .string(let s): .string(s)
        case .integer(let i): .int(i)
        case .real(let r): .double(r)
        case .bool(let b): .bool(b)
        case .date(let d): .string(d.formatted(.iso8601))
        case .data(let d): .string(d.base64EncodedString())
        case .array(let a): .array(a.map(\.json))
        case .dictionary(let d): .object(d.mapValues(\.json))
        }
    }
}
