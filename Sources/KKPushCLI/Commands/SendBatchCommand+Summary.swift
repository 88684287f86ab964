import Foundation
import KKPushBatch
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushSystem

// What `send-batch` says of the batch engine (KKPushBatch) in its own words: the summary on stderr and the checks
// of `--metrics-file`, which name the flags.

extension BatchSummary: CommandReport {
    /// The summary for stderr, in this command's words (its flags).
    var textLines: [String] {
        let c = counts
        var lines: [String] = []
        var head =
            "\(c.total) pushes in \(String(format: "%.2f", seconds)) s (\(String(format: "%.0f", perSecond)) req/s): \(c.accepted) accepted, \(c.rejectedTotal) rejected, \(c.failedTotal) failed"
        if c.skippedTotal > 0 { head += ", \(c.skippedTotal) skipped as done before (--resume)" }
        if c.repeatedKeys > 0 { head += ", \(c.repeatedKeys) skipped as repeated idempotency_key" }
        if c.blank > 0 { head += ", \(c.blank) blank or comment lines" }
        if c.otherShard > 0 { head += ", \(c.otherShard) lines left to the other parts (--shard)" }
        lines.append(head)
        for (reason, count) in Self.byCount(c.rejected) {
            lines.append("  rejected \(reason): \(count) — \(APNsReason(reason).commandLineFix)")
        }
        for (kind, count) in Self.byCount(c.failed) {
            if kind == PushFailure.Kind.badInput.rawValue {
                lines.append(
                    "  failed (bad-input): \(count) — input lines kkpush could not use, never sent; their result lines say which line and why"
                )
                if c.credentialScope > 0 {
                    lines.append(
                        "    of which \(c.credentialScope) refused for credential scope — the line's credential may not serve its topic or environment (--credentials); their result lines name the scope problem"
                    )
                }
            } else {
                lines.append("  failed (\(kind)): \(count)")
            }
        }
        if c.broadcasts > 0 {
            lines.append(
                "  \(c.broadcasts) line\(c.broadcasts == 1 ? "" : "s") named a channel: sent as broadcast\(c.broadcasts == 1 ? "" : "s") (POST /4/broadcasts), each in its place; counted above"
            )
        }
        if c.environmentOverrides > 0 {
            lines.append(
                "  \(c.environmentOverrides) JSON line\(c.environmentOverrides == 1 ? "" : "s") named another environment than --env/--build-environment gives: sent to that environment's endpoint (a line's own \"environment\" wins)"
            )
        }
        if c.unservedEnvironment > 0 {
            lines.append(
                "  \(c.unservedEnvironment) line\(c.unservedEnvironment == 1 ? "" : "s") named an environment --url does not stand in for: failed bad-input, never sent — give --sandbox-url and --production-url instead of --url"
            )
        }
        if c.activityExisting > 0 {
            lines.append(
                "  \(c.activityExisting) Live Activity start\(c.activityExisting == 1 ? "" : "s") not sent: the activity of \(c.activityExisting == 1 ? "its" : "their") key exists (the first start stands)"
            )
        }
        if c.skippedTotal > 0 {
            let why = Self.byCount(c.skipped)
                .map { $0.key == "accepted" ? "\($0.value) accepted" : "\($0.value) rejected \($0.key)" }
            lines.append("  skipped (--resume): \(why.joined(separator: ", ")) in the earlier run")
        }
        if c.duplicated > 0 {
            lines.append(
                "  \(c.duplicated) possibly delivered twice (sent, but no answer came: connection dropped or interrupted)"
            )
        }
        return lines
    }
}

extension BatchMetrics {
    /// Refuses a `--metrics-file` that cannot be written (before anything is sent).
    static func checkPath(_ path: String, tokens: String, output: String?) throws {
        if path == "-" {
            throw KKPushError(
                code: .batchMetricsFileStdout,
                message: "--metrics-file - would mix the metrics into the result lines on standard output.",
                fix: "Give a file, e.g. /var/lib/node_exporter/textfile/kkpush_batch.prom.")
        }
        try InputFile.checkWritable(path, what: "metrics file", label: "--metrics-file")
        for (other, flag) in [(tokens, "--tokens"), (output ?? "-", "--output")] where other != "-" {
            if FileIdentity.same(path: path, as: other) || path == other {
                throw KKPushError(
                    code: .batchMetricsFileClash, message: "--metrics-file '\(path)' is also the \(flag) file.",
                    fix: "Give the metrics a file of their own (ending in .prom for the textfile collector).")
            }
        }
    }

    /// Writes the exposition to `path` atomically: a temporary file in the same folder, then a rename, so a
    /// collector never reads half a file. Throws a ``KKPushError`` naming the path.
    func write(to path: String) throws {
        do {
            try AtomicFile.write(exposition(), to: path)
        } catch {
            throw Self.writeError(path, error.errno)
        }
    }

    private static func writeError(_ path: String, _ code: Int32) -> KKPushError {
        KKPushError(
            code: .batchMetricsFileUnwritable,
            message: "Cannot write the metrics file '\(path)': \(ErrorWords.systemText(errno: code)).",
            fix: "Give --metrics-file a path in a writable folder with room.")
    }
}
