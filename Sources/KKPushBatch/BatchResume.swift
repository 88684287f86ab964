import Foundation
package import KKPushCore
import KKPushSystem

/// Which results of an earlier `send-batch` run are final, so that `--resume` does not send them again.
package enum FinalResults {
    /// The rejection reasons that sending the same push again cannot change, so `--resume` skips their
    /// lines. The one place this list lives (the README's send-batch section repeats it).
    ///
    /// - The device token's own verdict: `BadDeviceToken` (malformed, or of the other environment:
    ///   a rejection is only final for the environment it came from, see ``BatchResume``),
    ///   `Unregistered` and `ExpiredToken` (410: the app is gone), `DeviceTokenNotForTopic`,
    ///   `MissingDeviceToken`.
    /// - The request's own verdict, identical for the same options and payload: `BadTopic`,
    ///   `TopicDisallowed`, `MissingTopic`, `PayloadTooLarge`, `PayloadEmpty`, `BadPriority`,
    ///   `BadExpirationDate`, `BadCollapseId`, `BadMessageId`, `InvalidPushType`, `DuplicateHeaders`.
    ///
    /// Not final, so sent again: every failure (timeout, connection, TLS, `interrupted`, ...), 429,
    /// 500 and 503 answers (`TooManyRequests`, `InternalServerError`, `ServiceUnavailable`,
    /// `Shutdown`), `IdleTimeout`, the sender's credential problems (`ExpiredProviderToken`,
    /// `InvalidProviderToken`, `MissingProviderToken`, `BadCertificate`, `BadCertificateEnvironment`,
    /// `Forbidden`, `TooManyProviderTokenUpdates`, the key/environment reasons: the credential can be
    /// fixed between runs), the route errors `BadPath` and `MethodNotAllowed`, and any reason kkpush
    /// does not know.
    package static let rejectionReasons: Set<String> = [
        "BadDeviceToken", "Unregistered", "ExpiredToken", "DeviceTokenNotForTopic", "MissingDeviceToken",
        "BadTopic", "TopicDisallowed", "MissingTopic", "PayloadTooLarge", "PayloadEmpty", "BadPriority",
        "BadExpirationDate", "BadCollapseId", "BadMessageId", "InvalidPushType", "DuplicateHeaders",
    ]
}

/// The results file of an earlier run, read for `--resume`: per input line number, a fingerprint of
/// the token it had, and whether its result was final (accepted, or a final rejection).
///
/// Memory: one small entry per input line the file has results for (about 40 bytes), never the lines.
package final class BatchResume: Sendable {
    /// 16 bytes; with its 4-byte key about 40 bytes a line in the dictionary (1,000,000 lines: ~45 MB).
    package struct Entry: Sendable {
        /// FNV-1a of the token.
        var fingerprint: UInt64
        /// The results-file line that first named this index (for messages).
        var resultsLine: UInt32
        /// 0: not final; 1: accepted; n >= 2: rejected for good with `reasons[n - 2]`.
        var verdict: UInt16
        /// The environment the final rejection came from (index into `environments`).
        var environment: UInt8
    }

    package let path: String
    /// The option (or setting) that named the file, for messages.
    package let label: String
    /// By input line number.
    private let entries: [Int32: Entry]
    private let reasons: [String]
    private let environments: [String?]
    /// Result lines by what they say ("accepted", "rejected Unregistered", "failed interrupted"):
    /// final ones and the others, for the message on stderr.
    package let finalContents: [String: Int]
    package let otherContents: [String: Int]
    package let finalCount: Int
    package let lineCount: Int
    /// Result lines not final but flagged `possibly_duplicated` (sent again: the device may show them twice).
    package let flaggedAgain: Int

    private init(
        path: String, label: String, entries: [Int32: Entry], reasons: [String], environments: [String?],
        finalContents: [String: Int], otherContents: [String: Int], lineCount: Int, flaggedAgain: Int
    ) {
        self.flaggedAgain = flaggedAgain
        self.path = path
        self.label = label
        self.entries = entries
        self.reasons = reasons
        self.environments = environments
        self.finalContents = finalContents
        self.otherContents = otherContents
        self.lineCount = lineCount
        finalCount = entries.values.reduce(0) { $0 + ($1.verdict > 0 ? 1 : 0) }
    }

    /// FNV-1a (64 bit) of the token's bytes.
    package static func fingerprint(_ token: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in token.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    /// Reads a results file (JSON lines as `send-batch` writes them). Blank lines are allowed; any
    /// other line that is not a result line is an error naming its line number. `label` names the option that gave
    /// `path` in messages.
    package static func load(path: String, label: String) throws -> BatchResume {
        let reader = try LineReader(
            path: path, what: "results file", label: label,
            holds: "the JSON result lines of an earlier send-batch run")
        var entries: [Int32: Entry] = [:]
        var reasons: [String] = []
        var reasonIDs: [String: UInt16] = [:]
        var environments: [String?] = []
        var finalContents: [String: Int] = [:]
        var otherContents: [String: Int] = [:]
        var flaggedAgain = 0
        var lineNumber = 0
        func malformed(_ why: String) -> KKPushError {
            KKPushError(
                code: .batchResumeMalformed,
                message: "\(path) line \(lineNumber) is not a send-batch result line: \(why).",
                fix:
                    "Give \(label) the file an earlier send-batch run wrote its results to (JSON lines with index, token and status); if that run was killed in the middle of a line, delete that partial last line."
            )
        }
        while let line = try reader.next() {
            lineNumber += 1
            if line.trimmingWhitespace().isEmpty { continue }
            let value: JSONValue
            do {
                value = try JSONInput.parse(Array(line.utf8), what: "it", code: .batchResumeMalformed, fix: "")
            } catch {
                throw malformed(error.message.hasSuffix(".") ? String(error.message.dropLast()) : error.message)
            }
            guard let object = value.objectValue else { throw malformed("not a JSON object") }
            guard let number = object["index"]?.intValue, number >= 1, number <= Int(Int32.max) else {
                throw malformed("no \"index\" (the input line number, from 1)")
            }
            let index = Int32(number)
            // A broadcast line has "token": null and its "channel"; it is kept under the channel's key.
            let token: String
            if let channel = object["channel"]?.stringValue {
                token = BatchBroadcaster.resumeKey(channel: channel)
            } else if let t = object["token"]?.stringValue {
                token = t
            } else {
                throw malformed("no \"token\" string (or \"channel\", for a broadcast)")
            }
            guard let status = object["status"]?.stringValue else { throw malformed("no \"status\" string") }
            let reason = object["reason"]?.stringValue
            var verdict: UInt16 = 0
            var environmentID: UInt8 = 0
            switch status {
            case "accepted":
                verdict = 1
                finalContents["accepted", default: 0] += 1
            case "rejected":
                guard let reason else { throw malformed("status rejected without a \"reason\" string") }
                if FinalResults.rejectionReasons.contains(reason) {
                    finalContents["rejected \(reason)", default: 0] += 1
                    if reasonIDs[reason] == nil {
                        reasonIDs[reason] = UInt16(reasons.count)
                        reasons.append(reason)
                    }
                    verdict = reasonIDs[reason]! + 2
                    let environment = object["environment"]?.stringValue
                    if let i = environments.firstIndex(of: environment) {
                        environmentID = UInt8(i)
                    } else if environments.count < 255 {
                        environmentID = UInt8(environments.count)
                        environments.append(environment)
                    } else {
                        throw malformed("more than 255 different environments")
                    }
                } else {
                    otherContents["rejected \(reason)", default: 0] += 1
                }
            case "failed":
                otherContents["failed \(reason ?? "unknown")", default: 0] += 1
                // A line kkpush could not use is sent again whatever it holds now (the user may have fixed it).
                if reason == "bad-input" { continue }
            default:
                throw malformed("status '\(status)' is none of accepted, rejected, failed")
            }
            if verdict == 0, object["possibly_duplicated"]?.boolValue == true { flaggedAgain += 1 }
            let fingerprint = fingerprint(token)
            if let earlier = entries[index] {
                guard earlier.fingerprint == fingerprint else {
                    throw KKPushError(
                        code: .batchResumeInconsistent,
                        message:
                            "\(path) lines \(earlier.resultsLine) and \(lineNumber) give input line \(index) two different tokens: they are results of different inputs.",
                        fix: "Resume from the results of runs over the same token file only.")
                }
                // Accepted beats a final rejection, which beats anything not final.
                if verdict == 1 || (verdict > 1 && earlier.verdict != 1) {
                    entries[index] = Entry(
                        fingerprint: fingerprint, resultsLine: earlier.resultsLine, verdict: verdict,
                        environment: environmentID)
                }
            } else {
                entries[index] = Entry(
                    fingerprint: fingerprint, resultsLine: UInt32(clamping: lineNumber), verdict: verdict,
                    environment: environmentID)
            }
        }
        return BatchResume(
            path: path, label: label, entries: entries, reasons: reasons, environments: environments,
            finalContents: finalContents, otherContents: otherContents, lineCount: lineNumber,
            flaggedAgain: flaggedAgain)
    }

    /// For input line `line` with `token` (going to `environment`): nil to send it, or why it is
    /// skipped ("accepted", or the final rejection's reason). Throws if the earlier run had another
    /// token on that line: the input changed.
    package func verdict(line: Int, token: String, environment: String?, input: String) throws(KKPushError) -> String? {
        guard line <= Int(Int32.max), let entry = entries[Int32(line)] else { return nil }
        guard entry.fingerprint == Self.fingerprint(token) else {
            throw KKPushError(
                code: .batchResumeInputChanged,
                message:
                    "Line \(line) of \(input) has token \(Self.abbreviated(token)), but \(path) line \(entry.resultsLine) has another token for that line: the input changed since that run.",
                fix:
                    "Resume with the same token file, unchanged (lines are matched by number and token), or start a new run without \(label)."
            )
        }
        switch entry.verdict {
        case 0: return nil
        case 1: return "accepted"
        default:
            // A rejection is final for the environment it came from (BadDeviceToken from the wrong one).
            guard environments[Int(entry.environment)] == environment else { return nil }
            return reasons[Int(entry.verdict) - 2]
        }
    }

    /// Lines of the results file past `lastLine` of the input (the input got shorter).
    package func entries(after lastLine: Int) -> Int {
        entries.keys.reduce(0) { $0 + (Int($1) > lastLine ? 1 : 0) }
    }

    /// The message on stderr when the file was read.
    package var loadMessage: String {
        func list(_ d: [String: Int]) -> String {
            d.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                .joined(separator: ", ")
        }
        var text = "resume: \(path) has results for \(entries.count) input lines: \(finalCount) final"
        if !finalContents.isEmpty { text += " (\(list(finalContents)))" }
        text += ", skipped where the line still has the same token; \(entries.count - finalCount) to send again"
        if !otherContents.isEmpty { text += " (\(list(otherContents)))" }
        if flaggedAgain > 0 {
            text +=
                "; \(flaggedAgain) of those result lines say possibly_duplicated: APNs may have them already, so those devices may show them twice"
        }
        return text + "."
    }

    package static func abbreviated(_ token: String) -> String {
        DeviceToken.redacted(token)
    }
}
