/// What an app's `ActivityAttributes` type decodes: its name, its attribute fields and its `ContentState` fields,
/// each with the Swift type the device's `JSONDecoder` reads it as. Read from a JSON file (``init(json:)``), written
/// by `kkpush payload activity-attributes` from the app's Swift source (its reader lives apart from this module,
/// which reads no Swift and does no I/O).
///
/// ActivityKit decodes `aps.attributes` and `aps.content-state` with `JSONDecoder`'s default strategies: a `Date` is
/// a number of seconds since 2001-01-01 (`deferredToDate`, `Date(timeIntervalSinceReferenceDate:)`), not Unix time
/// and not an ISO 8601 string; a missing non-optional key, a wrong JSON type, an unknown enum raw value, a
/// `ClosedRange` or `Range` whose lower bound is above its upper, or an empty string for a `URL` fails the whole
/// decode, and the device drops the push while APNs answered 200. ``problems(in:)`` finds each, naming the field
/// (`live-activity-would-not-decode`); and a `Date` sent as Unix time, which decodes but lands decades (or, in
/// milliseconds, millennia) late, as `live-activity-date-misread`.
public struct ActivityAttributesDescription: Sendable, Hashable {
    /// The JSON type a field decodes from.
    public indirect enum FieldType: Sendable, Hashable, CustomStringConvertible {
        case string, int, double, bool
        /// `Date` with `deferredToDate`: a number, seconds since 2001-01-01.
        case date
        /// `URL` (a string) or `UUID` (a string of a UUID).
        case url, uuid
        case array(FieldType)
        /// `[String: T]`.
        case dictionary(FieldType)
        /// `ClosedRange<T>` / `Range<T>`: an array of two values.
        case range(FieldType)
        case optional(FieldType)
        /// A nested `Codable` struct.
        case object(name: String, fields: [Field])
        /// An enum with raw values: the raw type (`string` or `int`) and its raw values.
        case enumeration(name: String, raw: FieldType, values: [String])

        /// The Swift spelling.
        public var description: String {
            switch self {
            case .string: "String"
            case .int: "Int"
            case .double: "Double"
            case .bool: "Bool"
            case .date: "Date"
            case .url: "URL"
            case .uuid: "UUID"
            case .array(let t): "[\(t)]"
            case .dictionary(let t): "[String: \(t)]"
            case .range(let t): "ClosedRange<\(t)>"
            case .optional(let t): "\(t)?"
            case .object(let name, _): name
            case .enumeration(let name, _, _): name
            }
        }
    }

    /// One stored property: its key in the JSON and its type.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var type: FieldType
        public init(_ name: String, _ type: FieldType) {
            self.name = name
            self.type = type
        }
    }

    /// The `ActivityAttributes` type's name: what `aps.attributes-type` of a start must be.
    public var name: String
    /// The attribute fields (`aps.attributes` of a start).
    public var attributes: [Field]
    /// The `ContentState` fields (`aps.content-state`).
    public var contentState: [Field]

    public init(name: String, attributes: [Field], contentState: [Field]) {
        self.name = name
        self.attributes = attributes
        self.contentState = contentState
    }

    // MARK: Checking a payload

    /// Why `payload`'s Live Activity content would not decode on the device, one warning per field at fault: for a
    /// start, `aps.attributes-type` must be ``name`` and `aps.attributes` and `aps.content-state` must decode; for an
    /// update or end (a broadcast too), `aps.content-state` must decode when present. Nothing for a payload without
    /// an `event`.
    public func problems(in payload: Payload) -> [Problem] {
        guard let aps = payload.aps, let event = aps.event else { return [] }
        var problems: [Problem] = []
        if event == .start {
            if let type = aps.attributesType, type != name {
                problems.append(
                    Self.problem(
                        "aps.attributes-type", "is '\(type)', but the app's ActivityAttributes type is \(name)",
                        fix: "Set aps.attributes-type to \"\(name)\"."))
            }
            if let attributes = aps.attributes {
                problems += Self.check(
                    attributes, against: .object(name: name, fields: self.attributes), at: "aps.attributes")
            }
        }
        if let state = aps.contentState {
            problems += Self.check(
                state, against: .object(name: "\(name).ContentState", fields: contentState), at: "aps.content-state")
        }
        return problems
    }

    static func problem(_ path: String, _ what: String, fix: String) -> Problem {
        Problem(
            .warning, code: .liveActivityWouldNotDecode,
            message: "\(path) \(what): the device would not decode it and drops the push (APNs still answers 200).",
            fix: fix)
    }

    /// Seconds between 1970-01-01 (Unix time) and 2001-01-01 (`Date`'s reference date, what `deferredToDate` reads).
    static let unixToReferenceDate = 978_307_200.0
    /// A `Date` sent as this many seconds or more is taken for Unix time: as seconds since 2001 it is past 2048, and
    /// as Unix time it is after mid-2017. kkpush's choice (no Live Activity dates decades ahead are expected).
    static let unixTimeThreshold = 1.5e9
    /// At or over this, a Unix time is in milliseconds (10^11 s since 2001 is the year 5170; the payload rules'
    /// threshold for timestamps in milliseconds).
    static let millisecondsThreshold = 1e11

    /// A `Date` field holding a Unix time (seconds or milliseconds): it decodes, but as seconds since 2001, so the
    /// device shows a date decades or millennia late; nil for a plausible number.
    static func misreadDate(_ value: Double, at path: String) -> Problem? {
        guard value >= unixTimeThreshold else { return nil }
        let year = Int(2001 + value / 31_556_952)
        let number = value == value.rounded() && abs(value) < 1e18 ? String(Int64(value)) : String(value)
        let milliseconds = value >= millisecondsThreshold
        let seconds = milliseconds ? value / 1000 : value
        let fixed = seconds - unixToReferenceDate
        let fixedText = fixed == fixed.rounded() && abs(fixed) < 1e18 ? String(Int64(fixed)) : String(fixed)
        let unit = milliseconds ? "milliseconds" : "seconds"
        return Problem(
            .warning, code: .liveActivityDateMisread,
            message:
                "\(path) is \(number), a Unix time in \(unit): ActivityKit decodes a Date as seconds since 2001-01-01 (JSONDecoder's default deferredToDate), so the device reads it as the year \(year) (APNs still answers 200).",
            fix:
                "Send \(path) as seconds since 2001-01-01: \(milliseconds ? "the Unix time in seconds (\(number) / 1000)" : "the Unix time") minus 978307200, here \(fixedText)."
        )
    }

    /// Seconds since 2001-01-01 of an ISO 8601 date-time (`2026-05-01T14:30:00Z`, fraction and offset allowed), or
    /// nil when `text` is not one.
    static func referenceSeconds(iso8601 text: String) -> Double? {
        let c = Array(text.utf8)
        func digits(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= c.count else { return nil }
            var n = 0
            for k in from..<(from + count) {
                guard c[k] >= 48 && c[k] <= 57 else { return nil }
                n = n * 10 + Int(c[k] - 48)
            }
            return n
        }
        guard c.count >= 10, let year = digits(0, 4), c[4] == 45, let month = digits(5, 2), c[7] == 45,
            let day = digits(8, 2), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var seconds = 0.0
        var k = 10
        if k < c.count, c[k] == 84 || c[k] == 116 || c[k] == 32 {
            guard let h = digits(k + 1, 2), c.count > k + 3, c[k + 3] == 58, let m = digits(k + 4, 2) else {
                return nil
            }
            seconds = Double(h * 3600 + m * 60)
            k += 6
            if k < c.count, c[k] == 58, let s = digits(k + 1, 2) {
                seconds += Double(s)
                k += 3
            }
            if k < c.count, c[k] == 46 || c[k] == 44 {
                var scale = 0.1
                k += 1
                while k < c.count, c[k] >= 48 && c[k] <= 57 {
                    seconds += Double(c[k] - 48) * scale
                    scale /= 10
                    k += 1
                }
            }
            if k < c.count, c[k] == 43 || c[k] == 45, let oh = digits(k + 1, 2) {
                let om = c.count > k + 3 && c[k + 3] == 58 ? digits(k + 4, 2) ?? 0 : digits(k + 3, 2) ?? 0
                seconds -= Double((c[k] == 43 ? 1 : -1) * (oh * 3600 + om * 60))
            }
        }
        // Days from 1970-01-01 to the date (proleptic Gregorian calendar).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Double(days) * 86_400 + seconds - unixToReferenceDate
    }

    /// The problems of `value` read as `type` at `path`.
    static func check(_ value: JSONValue, against type: FieldType, at path: String) -> [Problem] {
        func wrong(_ expected: String, fix: String? = nil) -> [Problem] {
            [
                problem(
                    path,
                    "is \(value == .null ? "null" : "\(value.typeName) \(value.description.prefix(60))"), but the app decodes \(type) (\(expected))",
                    fix: fix ?? "Send \(expected) at \(path).")
            ]
        }
        switch type {
        case .optional(let wrapped):
            if case .null = value { return [] }
            return check(value, against: wrapped, at: path)
        case .string:
            return value.stringValue != nil ? [] : wrong("a string")
        case .url:
            guard let text = value.stringValue else { return wrong("a URL string") }
            // URL's decoder throws on a string URL(string:) refuses; the empty string is the one apps send.
            return text.isEmpty
                ? [
                    problem(
                        path, "is the empty string, which URL's decoder refuses (URL(string: \"\") is nil)",
                        fix: "Send a URL at \(path); or declare the field URL? and leave it out (or null).")
                ] : []
        case .uuid:
            guard let text = value.stringValue else { return wrong("a UUID string") }
            return isUUID(text) ? [] : wrong("a UUID string such as \"E621E1F8-C36C-495A-93FC-0C247A3E6E5F\"")
        case .int:
            guard case .int = value else {
                if let d = value.doubleValue, d == d.rounded(), abs(d) < 9.2e18 { return [] }
                return wrong("a whole number")
            }
            return []
        case .double:
            return value.doubleValue != nil ? [] : wrong("a number")
        case .bool:
            guard case .bool = value else { return wrong("true or false (not 0 or 1)") }
            return []
        case .date:
            if let number = value.doubleValue { return misreadDate(number, at: path).map { [$0] } ?? [] }
            if let text = value.stringValue, let seconds = referenceSeconds(iso8601: text) {
                let number = seconds == seconds.rounded() ? String(Int64(seconds)) : String(seconds)
                return [
                    problem(
                        path,
                        "is the ISO 8601 date \"\(text.prefix(40))\", but the app decodes Date from a number of seconds since 2001-01-01 (JSONDecoder's default deferredToDate), not a string",
                        fix:
                            "Send \(path) as \(number) (seconds since 2001-01-01: Unix time minus 978307200), not a string."
                    )
                ]
            }
            return wrong(
                "a number of seconds since 2001-01-01, JSONDecoder's default date strategy",
                fix:
                    "Send \(path) as seconds since 2001-01-01 (Unix time minus 978307200), not a string; or decode it with another dateDecodingStrategy in the app."
            )
        case .array(let element):
            guard let items = value.arrayValue else { return wrong("an array") }
            return items.enumerated().flatMap { check($0.element, against: element, at: "\(path)[\($0.offset)]") }
        case .range(let bound):
            guard let items = value.arrayValue, items.count == 2 else {
                return wrong("an array of its lower and upper bound, [lower, upper]")
            }
            let bounds =
                check(items[0], against: bound, at: "\(path)[0]") + check(items[1], against: bound, at: "\(path)[1]")
            // ClosedRange's and Range's decoders throw when the lower bound is above the upper.
            let reversed: Bool
            if let lower = items[0].doubleValue, let upper = items[1].doubleValue {
                reversed = lower > upper
            } else if let lower = items[0].stringValue, let upper = items[1].stringValue {
                reversed = lower > upper
            } else {
                reversed = false
            }
            guard reversed else { return bounds }
            return bounds + [
                problem(
                    path,
                    "is [\(items[0].description.prefix(30)), \(items[1].description.prefix(30))], whose lower bound is above its upper, which \(type)'s decoder refuses",
                    fix: "Send \(path) as [lower, upper], the smaller bound first.")
            ]
        case .dictionary(let element):
            guard let members = value.objectValue else { return wrong("an object") }
            return members.keys.sorted().flatMap { check(members[$0]!, against: element, at: "\(path).\($0)") }
        case .object(_, let fields):
            guard let members = value.objectValue else { return wrong("an object") }
            var problems: [Problem] = []
            for field in fields {
                guard let member = members[field.name] else {
                    if case .optional = field.type { continue }
                    problems.append(
                        problem(
                            "\(path).\(field.name)",
                            "is missing, but \(type).\(field.name) (\(field.type)) is not optional",
                            fix: "Add \"\(field.name)\" to \(path)."))
                    continue
                }
                problems += check(member, against: field.type, at: "\(path).\(field.name)")
            }
            return problems
        case .enumeration(_, let raw, let values):
            let text: String?
            switch raw {
            case .int:
                if case .int(let i) = value { text = String(i) } else { text = nil }
            default:
                text = value.stringValue
            }
            guard let text else { return wrong("one of \(values.joined(separator: ", "))") }
            return values.contains(text)
                ? []
                : [
                    problem(
                        path, "is '\(text)', which is not a case of \(type) (\(values.joined(separator: ", ")))",
                        fix: "Send one of the raw values \(values.joined(separator: ", ")).")
                ]
        }
    }

    static func isUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false).map(\.count)
        return groups == [8, 4, 4, 4, 12] && text.allSatisfy { $0 == "-" || $0.isHexDigit }
    }

    // MARK: JSON form

    /// The JSON form: `{"name", "date_decoding": "deferredToDate", "attributes": [FIELD], "content_state": [FIELD]}`,
    /// a FIELD `{"name", "type"}`, a type `"String"`, `"Int"`, `"Double"`, `"Bool"`, `"Date"`, `"URL"`, `"UUID"` or
    /// `{"array": T}`, `{"dictionary": T}`, `{"range": T}`, `{"optional": T}`, `{"struct": NAME, "fields": [FIELD]}`,
    /// `{"enum": NAME, "raw": "String"|"Int", "values": [...]}`.
    public var json: JSONValue {
        .object([
            "name": .string(name), "date_decoding": "deferredToDate",
            "attributes": .array(attributes.map(Self.json)), "content_state": .array(contentState.map(Self.json)),
        ])
    }

    static func json(_ field: Field) -> JSONValue { .object(["name": .string(field.name), "type": json(field.type)]) }

    static func json(_ type: FieldType) -> JSONValue {
        switch type {
        case .string, .int, .double, .bool, .date, .url, .uuid: .string(type.description)
        case .array(let t): .object(["array": json(t)])
        case .dictionary(let t): .object(["dictionary": json(t)])
        case .range(let t): .object(["range": json(t)])
        case .optional(let t): .object(["optional": json(t)])
        case .object(let name, let fields): .object(["struct": .string(name), "fields": .array(fields.map(json))])
        case .enumeration(let name, let raw, let values):
            .object([
                "enum": .string(name), "raw": .string(raw.description), "values": .array(values.map(JSONValue.string)),
            ])
        }
    }

    /// Reads the JSON form; throws `activity-attributes-invalid` naming the path at fault.
    public init(json value: JSONValue) throws(KKPushError) {
        guard let object = value.objectValue, let name = object["name"]?.stringValue, !name.isEmpty else {
            throw Self.invalid("the top level", "an object with a non-empty \"name\"")
        }
        if let strategy = object["date_decoding"], strategy.stringValue != "deferredToDate" {
            throw Self.invalid(
                "date_decoding", "\"deferredToDate\" (ActivityKit decodes with JSONDecoder's default strategy)")
        }
        self.name = name
        attributes = try Self.fields(object["attributes"] ?? .array([]), at: "attributes")
        contentState = try Self.fields(object["content_state"] ?? .array([]), at: "content_state")
    }

    static func invalid(_ path: String, _ expected: String) -> KKPushError {
        KKPushError(
            code: .activityAttributesInvalid,
            message: "The ActivityAttributes description (activityAttributes) is not one: \(path) must be \(expected).",
            fix: "Write it from the app's Swift source (payloadActivityAttributesCommand), or correct \(path).")
    }

    static func fields(_ value: JSONValue, at path: String) throws(KKPushError) -> [Field] {
        guard let items = value.arrayValue else { throw invalid(path, "an array of {\"name\", \"type\"}") }
        var out: [Field] = []
        for (i, item) in items.enumerated() {
            guard let name = item["name"]?.stringValue, let type = item["type"] else {
                throw invalid("\(path)[\(i)]", "{\"name\": string, \"type\": type}")
            }
            out.append(Field(name, try fieldType(type, at: "\(path)[\(i)].type")))
        }
        return out
    }

    static func fieldType(_ value: JSONValue, at path: String) throws(KKPushError) -> FieldType {
        if let text = value.stringValue {
            switch text {
            case "String": return .string
            case "Int": return .int
            case "Double": return .double
            case "Bool": return .bool
            case "Date": return .date
            case "URL": return .url
            case "UUID": return .uuid
            default: throw invalid(path, "String, Int, Double, Bool, Date, URL, UUID or an object (not '\(text)')")
            }
        }
        guard let object = value.objectValue else { throw invalid(path, "a type name or object") }
        if let t = object["array"] { return .array(try fieldType(t, at: path + ".array")) }
        if let t = object["dictionary"] { return .dictionary(try fieldType(t, at: path + ".dictionary")) }
        if let t = object["range"] { return .range(try fieldType(t, at: path + ".range")) }
        if let t = object["optional"] { return .optional(try fieldType(t, at: path + ".optional")) }
        if let name = object["struct"]?.stringValue {
            return .object(name: name, fields: try fields(object["fields"] ?? .array([]), at: path + ".fields"))
        }
        if let name = object["enum"]?.stringValue, let raw = object["raw"]?.stringValue,
            let values = object["values"]?.arrayValue?.compactMap(\.stringValue)
        {
            guard raw == "String" || raw == "Int" else { throw invalid(path + ".raw", "\"String\" or \"Int\"") }
            return .enumeration(name: name, raw: raw == "Int" ? .int : .string, values: values)
        }
        throw invalid(path, "one of array, dictionary, range, optional, struct (with fields), enum (with raw, values)")
    }
}
