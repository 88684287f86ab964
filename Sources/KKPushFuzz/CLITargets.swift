import Foundation
import KKPushBatch
import KKPushClient
import KKPushCore
import KKPushSystem

// `BatchLines.item(_:)`, the function that turns one line of a `send-batch` token file into a push, is part of
// KKPushBatch's `package` API: every build reaches it, a release build too.

/// Targets of the command line's engines (KKPushBatch).
enum CLITargets {
    static let all: [FuzzTarget] = [sendBatchLine]

    /// The batch sequence `send-batch` reads, with its defaults: a background dienst update for the
    /// app's topic, the environment taken from JSON lines.
    static let lines: BatchLines = {
        guard let reader = try? LineReader(path: "/dev/null", what: "token file", label: "--tokens", holds: "lines")
        else { fatalError("cannot open /dev/null") }
        let template = NotificationRequest(
            deviceToken: "", topic: FuzzFixtures.bundleID, pushType: .background, priority: 5,
            payload: Array(
                #"{"aps":{"content-available":1},"type":"dienst_update","tenant":"vvwilhelmus","dienst_id":"42"}"#
                    .utf8))
        // The ledger is the batch's bookkeeping; `item(_:)` never writes to it (results go to /dev/null).
        let ledger = BatchLedger(
            writer: ResultWriter(descriptor: FileDescriptors.openForWriting("/dev/null"), name: "/dev/null"),
            progress: nil,
            quietAccepted: false, metrics: BatchMetrics(resumeOption: "--resume"), onEvent: { _ in })
        return BatchLines(
            reader: reader, template: template,
            endpoints: [.sandbox: .sandbox, .production: .production], defaultEnvironment: .production,
            explicitEnvironment: false, ledger: ledger, resume: nil, broadcaster: nil)
    }()

    /// Lines of a `send-batch` token file. The input is split into lines as `LineReader` splits them (line
    /// feeds, trailing carriage returns dropped); each line is skipped or turned into a push as the batch
    /// iterator does, then checked by the client's pre-flight.
    static let sendBatchLine = FuzzTarget(
        name: "send-batch-line", maxLength: 2048,
        summary: "send-batch's BatchLines.item (hex token, JSON line, channel line) per line, then the pre-flight"
    ) { bytes in
        for rawLine in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            var line = Array(rawLine)
            while let last = line.last, last == 0x0D { line.removeLast() }
            let trimmed = text(line).trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            switch lines.item(trimmed, line: 1) {
            case .push(let item, _, _):
                _ = APNsRequestRules.preflight(item.request, authentication: .token)
                _ = item.request.headerFields
            case .broadcast(let request, _, _):
                _ = BroadcastRules.preflight(request)
                _ = request.headerFields
            case .bad, .outOfScope, .unserved, .activity: continue
            }
        }
    }
}
