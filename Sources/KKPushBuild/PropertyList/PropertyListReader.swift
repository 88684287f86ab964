public import Foundation
import KKPushCore

extension PropertyListValue {
    /// The form a property list was stored in.
    public enum Format: String, Sendable, Codable {
        case xml
        case binary
        case openStep = "openstep"
    }

    /// Reads an XML or binary property list.
    ///
    /// - Parameters:
    ///   - data: the bytes.
    ///   - what: what the bytes are, for the error ("the profile's plist", "Payload/App.app/Info.plist").
    /// - Throws: ``KKPushError`` `build-plist-unreadable`, naming `what`, when Foundation cannot read the bytes.
    public static func parse(_ data: Data, what: String) throws -> (value: PropertyListValue, format: Format) {
        if let problem = BinaryPropertyListShape.problem(in: data) {
            throw KKPushError(
                code: .buildPlistUnreadable,
                message: "\(what) is a binary property list that cannot be read: \(problem).",
                fix: "Check the file is the one Xcode wrote and is not truncated or altered.")
        }
        var format = PropertyListSerialization.PropertyListFormat.xml
        let object: Any
        do {
            object = try PropertyListSerialization.propertyList(from: data, options: [], format: &format)
        } catch {
            throw KKPushError(
                code: .buildPlistUnreadable,
                message:
                    "\(what) is not a property list that can be read (\(data.count) bytes, neither XML nor binary).",
                fix: "Check the file is the one Xcode wrote and is not truncated.",
                underlying: KKPushError.Cause(String(describing: error)))
        }
        guard let value = PropertyListValue(foundation: object) else {
            throw KKPushError(
                code: .buildPlistUnreadable,
                message: "\(what) holds a value of a type a property list cannot have.",
                fix: "Check the file is the one Xcode wrote.")
        }
        let kind: Format =
            switch format {
            case .binary: .binary
            case .openStep: .openStep
            default: .xml
            }
        return (value, kind)
    }

    /// Maps what `PropertyListSerialization` returns. Booleans come back as `Bool`, every other number as
    /// `NSNumber` (its `objCType` tells a real from an integer), so the check for `Bool` comes first.
    init?(foundation object: Any) {
        if type(of: object) == Bool.self, let b = object as? Bool {
            self = .bool(b)
        } else if let s = object as? String {
            self = .string(s)
        } else if let d = object as? Data {
            self = .data(d)
        } else if let d = object as? Date {
            self = .date(d)
        } else if let n = object as? NSNumber {
            let type = String(cString: n.objCType)
            if type == "d" || type == "f" {
                self = .real(n.doubleValue)
            } else if type == "c" || type == "B" {
                self = .bool(n.boolValue)
            } else {
                self = .integer(n.intValue)
            }
        } else if let a = object as? [Any] {
            var items: [PropertyListValue] = []
            items.reserveCapacity(a.count)
            for item in a {
                guard let v = PropertyListValue(foundation: item) else { return nil }
                items.append(v)
            }
            self = .array(items)
        } else if let d = object as? [String: Any] {
            var items: [String: PropertyListValue] = [:]
            for (k, item) in d {
                guard let v = PropertyListValue(foundation: item) else { return nil }
                items[k] = v
            }
            self = .dictionary(items)
        } else {
            return nil
        }
    }
}
