import ArgumentParser
import Foundation
import KKPushCLISupport
import KKPushCore
import KKPushSystem

/// `kkpush payload activity-attributes FILE.swift`: the app's `ActivityAttributes` type, read from its Swift
/// source, as the description `payload lint --activity-attributes` and `send --activity-attributes` check
/// Live Activity payloads against.
struct PayloadActivityAttributesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activity-attributes",
        abstract:
            "Describe the app's ActivityAttributes type (from its Swift source) for checking Live Activity payloads.",
        discussion: """
            Reads the Swift file that declares the ActivityAttributes struct (its ContentState and the structs and \
            enums they use) and prints its description as JSON: the attribute and content-state fields with the \
            JSON type the device's JSONDecoder reads (a Date: seconds since 2001-01-01, JSONDecoder's default). \
            Give it to payload lint and send with --activity-attributes. What the reader cannot follow (another \
            file's types, custom CodingKeys or init(from:), enums without a raw type) is refused by name (exit 2).
            """)

    @Argument(help: "The Swift file declaring the ActivityAttributes struct.")
    var file: String

    @Option(help: "The ActivityAttributes struct to read, when the file declares several.")
    var name: String?

    @Option(
        name: .customLong("out"), help: ArgumentHelp("Write the description to this file instead.", valueName: "file"))
    var out: String?

    static let flagWords = FlagWords(flags: [
        "activityAttributesSource": "FILE", "activityAttributesName": "--name",
    ])

    func run() async throws {
        try await reportingErrors(exitCode: ExitStatus.input) {
            let bytes = try InputFile.read(file, what: "Swift source", maximumSize: 1 << 20)
            let description: ActivityAttributesDescription
            do throws(KKPushError) {
                description = try ActivityAttributesSource.describe(String(decoding: bytes, as: UTF8.self), name: name)
            } catch {
                throw Self.flagWords.apply(error)
            }
            let text = Self.pretty(description.json)
            if let out {
                do throws(AtomicFile.Failure) {
                    try AtomicFile.write(Array(text.utf8), to: out)
                } catch {
                    throw KKPushError(
                        code: .outputNotWritable,
                        message: "--out \(out) could not be written: \(ErrorWords.systemText(errno: error.errno)).",
                        fix: "Give --out a path in a writable folder.")
                }
                print(
                    "\(description.name): \(description.attributes.count) attribute field(s), \(description.contentState.count) content-state field(s) → \(out)"
                )
            } else {
                print(text, terminator: "")
            }
        }
    }

    /// The description as indented JSON (sorted keys), a newline at the end.
    static func pretty(_ value: JSONValue) -> String {
        let data =
            (try? JSONSerialization.data(
                withJSONObject: JSONSerialization.jsonObject(with: Data(value.encoded())),
                options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data(value.encoded())
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// Reads a description file (`--activity-attributes`): exit 2 when it cannot be read or is not one.
    static func load(_ path: String) throws -> ActivityAttributesDescription {
        let bytes = try InputFile.read(path, what: "ActivityAttributes description", maximumSize: 1 << 20)
        let value: JSONValue
        do throws(KKPushError) {
            value = try JSONValue.parse(bytes)
        } catch {
            throw KKPushError(
                code: .activityAttributesInvalid,
                message: "--activity-attributes \(path) is not JSON: \(error.message)",
                fix: "Write it with kkpush payload activity-attributes APP.swift --out \(path).")
        }
        do throws(KKPushError) {
            return try ActivityAttributesDescription(json: value)
        } catch {
            throw FlagWords(flags: ["activityAttributes": "--activity-attributes"]).apply(error)
        }
    }
}
