import Foundation
public import KKPushCore
public import KantineKoning

/// A JSON object body of the admin API, read field by field: a field of the wrong type is a problem that
/// names it, what was expected and what was sent; an unknown field is a warning (never silently ignored).
struct JSONBody {
    /// The members.
    var object: [String: JSONValue]
    /// What is wrong so far.
    var problems: [Problem] = []

    /// Parses `data` as one JSON object: a 400 naming what is wrong otherwise.
    static func parse(_ data: Data, what: String, example: String) -> Result<JSONBody, BackendRouter.ResponseError> {
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            return .failure(
                .init(
                    .error(
                        400, code: "body-empty", message: "\(what) is empty; a JSON object was expected.",
                        fix: "Send \(example).")))
        }
        if let syntax = JSONInput.syntaxProblem(Array(data)) {
            return .failure(
                .init(
                    .error(
                        400, code: "body-not-json",
                        message: syntax.hasPrefix("it is ")
                            ? "\(what) is \(syntax.dropFirst(6))." : "\(what) is not valid JSON: \(syntax).",
                        fix: "Send \(example).")))
        }
        guard let value = try? JSONValue.parse(Array(data)) else {
            return .failure(
                .init(
                    .error(400, code: "body-not-json", message: "\(what) is not valid JSON.", fix: "Send \(example).")))
        }
        guard let object = value.objectValue else {
            return .failure(
                .init(
                    .error(
                        400, code: "body-not-object",
                        message: "\(what) is \(value.jsonTypePhrase); a JSON object was expected.",
                        fix: "Send \(example).")))
        }
        return .success(JSONBody(object: object))
    }

    /// Adds a warning for members not in `known`.
    mutating func checkKnown(_ known: Set<String>) {
        let unknown = object.keys.filter { !known.contains($0) }.sorted()
        guard !unknown.isEmpty else { return }
        problems.append(
            Problem(
                .warning, code: .unknownField,
                message: "Ignored unknown field\(unknown.count == 1 ? "" : "s") \(unknown.joined(separator: ", ")).",
                fix: "Send only \(known.sorted().joined(separator: ", "))."))
    }

    private mutating func wrongType(_ name: String, _ value: JSONValue, expected: String, example: String) {
        problems.append(
            Problem(
                .error, code: .wrongType,
                message: "\(name) is \(value == .null ? "null" : "a JSON \(value.typeName)"); expected \(expected).",
                fix: "Send \(name) as \(example)."))
    }

    private mutating func missing(_ name: String, expected: String, example: String) {
        problems.append(
            Problem(
                .error, code: .missingField, message: "The field '\(name)' is missing (\(expected)).",
                fix: "Send \(name), for example \(example)."))
    }

    /// A string member; nil (with a problem) if it is of another type or, when `required`, missing or blank.
    /// An absent or null optional member is nil without a problem.
    mutating func string(_ name: String, required: Bool, example: String) -> String? {
        guard let value = object[name], value != .null || required else {
            if required { missing(name, expected: "a string", example: example) }
            return nil
        }
        guard let text = value.stringValue else {
            wrongType(name, value, expected: "a string", example: example)
            return nil
        }
        if text.trimmingWhitespace().isEmpty {
            problems.append(
                Problem(
                    .error, code: required ? .missingField : .emptyField, message: "\(name) is an empty string.",
                    fix: required
                        ? "Send \(name), for example \(example)." : "Send \(name) as \(example), or leave it out."))
            return nil
        }
        return text
    }

    /// A boolean member; nil if absent or null, or (with a problem) of another type.
    mutating func bool(_ name: String) -> Bool? {
        guard let value = object[name], value != .null else { return nil }
        guard let b = value.boolValue else {
            wrongType(name, value, expected: "true or false", example: "true or false (no quotes)")
            return nil
        }
        return b
    }

    /// An array of non-empty strings; nil (with a problem) if of another type or, when `required`, missing
    /// or empty.
    mutating func stringArray(_ name: String, required: Bool, example: String, allowEmpty: Bool = false) -> [String]? {
        guard let value = object[name], value != .null || required else {
            if required { missing(name, expected: "an array of strings", example: example) }
            return nil
        }
        guard let array = value.arrayValue else {
            wrongType(name, value, expected: "an array of strings", example: example)
            return nil
        }
        var strings: [String] = []
        for (i, element) in array.enumerated() {
            guard let text = element.stringValue, !text.trimmingWhitespace().isEmpty else {
                problems.append(
                    Problem(
                        .error, code: .wrongType,
                        message:
                            "\(name)[\(i)] is \(element.stringValue != nil ? "an empty string" : "a JSON \(element.typeName)"); expected a non-empty string.",
                        fix: "Send \(name) as \(example)."))
                return nil
            }
            strings.append(text.trimmingWhitespace())
        }
        if strings.isEmpty, !allowEmpty {
            problems.append(
                Problem(
                    .error, code: .missingField, message: "\(name) is an empty array.",
                    fix: "Send at least one, for example \(example)."))
            return nil
        }
        return strings
    }
}

/// The rule for a manager's e-mail, shared by `backend enroll` and the admin API: the app asks only team
/// managers for their e-mail (members enroll without one), so an e-mail with another role is refused, never
/// dropped; and it must look like an address.
public enum EnrollmentEmail {
    /// The problem with `email` for an enrollment of `role`, or nil. `field` and `roleField` name them as
    /// the caller's user knows them (`--email`/`--role manager`, or the JSON fields).
    public static func problem(_ email: String, role: EnrollmentRole?, field: String, roleField: String) -> Problem? {
        if let role, role != .manager {
            return Problem(
                .error, code: .emailWithoutManager,
                message:
                    "\(field) is a team manager's e-mail, and this enrollment's role is \(role.rawValue): members enroll without one (the app asks only managers for their e-mail).",
                fix: "Add \(roleField), or leave out \(field) for a member.")
        }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        if parts.count != 2 || parts[0].isEmpty || !parts[1].contains(".") || parts[1].hasPrefix(".")
            || parts[1].hasSuffix(".")
            || email.contains(where: { $0.isWhitespace })
        {
            return Problem(
                .error, code: .emailInvalid, message: "\(field) \"\(email)\" is not an e-mail address.",
                fix: "Give the manager's address, for example jan@example.nl.")
        }
        return nil
    }
}

/// The characters a tenant slug or device id may have: they appear in URLs (`/admin/enrollments/<tenant>/
/// <device_id>/revoke`, `?tenant=`), so a space or a `/` would make an enrollment that cannot be revoked.
public enum EnrollmentIdentifiers {
    /// The longest tenant slug or device id accepted.
    public static let maximumLength = 128

    /// The most teams one enrollment follows (the app's limit: five teams per user).
    public static let maximumTeams = 5

    /// The problem with an enrollment's team codes, or nil: more than ``maximumTeams``, or one twice.
    public static func teamCodesProblem(_ codes: [String], field: String) -> Problem? {
        if codes.count > maximumTeams {
            return Problem(
                .error, code: .tooManyTeams,
                message: "\(field) has \(codes.count) team codes; the app allows at most \(maximumTeams) teams.",
                fix: "Give at most \(maximumTeams) team codes, for example JO11-3,JO11-5.")
        }
        var seen = Set<String>()
        for code in codes where !seen.insert(code).inserted {
            return Problem(
                .error, code: .teamCodeRepeated, message: "\(field) has \(code) twice.",
                fix: "Give each team code once.")
        }
        return nil
    }

    /// The problem with `value` as a tenant slug or device id, or nil.
    public static func problem(_ value: String, field: String) -> Problem? {
        let allowed = value.unicodeScalars.allSatisfy {
            ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "_"
                || $0 == "."
        }
        if !allowed || value.count > maximumLength {
            return Problem(
                .error, code: .identifierInvalid,
                message:
                    "\(field) \"\(value)\" \(allowed ? "is longer than \(maximumLength) characters" : "has characters other than letters, digits, '-', '_' and '.'") (it goes into URLs such as /admin/enrollments/<tenant>/<device_id>/revoke).",
                fix: "Give a slug such as vvwilhelmus or an id such as dev-1234.")
        }
        return nil
    }
}
