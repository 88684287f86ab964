import ArgumentParser
import Foundation
import KKPushAuth
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushSystem
import KantineKoning
import Logging

/// The payload options of `send`.
struct PayloadOptions: ParsableArguments {
    @Option(help: "Payload JSON file ('-' for stdin).") var payload: String?
    @Option(help: "Alert title.") var title: String?
    @Option(help: "Alert subtitle.") var subtitle: String?
    @Option(help: "Alert body.") var body: String?
    @Option(parsing: .unconditional, help: "Badge number (0 or more; 0 clears it).") var badge: Int?
    @Option(help: "Sound name, e.g. default.") var sound: String?
    @Flag(name: .customLong("content-available"), help: "Set content-available (a background push).")
    var contentAvailable = false
    @Option(name: .customLong("data"), help: "A custom top-level key: key=JSON value (or plain text). Repeatable.")
    var data: [String] = []

    var hasBuilderFlags: Bool {
        title != nil || subtitle != nil || body != nil || badge != nil || sound != nil || contentAvailable
            || !data.isEmpty
    }

    func validate() throws {
        if payload != nil, hasBuilderFlags {
            throw ValidationError("Give either --payload FILE or the payload flags (--title, --body, ...), not both.")
        }
        try NumericFlags.integer(badge, flag: "--badge", in: 0...Int(Int32.max))
    }

    /// The payload bytes and the push type they suggest.
    /// For an Xcode Simulator `.apns` file, the file read is the third element: its `Simulator Target Bundle` gives
    /// the topic when `--topic` is not given (``PayloadFile/topic(for:)``: with the push type's suffix); the key
    /// itself is not sent, the rest is, exactly as written.
    func build() throws -> (bytes: [UInt8], suggested: PushType, simulatorFile: PayloadFile?) {
        if let payload {
            // Empty is allowed: pre-flight answers PayloadEmpty (and --no-preflight sends it, on purpose).
            let data = try InputFile.read(
                payload, what: "payload file", label: "--payload", maximumSize: 1 << 20, allowEmpty: true)
            let file = PayloadFile.read(data, fileName: payload == "-" ? nil : payload)
            let suggested = file.parsed?.suggestedPushType ?? .alert
            return (file.payload, suggested, file.isSimulatorFile ? file : nil)
        }
        var aps = APS()
        if title != nil || subtitle != nil || body != nil {
            aps.alert = .fields(APSAlert.Fields(title: title, subtitle: subtitle, body: body))
        }
        aps.badge = badge
        aps.sound = sound.map { APSSound.named($0) }
        aps.contentAvailable = contentAvailable
        var built = Payload(aps: aps)
        for entry in data {
            guard let eq = entry.firstIndex(of: "="), eq != entry.startIndex else {
                throw KKPushError(
                    code: .sendDataFlag, message: "--data '\(entry)' is not key=value.",
                    fix: "Write --data matchId=42 or --data 'team={\"id\":7}'.")
            }
            let key = String(entry[..<eq])
            let raw = String(entry[entry.index(after: eq)...])
            built.setCustom(key, JSONValue.lenient(raw))
        }
        if !hasBuilderFlags {
            throw KKPushError(
                code: .sendNoPayload, message: "No payload given.",
                fix: "Pass --payload FILE, or --title/--body (alert) or --content-available (background).")
        }
        return (built.encoded(), built.suggestedPushType, nil)
    }
}
