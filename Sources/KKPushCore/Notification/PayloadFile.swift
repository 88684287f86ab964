/// A payload read from a file's bytes: a plain JSON payload, or an Xcode Simulator `.apns` file.
///
/// - Plain JSON: the bytes are sent exactly as they are (so the size is the file's size; a note says
///   how many bytes white space costs), except one final line ending: a single `\n` or `\r\n` at the very
///   end of the file, which every editor and shell redirect (`kkpush payload build > file`) writes, is
///   not part of the payload. Any other white space, a second final newline included, is sent and noted.
/// - `.apns` (a top-level `Simulator Target Bundle` key, whatever the file's name): the key's value
///   becomes the topic and the key is stripped; the rest is re-encoded compactly (``Payload``'s
///   encoding: `aps` first, custom keys in file order), and those are the bytes sent.
///
/// Reading never fails: bytes that are not JSON are kept as they are, for the rules to judge.
public struct PayloadFile: Sendable, Equatable {
    /// The key Xcode's Simulator reads the target app from.
    public static let simulatorTargetBundleKey = "Simulator Target Bundle"

    /// The exact bytes to send.
    public var payload: [UInt8]
    /// The topic from `Simulator Target Bundle`, if the file is an `.apns` file.
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
        guard var payload = parsed, let target = payload.custom(simulatorTargetBundleKey) else {
            var file = PayloadFile(payload: bytes)
            file.parsed = parsed
            let spaces = whitespaceOutsideStrings(bytes)
            if spaces > 0 {
                file.problems.append(
                    Problem(
                        .info, code: "payload-whitespace",
                        message:
                            "\(name) has \(spaces) byte\(spaces == 1 ? "" : "s") of white space outside strings, which are sent and count towards the limit.",
                        fix:
                            "Send compact JSON to save \(spaces) byte\(spaces == 1 ? "" : "s"); building the payload prints it (payloadBuildCommand)."
                    ))
            }
            return file
        }
        payload.removeCustom(simulatorTargetBundleKey)
        var file = PayloadFile(payload: payload.encoded(), isSimulatorFile: true)
        file.parsed = payload
        if let bundle = target.stringValue, APNsRequestRules.isPlausibleTopic(bundle) {
            file.topic = bundle
            file.problems.append(
                Problem(
                    .info, code: "simulator-target-bundle",
                    message:
                        "\(name) is a Simulator .apns file: 'Simulator Target Bundle' (\(bundle)) is used as apns-topic and is not sent; the rest is sent compacted (\(file.payload.count) bytes).",
                    fix: "Nothing to do; a topic given (topic) takes its place."))
        } else {
            file.problems.append(
                Problem(
                    .warning, code: "simulator-target-bundle-invalid",
                    message: "\(name) has 'Simulator Target Bundle' = \(target), which is not a bundle id.",
                    fix: "Set \"Simulator Target Bundle\" to the app's bundle id, e.g. \"com.example.app\"."))
        }
        return file
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
