/// A payload read from a file's bytes: a plain JSON payload, or an Xcode Simulator `.apns` file.
///
/// - Plain JSON: the bytes are sent exactly as they are (so the size is the file's size; a note says
///   how many bytes white space costs), except one final line ending: a single `\n` or `\r\n` at the very
///   end of the file, which every editor and shell redirect (`kkpush payload build > file`) writes, is
///   not part of the payload. Any other white space, a second final newline included, is sent and noted.
/// - `.apns` (a top-level `Simulator Target Bundle` key, whatever the file's name): the key's value is the app's
///   bundle id, and the topic is it with the push type's suffix (``topic(for:)``); the member (with its comma) is cut
///   out of the bytes and the rest is sent exactly as it is, key order, spelling and white space included (white
///   space is noted as for a plain file). So a file kkpush wrote (``SimulatorPushFile``) gives back, byte for byte,
///   the payload it was written from. (Re-encoding it would put `aps` first and reorder `aps`'s keys: not the payload
///   the file shows, nor the one that was sent.)
///
/// Reading never fails: bytes that are not JSON are kept as they are, for the rules to judge.
public struct PayloadFile: Sendable, Equatable {
    /// The key Xcode's Simulator reads the target app from.
    public static let simulatorTargetBundleKey = "Simulator Target Bundle"

    /// The exact bytes to send.
    public var payload: [UInt8]
    /// The `Simulator Target Bundle` of an `.apns` file: the app's bundle id (the topic of an alert or background
    /// push; ``topic(for:)`` gives another push type's).
    public var topic: String?
    /// True if the file had a `Simulator Target Bundle` key.
    public var isSimulatorFile: Bool
    /// What reading noticed: `simulator-target-bundle` (info), `payload-whitespace` (info),
    /// `simulator-target-bundle-invalid` (warning: the key is not a bundle id string; it is stripped, no topic taken).
    public var problems: [Problem]
    /// The payload as ``Payload`` read it (nil: the bytes are not a JSON object), so that a caller needs no second
    /// parse (`send` takes the suggested push type from it).
    public var parsed: Payload?

    /// Creates a file result.
    public init(payload: [UInt8], topic: String? = nil, isSimulatorFile: Bool = false, problems: [Problem] = []) {
        self.payload = payload
        self.topic = topic
        self.isSimulatorFile = isSimulatorFile
        self.problems = problems
    }

    /// Reads a payload file's bytes; `fileName` only improves messages. `lint` and `send --payload`
    /// both read through here, so what lint judges is what send transmits.
    public static func read(_ file: [UInt8], fileName: String? = nil) -> PayloadFile {
        let name = fileName ?? "the payload"
        let bytes = withoutFinalLineEnding(file)
        let parsed = try? Payload(parsing: bytes)
        guard var payload = parsed, let target = payload.custom(simulatorTargetBundleKey),
            let stripped = removingMember(simulatorTargetBundleKey, from: bytes)
        else {
            var file = PayloadFile(payload: bytes)
            file.parsed = parsed
            file.problems += whitespaceNote(bytes, name: name)
            return file
        }
        payload.removeCustom(simulatorTargetBundleKey)
        var file = PayloadFile(payload: stripped, isSimulatorFile: true)
        file.parsed = payload
        if let bundle = target.stringValue, APNsRequestRules.isPlausibleTopic(bundle) {
            file.topic = bundle
            file.problems.append(
                Problem(
                    .info, code: .simulatorTargetBundle,
                    message:
                        "\(name) is a Simulator .apns file: 'Simulator Target Bundle' (\(bundle)) is the app's bundle id: the apns-topic is it with the push type's suffix (\(PushType.liveactivity.topic(forBundleID: bundle)) for a Live Activity). The key is not sent; the rest is, exactly as written (\(file.payload.count) bytes).",
                    fix: "Nothing to do; a topic given (topic) takes its place."))
        } else {
            file.problems.append(
                Problem(
                    .warning, code: .simulatorTargetBundleInvalid,
                    message: "\(name) has 'Simulator Target Bundle' = \(target), which is not a bundle id.",
                    fix: "Set \"Simulator Target Bundle\" to the app's bundle id, e.g. \"com.example.app\"."))
        }
        file.problems += whitespaceNote(stripped, name: name)
        return file
    }

    /// The apns-topic of a push of `pushType` read from this `.apns` file: its `Simulator Target Bundle` (the app's
    /// bundle id, as `simctl push` wants it) with the push type's suffix (`.push-type.liveactivity`, `.voip`, …), so
    /// that the file kkpush writes for a Live Activity or VoIP push is sent to the topic it was written from. A
    /// bundle that already ends in a push type's suffix is kept as it is. Nil when the file named no bundle.
    public func topic(for pushType: PushType) -> String? {
        guard let topic else { return nil }
        return PushType.implied(byTopic: topic) == nil ? pushType.topic(forBundleID: topic) : topic
    }

    /// `payload-whitespace` (info) when `bytes` hold white space outside strings.
    static func whitespaceNote(_ bytes: [UInt8], name: String) -> [Problem] {
        let spaces = whitespaceOutsideStrings(bytes)
        guard spaces > 0 else { return [] }
        return [
            Problem(
                .info, code: .payloadWhitespace,
                message:
                    "\(name) has \(spaces) byte\(spaces == 1 ? "" : "s") of white space outside strings, which are sent and count towards the limit.",
                fix:
                    "Send compact JSON to save \(spaces) byte\(spaces == 1 ? "" : "s"); building the payload prints it (payloadBuildCommand)."
            )
        ]
    }

    /// `object` (the bytes of one JSON object) without its top-level members named `key`, each cut out with the comma
    /// that separates it from the next member (or the previous one, for the last); every other byte stays as it is.
    /// Nil when `object` is not one JSON object.
    static func removingMember(_ key: String, from object: [UInt8]) -> [UInt8]? {
        // Each member's span: from just after the `{` or `,` before it to the `,` or `}` after it (its white space
        // included), so that the kept spans joined by commas are the object's own bytes.
        var parser = JSONParser(object)
        var spans: [(key: String, start: Int, end: Int)] = []
        parser.skipWhitespace()
        guard parser.index < object.count, object[parser.index] == UInt8(ascii: "{") else { return nil }
        let open = parser.index
        parser.index += 1
        parser.depth = 1
        var start = parser.index
        parser.skipWhitespace()
        var close: Int
        if parser.index < object.count, object[parser.index] == UInt8(ascii: "}") {
            close = parser.index
        } else {
            while true {
                parser.skipWhitespace()
                guard parser.index < object.count, object[parser.index] == UInt8(ascii: "\""),
                    let name = try? parser.parseString()
                else { return nil }
                parser.skipWhitespace()
                guard parser.index < object.count, object[parser.index] == UInt8(ascii: ":") else { return nil }
                parser.index += 1
                parser.skipWhitespace()
                guard (try? parser.parseValue(path: name)) != nil else { return nil }
                parser.skipWhitespace()
                guard parser.index < object.count else { return nil }
                spans.append((name, start, parser.index))
                if object[parser.index] == UInt8(ascii: ",") {
                    parser.index += 1
                    start = parser.index
                    continue
                }
                guard object[parser.index] == UInt8(ascii: "}") else { return nil }
                close = parser.index
                break
            }
        }
        var out = Array(object[...open])
        var first = true
        for span in spans where span.key != key {
            if !first { out.append(UInt8(ascii: ",")) }
            out += object[span.start..<span.end]
            first = false
        }
        out += object[close...]
        return out
    }

    /// `bytes` without one final `\n` or `\r\n` (the line ending a file's last line ends with).
    public static func withoutFinalLineEnding(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.last == 0x0A {
            let count = bytes.count >= 2 && bytes[bytes.count - 2] == 0x0D ? 2 : 1
            return Array(bytes.dropLast(count))
        }
        return bytes
    }

    /// The number of white-space bytes outside JSON strings.
    static func whitespaceOutsideStrings(_ bytes: [UInt8]) -> Int {
        var count = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                count += 1
            }
        }
        return count
    }
}
