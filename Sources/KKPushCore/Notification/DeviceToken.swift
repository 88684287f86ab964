/// Device tokens as they travel in the request path: hexadecimal, lowercase, even length (spec §7).
///
/// Length rules kkpush applies (Apple says not to assume a size):
/// - at least 64 hex characters (32 bytes). Every token APNs has issued is at least 32 bytes; a shorter
///   one is a truncated copy (from a log or a database column), so it is an **error** (`BadDeviceToken`),
///   which is what APNs answers for it.
/// - at most 400 hex characters (200 bytes): kkpush's generous cap, not an Apple limit (tokens up to
///   160 hex characters are seen in the wild). Longer is an error (`BadDeviceToken`).
public enum DeviceToken {
    /// The shortest token kkpush accepts, in hex characters (32 bytes).
    public static let minimumHexLength = 64
    /// The longest token kkpush accepts, in hex characters (200 bytes).
    public static let maximumHexLength = 400

    /// Turns a token as a person or a log gives it into the form APNs wants.
    ///
    /// Strips surrounding white space, the `<` `>` and inner spaces of the `<abcd ef01 ...>` form that
    /// `NSData.description` printed before iOS 13, and lowercases; each change is a warning with code
    /// `token-normalized`. Errors (code `BadDeviceToken`, or `MissingDeviceToken` when nothing is left):
    /// non-hex characters, odd length, shorter than 64 or longer than 400 hex characters.
    public static func normalize(_ raw: String) -> DeviceTokenNormalization {
        // A token already in its sent form (lowercase hex digits only: what the app's %02x gives, and every line of a
        // large batch) has nothing to normalise: judged on its bytes, without the copies below.
        if !raw.isEmpty, raw.utf8.allSatisfy(\.isLowercaseASCIIHexDigit) {
            let errors = formatErrors(raw)
            return DeviceTokenNormalization(token: errors.isEmpty ? raw : nil, problems: errors)
        }
        var problems: [Problem] = []
        var text = raw.trimmingWhitespace()
        if text != raw {
            problems.append(normalized("surrounding white space was removed"))
        }
        if text.hasPrefix("<") && text.hasSuffix(">") && text.count >= 2 {
            text = String(text.dropFirst().dropLast())
            problems.append(
                normalized("the < > brackets of the old NSData description form (iOS 12 and earlier) were removed"))
        }
        if text.contains(where: { $0 == " " || $0 == "\t" }) {
            text.removeAll { $0 == " " || $0 == "\t" }
            problems.append(normalized("the spaces between groups of hex digits were removed"))
        }
        let lower = text.lowercased()
        if lower != text {
            text = lower
            problems.append(normalized("uppercase hex digits were lowercased (APNs's examples are lowercase)"))
        }
        let errors = formatErrors(text)
        problems += errors
        return DeviceTokenNormalization(token: errors.isEmpty ? text : nil, problems: problems)
    }

    /// Whether every byte of `token` is an ASCII hex digit, read as contiguous bytes (a walk over its `utf8` view
    /// cost about forty instructions a byte, and the mock runs this for every request).
    static func allASCIIHex(_ token: String) -> Bool {
        var token = token
        return token.withUTF8 { bytes in
            for byte in bytes where !byte.isASCIIHexDigit { return false }
            return true
        }
    }

    /// The format errors of a token exactly as it would be sent (both cases of hex digits accepted):
    /// empty (`MissingDeviceToken`), non-hex, odd length, too short or too long (`BadDeviceToken`).
    public static func formatErrors(_ token: String) -> [Problem] {
        if token.isEmpty {
            return [
                Problem(
                    .error, code: .missingDeviceToken,
                    message: "The device token is empty.",
                    fix: "Pass the app's hex device token (64 or more hex digits).")
            ]
        }
        // All-ASCII-hex tokens (every well-formed one) are judged on their bytes; only others are read as scalars.
        let allHex = Self.allASCIIHex(token)
        if !allHex, let bad = token.unicodeScalars.first(where: { !$0.isHexDigit }) {
            let shown = bad.value < 0x20 || bad.value == 0x7F ? String(format4(bad.value)) : String(bad)
            return [
                Problem(
                    .error, code: .badDeviceToken,
                    message: "The device token contains '\(shown)', which is not a hex digit.",
                    fix: "Use the token as hex digits only (0-9, a-f), as the app printed it with %02x per byte.")
            ]
        }
        let count = token.utf8.count  // all ASCII here: one byte per digit
        if count % 2 != 0 {
            return [
                Problem(
                    .error, code: .badDeviceToken,
                    message: "The device token has an odd number of hex digits (\(count)); a byte is two.",
                    fix: "Copy the whole token again; a digit was lost or added.")
            ]
        }
        if count < minimumHexLength {
            return [
                Problem(
                    .error, code: .badDeviceToken,
                    message:
                        "The device token is \(count) hex digits (\(count / 2) bytes); APNs tokens are at least 64 (32 bytes), so this one is truncated.",
                    fix: "Copy the whole token from the app or the backend's records, not from a shortened log line."
                )
            ]
        }
        if count > maximumHexLength {
            return [
                Problem(
                    .error, code: .badDeviceToken,
                    message:
                        "The device token is \(count) hex digits (\(count / 2) bytes), more than the \(maximumHexLength) (200 bytes) accepted.",
                    fix: "Check that this is one device token and not several joined, or another kind of value.")
            ]
        }
        return []
    }

    /// True if `token` can be sent as it is (hex, even length, within the length bounds).
    public static func isWellFormed(_ token: String) -> Bool { formatErrors(token).isEmpty }

    /// A token shown safely in logs and messages: the first 12 characters and `…` (``Redaction/prefix(_:keep:)``).
    ///
    /// A value of ``Redaction/minimumShownLength`` characters or fewer is shown as it is: no token is that short
    /// (they are at least ``minimumHexLength`` hex digits), so it is no secret, and masking it (`•••`) would hide
    /// the bad value the message is about. Control characters in it are shown as `U+XXXX`.
    public static func redacted(_ token: String) -> String {
        guard token.count <= Redaction.minimumShownLength else { return Redaction.prefix(token) }
        return token.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? format4($0.value) : String($0) }
            .joined()
    }

    // MARK: The judgement

    /// The one judgement of a device token as the backend stores it (or a person gives it), used by `audit`,
    /// `diagnose`, `send`, `send-batch`, `token verify` and the mock alike.
    ///
    /// **Case.** Apple's documents give the token as the hex of its bytes and every Apple sample prints it with
    /// `%02x` (lowercase). Whether APNs's HTTP/2 API compares the path's token case-insensitively is not
    /// documented; providers and client libraries have sent uppercase hex for years and report it accepted
    /// (kkpush's APNs reference, "Device tokens", Case). So kkpush decides once: an uppercase token is the same
    /// token, **accepted** (a warning, `token-uppercase`, never an error): kkpush sends it lowercased and the mock
    /// compares tokens without case. The warning stays because a store holding both forms holds one phone twice.
    ///
    /// **Everything else** is an error: a token with white space, the `< >` of the old description form or
    /// inner spaces is sent by the backend as stored, and APNs answers `BadDeviceToken`; so is a value that is
    /// not hex, odd, too short or too long (``formatErrors(_:)``).
    public static func judge(_ raw: String) -> DeviceTokenJudgement {
        if !raw.isEmpty, raw.utf8.allSatisfy(\.isLowercaseASCIIHexDigit) {
            let errors = formatErrors(raw)
            return DeviceTokenJudgement(
                form: errors.isEmpty ? .clean : .unusable, token: errors.isEmpty ? raw : nil, problems: errors)
        }
        let n = normalize(raw)
        guard let token = n.token else {
            return DeviceTokenJudgement(form: .unusable, token: nil, problems: n.problems)
        }
        if token == raw.lowercased() {
            return DeviceTokenJudgement(form: .uppercase, token: token, problems: [uppercaseProblem])
        }
        return DeviceTokenJudgement(form: .decorated, token: token, problems: n.problems)
    }

    /// The warning for a token with uppercase hex digits (``judge(_:)``: accepted, sent lowercased).
    public static let uppercaseProblem = Problem(
        .warning, code: .tokenUppercase,
        message:
            "The device token has uppercase hex digits: the same token as its lowercase form (APNs is reported to accept either; Apple's samples print lowercase), which the client sends.",
        fix: "Store and send the token lowercase (the app's %02x per byte), so one phone is one string.")

    /// The form a token is compared and sent in: lowercase (the mock's registry, kkpush's requests).
    public static func canonical(_ token: String) -> String { token.lowercasedIfNeeded }

    private static func normalized(_ what: String) -> Problem {
        Problem(
            .warning, code: .tokenNormalized, message: "Device token: \(what).",
            fix: "Store and send the token as lowercase hex without spaces or brackets.")
    }

    private static func format4(_ value: UInt32) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}

/// The result of ``DeviceToken/judge(_:)``: what form the value is in, the token to send, and the problems.
public struct DeviceTokenJudgement: Sendable, Equatable {
    /// The forms a value can be in.
    public enum Form: Sendable, Equatable {
        /// Lowercase hex of a usable length: nothing to say.
        case clean
        /// A usable token but for uppercase hex digits: a warning (`token-uppercase`); it is sent lowercased.
        case uppercase
        /// A usable token inside white space, `< >` or spaces: an error as stored (the backend sends it so).
        case decorated
        /// Not a token: not hex, odd, too short or too long, empty.
        case unusable
    }

    /// The form of the value.
    public var form: Form
    /// The token to send (lowercase hex), nil when unusable.
    public var token: String?
    /// What is wrong (or was changed).
    public var problems: [Problem]

    /// The severity of the judgement as a stored value: nil for clean, warning for uppercase, else error.
    public var severity: Severity? {
        switch form {
        case .clean: nil
        case .uppercase: .warning
        case .decorated, .unusable: .error
        }
    }
}

/// The result of ``DeviceToken/normalize(_:)``: the token to send (nil if it cannot be used) and what
/// was changed or is wrong.
public struct DeviceTokenNormalization: Sendable, Equatable {
    /// The normalised token, or nil when an error makes it unusable.
    public var token: String?
    /// Every change (warnings, `token-normalized`) and error (`BadDeviceToken`, `MissingDeviceToken`).
    public var problems: [Problem]

    /// Creates a result.
    public init(token: String?, problems: [Problem]) {
        self.token = token
        self.problems = problems
    }
}

extension Unicode.Scalar {
    /// True for 0-9, a-f and A-F.
    var isHexDigit: Bool {
        switch value {
        case 0x30...0x39, 0x41...0x46, 0x61...0x66: true
        default: false
        }
    }
}
