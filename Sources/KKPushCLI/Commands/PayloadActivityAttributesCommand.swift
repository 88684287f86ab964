import ArgumentParser
import Foundation
import KKPushActivityAttributes
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
            Reads the Swift files that declare the ActivityAttributes struct, its ContentState and the structs and \
            enums they use (give them all: extensions and types of other files are read together) and prints its \
            description as JSON: the attribute and content-state fields with the JSON key (CodingKeys' raw values) \
            and type the device's JSONDecoder reads (a Date: seconds since 2001-01-01, JSONDecoder's default; \
            TimeInterval: a number; a field inside #if: not required). Give it to payload lint and send with \
            --activity-attributes. What the reader cannot follow (a type no file declares, generics, an own \
            init(from:), property wrappers, enums without a raw type) is refused naming the file, line and \
            construct (exit 2). --out never replaces a Swift file it reads: the same file for both is refused (exit \
            64), nothing written.
            """)

    @Argument(help: "The Swift files declaring the ActivityAttributes struct and the types it uses.")
    var files: [String]

    @Option(help: "The ActivityAttributes struct to read, when the file declares several.")
    var name: String?

    @Option(
        name: .customLong("out"),
        help: ArgumentHelp(
            "Write the description to this file instead (a .json file; never the Swift file read).", valueName: "file"))
    var out: String?

    static let flagWords = FlagWords(flags: ["activityAttributesName": "--name"])

    func run() async throws {
        try await reportingErrors {
            if let out { for file in files { try Self.checkOut(out, source: file) } }
            let sources = try files.map { file in
                let bytes = try InputFile.read(file, what: "Swift source", maximumSize: 1 << 20)
                return ActivityAttributesSource.File(name: file, text: String(decoding: bytes, as: UTF8.self))
            }
            let description: ActivityAttributesDescription
            do throws(KKPushError) {
                description = try ActivityAttributesSource.describe(sources, name: name)
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

    /// Refuses `--out` naming the Swift file read (the same path, or the same file by another name: a link): writing
    /// would replace the app's source with JSON. A usage error (64): the two arguments clash, whatever the files hold.
    static func checkOut(_ out: String, source: String) throws {
        guard source != "-", out == source || FileIdentity.same(path: out, as: source) else { return }
        let suggested = descriptionPath(forSource: source)
        throw CLIError.usage(
            .activityAttributesOutIsSource,
            "--out \(out) is the Swift source \(source) itself: writing the description there would replace the app's source with JSON. Nothing was written.",
            fix: "Write the description to a JSON file of its own: --out \(suggested).")
    }

    /// A JSON file's name for the description of the Swift file `source`: `MatchAttributes.swift` →
    /// `MatchAttributes.json`; a name that would be `source` itself gets `.attributes.json`.
    static func descriptionPath(forSource source: String) -> String {
        let stem = (source as NSString).deletingPathExtension
        let path = (stem.isEmpty ? source : stem) + ".json"
        return path == source ? stem + ".attributes.json" : path
    }

    /// Whether `bytes` read as Swift source rather than JSON: a `.swift` name, or declarations in the text.
    static func looksLikeSwift(_ bytes: [UInt8], path: String) -> Bool {
        if path.lowercased().hasSuffix(".swift") { return true }
        let text = String(decoding: bytes.prefix(1 << 16), as: UTF8.self)
        return text.contains("ActivityAttributes")
            && ["struct ", "import ", "enum "].contains { text.contains($0) }
    }

    /// The description as indented JSON (sorted keys), a newline at the end: the CLI's one JSON layout
    /// (``Output/pretty(_:)``).
    static func pretty(_ value: JSONValue) -> String { Output.pretty(value) + "\n" }

    /// Reads a description file (`--activity-attributes`): exit 2 when it cannot be read or is not one.
    static func load(_ path: String) throws -> ActivityAttributesDescription {
        let bytes = try InputFile.read(path, what: "ActivityAttributes description", maximumSize: 1 << 20)
        let value: JSONValue
        do throws(KKPushError) {
            value = try JSONValue.parse(bytes)
        } catch {
            // The fix writes the description to a .json file of its own, never over the file given: following it
            // with the Swift source's own path as --out would replace the app's source with JSON.
            if looksLikeSwift(bytes, path: path) {
                let json = descriptionPath(forSource: path)
                throw KKPushError(
                    code: .activityAttributesInvalid,
                    message:
                        "--activity-attributes \(path) is Swift source, not the JSON description of the app's ActivityAttributes that this flag takes.",
                    fix:
                        "Describe it once: kkpush payload activity-attributes \(path) --out \(json); then give --activity-attributes \(json)."
                )
            }
            let reason = error.message.replacingOccurrences(of: "The payload is not valid JSON: ", with: "")
            throw KKPushError(
                code: .activityAttributesInvalid,
                message: "--activity-attributes \(path) is not JSON: \(reason)",
                fix:
                    "Give the description payload activity-attributes writes from the app's Swift file: kkpush payload activity-attributes APP.swift --out \(path.lowercased().hasSuffix(".json") ? path : descriptionPath(forSource: path))."
            )
        }
        do throws(KKPushError) {
            return try ActivityAttributesDescription(json: value)
        } catch {
            throw FlagWords(flags: ["activityAttributes": "--activity-attributes"]).apply(error)
        }
    }
}
