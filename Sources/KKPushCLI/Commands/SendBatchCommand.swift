import ArgumentParser
import Foundation
import KKPushActivities
import KKPushBatch
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushSystem
import Synchronization

/// `kkpush send-batch`: many pushes from a token file, streamed; results as JSON lines.
///
/// Interrupt-safe: on SIGINT/SIGTERM it stops reading, gives the pushes in flight `--grace` seconds,
/// ends the rest as `interrupted` and still writes a result line for every line it took. `--resume`
/// continues from an earlier run's results.
struct SendBatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send-batch",
        abstract: "Send one push per line of a token file (or stdin), streamed; results as JSON lines on stdout.",
        discussion: """
            Each line is a hex device token, or a JSON object {"token": "...", "payload": {...}, \
            "environment": "sandbox"|"production"} (payload and environment optional, no other keys). A JSON line \
            with "channel": "<id>" instead of "token" is a broadcast (POST /4/broadcasts/apps/<--topic without \
            .push-type.liveactivity, with a warning, as channel and send --channel do; another push type's suffix \
            fails the line: TopicDisallowed>, the batch's priority and expiration), sent by itself in its place; its \
            result line has "token": null, its "channel", and the apns-request-id as apns_id. Without --payload or \
            the payload flags, each line brings its own "payload" (a line without one is "bad-input"). A line's \
            own environment wins over --env/--build-environment (the summary counts those lines) and goes to that \
            environment's endpoint: Apple's host, or --sandbox-url/--production-url. --url stands in for one \
            environment, the one --env names (default sandbox): a line of the other is failed "bad-input" and not \
            sent (the summary counts it). A line that \
            cannot be used (invalid JSON, token missing, an unknown key, a bad environment) is not sent: its \
            result line is failed "bad-input" with the line number and what is wrong. Empty lines and lines \
            starting with # are skipped (they still count as lines). The file is read line by line, never \
            whole. Each result line's index is its input line number, from 1. A summary goes to stderr (and a \
            progress line while stderr is a terminal).

            --credentials FILE (instead of --key or --cert): several apps, keys and teams in one batch. A JSON \
            line may add "topic" (its apns-topic, instead of --topic) and "credential" (a name from FILE); a line \
            without one goes to the first credential of FILE whose environments and topics cover it. Each \
            credential has its own connections per environment, so no connection carries two teams. A line its \
            credential may not serve (another environment or topic, an unknown name) is refused before sending: \
            failed "bad-input" naming the scope problem, counted in the summary.

            SIGINT/SIGTERM: no new pushes start; pushes in flight get --grace seconds, then end failed \
            "interrupted" (possibly_duplicated when the request may have been sent); every line read gets its \
            result line. A second signal stops at once. --resume RESULTS skips the lines whose earlier result was \
            final (accepted, or a rejection that cannot change) and sends the rest.

            --metrics-file FILE: when the batch ends (done, a signal, an error), its counters are written to FILE \
            in the Prometheus text format, atomically (a temporary file renamed), for node-exporter's textfile \
            collector: pushes by outcome, HTTP status, reason and environment, agreeing exactly with the summary. \
            A path that cannot be written is an error before anything is sent.

            --shard K/N: N machines split one input without a database, each sending its part K: a line belongs to             the part its device token (or channel id) hashes to (FNV-1a, the same on every machine), a line without             one to the part of its line number, so each line is sent or reported by exactly one part. Give each part             its own --output and --resume file.

            Live Activity lines (--activity-registry PATH|URL, an SQLite file or a postgres:// URL, migrated on \
            open): a JSON line with "activity_key" and "activity_event" (start, update or end) starts, updates or \
            ends one Live Activity through the activity registry; its payload is {"aps": {...}} with content-state \
            (a start adds attributes-type, attributes and alert). A start goes to the push-to-start token of "device" \
            (the device's name in the registry) or to the line's "token"; an update or end needs no token: it goes \
            to the activity's update token. A second start of a key sends nothing (counted in the summary as an \
            activity that exists); a start past the device's start budget, an update or end of an activity whose \
            update token has not come back, that ended or is unknown, is failed "bad-input" naming the key, the \
            registry's code and the fix; APNs' answers go back to the registry. Without --activity-registry such a \
            line is failed "bad-input", never sent. A Live Activity line's part (--shard) follows its activity key.

            Exit: 0 every push accepted; 1 some rejected or failed (bad-input lines too); 2 an error (unreadable or changed input, bad \
            --resume file, an unwritable --metrics-file; the lines before it were handled); 74 results could not be written (stdout closed); \
            130 SIGINT; 143 SIGTERM; 64 usage.
            """)

    @Option(help: "Token file, one per line; - for stdin.") var tokens: String
    @Option(
        name: .customLong("topic"),
        help: "apns-topic: the bundle ID (plus the push type's suffix). Default: $APNS_TOPIC.") var topicOption: String?
    /// `--topic`, else `$APNS_TOPIC` (validate() requires one).
    var topic: String { Secrets.topic(topicOption) ?? "" }
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var payloadOptions: PayloadOptions
    @OptionGroup var headers: PushHeaderOptions
    @OptionGroup var capacity: ClientCapacityOptions
    @Flag(name: .customLong("quiet-accepted"), help: "Print result lines only for pushes that were not accepted.")
    var quietAccepted = false
    @Option(
        help: ArgumentHelp(
            "Append the result lines to this file (created if missing, never truncated) instead of stdout.",
            valueName: "file"))
    var output: String?
    @Option(
        help: ArgumentHelp(
            "Results of an earlier run of this input: skip its lines that were accepted or rejected for good.",
            valueName: "results.jsonl"))
    var resume: String?
    @Option(parsing: .unconditional, help: "Seconds pushes in flight get to finish after SIGINT/SIGTERM, 0 to 3600.")
    var grace: Double = 5
    @Option(
        name: .customLong("metrics-file"),
        help: ArgumentHelp(
            "When the batch ends (also on a signal or an error), write its counters here in the Prometheus text format (atomically), for node-exporter's textfile collector.",
            valueName: "file"))
    var metricsFile: String?
    @Option(
        name: .customLong("shard"), parsing: .unconditional,
        help: ArgumentHelp(
            "Send only this machine's part K of N of the input (1/4 … 4/4): each line belongs to one part by its token (a line without one by its number), so N machines split one file.",
            valueName: "K/N"))
    var shardOption: String?
    @Option(
        name: .customLong("activity-registry"),
        help: ArgumentHelp(
            "The Live Activity registry (an SQLite file or a postgres:// URL, migrated on open) that plans the lines with activity_key and records APNs' answers.",
            valueName: "path|url"))
    var activityRegistry: String?

    /// The exit codes, beyond 0 (all accepted) and 1 (some not).
    enum Exit {
        /// An error: the batch did not start, or stopped at a bad input line (the lines before it were handled).
        static let error: Int32 = ExitStatus.input
        /// Result lines could not be written (stdout closed, disk full).
        static let outputFailed: Int32 = ExitStatus.outputFailed
        /// 128 + the signal: 130 for SIGINT, 143 for SIGTERM.
        static func signal(_ number: Int32) -> Int32 { ExitStatus.signal(number) }
    }

    func validate() throws {
        if Secrets.topic(topicOption) == nil {
            throw ValidationError("Give --topic (or set APNS_TOPIC): the app's bundle id.")
        }
        try NumericFlags.seconds(grace, flag: "--grace", in: 0...3600)
        if let shardOption {
            do { _ = try BatchShard(parsing: shardOption) } catch let error as KKPushError {
                let error = FlagWords.common.apply(error)
                throw ValidationError("\(error.message) \(error.fix ?? "")")
            }
        }
        try StandardInput.checkOneReader(
            [("--tokens", tokens)] + connection.standardInputUses + [("--payload", payloadOptions.payload)])
        if quietAccepted, resume != nil {
            throw ValidationError(
                "--quiet-accepted leaves accepted pushes out of the results, so a later --resume would send them again; leave it out with --resume."
            )
        }
    }

    func run() async throws {
        try await reportingErrors { try await sendBatch() }
    }

    /// The batch: its inputs checked, the run (KKPushBatch's ``BatchRun``), the summary and the exit status.
    private func sendBatch() async throws {
        try connection.checkInputFiles()
        if let metricsFile { try BatchMetrics.checkPath(metricsFile, tokens: tokens, output: output) }
        var warnings: [Problem] = []
        let defaultEnvironment = connection.environment(warnings: &warnings)
        let explicitEnvironment = connection.env != nil || connection.buildEnvironment != nil
        for line in Output.lines(warnings) { Output.printError(line) }
        let writer = try openOutput()
        let resumeState = try resume.map { try BatchResume.load(path: $0, label: "--resume") }
        if let resumeState { StandardError.line(resumeState.loadMessage) }
        // Without a batch payload every line brings its own (channel lines each with a payload need none).
        let batchHasPayload = payloadOptions.payload != nil || payloadOptions.hasBuilderFlags
        let (bytes, suggested, _) =
            batchHasPayload
            ? try payloadOptions.build() : ([], PushType.implied(byTopic: topic) ?? PushType.alert, nil)
        let type = headers.pushType.map { PushType($0) } ?? suggested
        let template = NotificationRequest(
            deviceToken: "", topic: topic, pushType: type, priority: headers.priority ?? type.defaultPriority,
            expiration: headers.expiration, collapseID: headers.collapseID, payload: bytes)
        if !connection.noPreflight { try Self.preflightTemplate(template, certificate: connection.cert != nil) }
        // `--url` stands in for one environment (the batch's): a line of the other is refused, never sent to it.
        var endpoints: [APNsEnvironment: APNsEndpoint] = [:]
        for environment in connection.servedEnvironments(defaultEnvironment) {
            endpoints[environment] = try connection.endpoint(for: environment)
        }
        let shard = try shardOption.map(BatchShard.init(parsing:))
        let reader = try LineReader(
            path: tokens, what: "token file", label: "--tokens", holds: "one device token (or JSON object) per line")
        let configuration = try connection.clientConfiguration(capacity)

        let run = BatchRun()
        let send = run.send
        let progress = Terminal.isTTY(CommandIO.current.error)
        let progressLine: (@Sendable (String) -> Void)? =
            progress ? { @Sendable text in StandardError.emit(text) } : nil
        let ledger = BatchLedger(
            writer: writer, progress: progressLine, quietAccepted: quietAccepted,
            metrics: BatchMetrics(resumeOption: "--resume", pushType: template.pushType, priority: template.priority),
            onEvent: send)
        /// Writes `--metrics-file` (once the books are closed), with the exit status the run ends with.
        func writeMetrics(exit code: Int32, elapsed: Duration) {
            guard let metricsFile else { return }
            ledger.metrics.finish(elapsed: elapsed, exitCode: code)
            do {
                try ledger.metrics.write(to: metricsFile)
            } catch let error as KKPushError {
                StandardError.line("error: \(error.message)\nFix: \(error.fix ?? "")")
            } catch {
                StandardError.line(
                    "error: Cannot write the metrics file '\(metricsFile)': \(ErrorWords.describe(error))")
            }
        }
        let credentialSet = try connection.credentialSet()
        var lines = BatchLines(
            reader: reader, template: template, endpoints: endpoints, defaultEnvironment: defaultEnvironment,
            explicitEnvironment: explicitEnvironment, ledger: ledger, resume: resumeState,
            broadcaster: BatchBroadcaster(
                client: try APNsBroadcastClient(configuration: BatchBroadcaster.withoutPreflight(configuration)),
                preflight: !connection.noPreflight), batchHasPayload: batchHasPayload, shard: shard,
            onTopicWarning: { StandardError.line("warning \($0.code): --topic \($0.message)") })
        lines.credentials = credentialSet
        lines.endpointHint = ConnectionOptions.endpointHint
        // Live Activity lines (activity_key) are planned and answered through --activity-registry.
        var registry: (any ActivityRegistry)?
        if let activityRegistry {
            registry = try await ActivityRegistries.open(activityRegistry, origin: "(activityRegistry)")
        }
        lines.activities = registry.map {
            BatchActivities(registry: $0, words: { FlagWords.common.apply($0) })
        }

        // A closed stdout must be a write error (EPIPE), not death by SIGPIPE.
        Signals.ignore(SIGPIPE)
        let signals = SignalWatch([SIGINT, SIGTERM]) { send(.signal($0)) }
        // With --credentials, a client per credential: each (credential, environment) has its own connections.
        let client: any BatchSender =
            try credentialSet.map {
                RoutedBatchSender(router: ProviderClientRouter(credentials: $0, configuration: configuration))
            } ?? APNsClient(configuration: configuration)
        defer { signals.keep() }

        let emit: @Sendable (String) -> Void = { StandardError.emit($0) }
        let hardStop: @Sendable (Int32) -> Void = { first in ProcessExit.immediately(Exit.signal(first)) }
        let ending: BatchRun.Ending = await run.run(
            client: client, lines: lines, ledger: ledger, grace: grace, progress: progress, emit: emit,
            hardStop: hardStop)
        let clientStopped = ending.clientStopped
        // Every answer recorded before the registry closes; one it could not record is said, never dropped silently.
        for failure in await lines.activities?.finish() ?? [] {
            StandardError.line("warning: the activity registry did not record APNs' answer: \(failure)")
        }
        await registry?.close()
        let signalNumber = ending.signal
        let outputFailed = ending.outputFailed
        let inputError = ending.inputError
        /// Ends the process with `code` once everything is written. With the client's loop thread still inside
        /// libcurl and OpenSSL (it did not stop in time), `exit`'s atexit handlers would free OpenSSL under it
        /// (a SIGSEGV, exit 11, once seen after a second SIGINT): then `_exit`, after flushing what is buffered.
        func end(_ code: Int32) throws -> Never {
            // In process (tests), never end the process: the thread is left to finish.
            if clientStopped || !CommandIO.current.isProcess { throw ExitCode(code) }
            fflush(nil)  // every stdio stream
            ProcessExit.immediately(code)
        }
        let elapsed = ending.elapsed
        let counts = ledger.counts
        if progress, signalNumber == nil { StandardError.emit("\n") }

        if outputFailed || ledger.outputFailure != nil, let failure = ledger.outputFailure {
            StandardError.line(
                "error: Cannot write the results to \(failure.name) (\(failure.message)): stopped after input line \(counts.lastLine); the results from the failed write on are lost.\n"
                    + "Fix: Keep the reader of the results open, or write them to a file with --output FILE.")
            writeMetrics(exit: Exit.outputFailed, elapsed: elapsed)
            try end(Exit.outputFailed)
        }
        if let signalNumber {
            StandardError.line(
                "\(BatchRun.name(signalNumber)): stopped after input line \(counts.lastLine); \(counts.interruptedSent + counts.interruptedUnsent) pushes ended interrupted (\(counts.interruptedSent) possibly sent, flagged possibly_duplicated; \(counts.interruptedUnsent) never sent)."
            )
            for line in BatchSummary(counts: counts, elapsed: elapsed).textLines { StandardError.line(line) }
            StandardError.line(resumeHint)
            writeMetrics(exit: Exit.signal(signalNumber), elapsed: elapsed)
            try end(Exit.signal(signalNumber))
        }
        for line in BatchSummary(counts: counts, elapsed: elapsed).textLines { StandardError.line(line) }
        if let inputError {
            writeMetrics(exit: Exit.error, elapsed: elapsed)
            throw inputError
        }
        if counts.total == 0, counts.skippedTotal == 0, counts.activityExisting == 0, counts.repeatedKeys == 0 {
            if counts.otherShard > 0 {
                StandardError.line(
                    "Nothing in part \(shardOption ?? "") of the input: every line belongs to another part.")
                writeMetrics(exit: 0, elapsed: elapsed)
                return
            }
            writeMetrics(exit: Exit.error, elapsed: elapsed)
            let source = tokens == "-" ? "Standard input" : "The token file '\(tokens)'"
            let held = counts.blank == 0 ? "is empty" : "holds only blank and comment lines (\(counts.blank))"
            throw KKPushError(
                code: .batchInputEmpty, message: "\(source) \(held): nothing was sent.",
                fix:
                    "Give one device token (hex) or JSON object per line\(tokens == "-" ? ", piped into kkpush" : "")."
            )
        }
        if let resumeState {
            let beyond = resumeState.entries(after: counts.lastLine)
            if beyond > 0 {
                StandardError.line(
                    "warning: \(resumeState.path) has results for \(beyond) lines past the input's last line (\(counts.lastLine)): was the input shortened?"
                )
            }
        }
        let skippedRejections = counts.skipped.contains { $0.key != "accepted" }
        let failed = counts.rejectedTotal > 0 || counts.failedTotal > 0 || skippedRejections
        writeMetrics(exit: failed ? 1 : 0, elapsed: elapsed)
        if failed { throw ExitCode(1) }
    }

    /// Checks the options every push shares before any line is read: a `--priority`, `--expiration`,
    /// `--collapse-id`, `--push-type`, `--topic` or payload APNs would reject fails every line, so it stops
    /// the batch at once (naming the flag) instead of giving each line the same `preflight` failure.
    static func preflightTemplate(_ template: NotificationRequest, certificate: Bool) throws {
        var probe = template
        probe.deviceToken = String(repeating: "0", count: 64)
        let check = APNsRequestRules.preflight(probe, authentication: certificate ? .certificate(topics: nil) : .token)
        // The token is each line's, and a JSON line may bring its own payload: only the shared flags count here.
        let errors = check.errors.filter {
            $0.code != .badDeviceToken && $0.code != .missingDeviceToken
                && SendCommand.preflightFlags[$0.code] != "--payload"
        }
        guard let first = errors.first else { return }
        let flags = errors.compactMap { SendCommand.preflightFlags[$0.code] }
        let flagText = flags.isEmpty ? "the options" : Array(Set(flags)).sorted().joined(separator: ", ")
        let reasons = errors.map {
            "\($0.code): \($0.message.hasSuffix(".") ? String($0.message.dropLast()) : $0.message)"
        }
        let message =
            "APNs would reject every push of this batch (\(flagText)): \(reasons.joined(separator: "; ")). Nothing was sent."
        let fix = "\(first.fix) Or add --no-preflight to send it as is and see APNs's own answer."
        throw CLIError.usage(.batchPreflight, message, fix: fix)
    }

    /// Where the result lines go: `--output` opened for appending, else stdout. Refuses a stdout that
    /// is the `--resume` file opened without append (the shell's `>` has emptied it).
    private func openOutput() throws -> ResultWriter {
        if let output {
            try InputFile.checkWritable(output, what: "results file", label: "--output")
            if Self.sameFile(path: output, as: tokens) {
                throw KKPushError(
                    code: .batchOutputIsInput, message: "--output '\(output)' is the token file.",
                    fix: "Give --output a file of its own, e.g. results.jsonl.")
            }
            switch FileDescriptors.openForAppend(output) {
            case .success(let fd):
                return ResultWriter(descriptor: fd, name: "'\(output)'")
            case .failure(let failure):
                throw KKPushError(
                    code: .batchOutputUnwritable,
                    message: "Cannot open '\(output)' to append the results: \(failure.text).",
                    fix: "Give a writable file (it is created if missing and never truncated).")
            }
        }
        if let resume, FileIdentity.same(descriptor: CommandIO.current.output, path: resume),
            !FileDescriptors.isAppending(CommandIO.current.output)
        {
            throw KKPushError(
                code: .batchResumeTruncated,
                message:
                    "Standard output is the --resume file '\(resume)', opened without append (>): the shell emptied it before kkpush started, so its earlier results are gone. Nothing was sent.",
                fix:
                    "Append with >> \(resume), or use --output \(resume) (which appends). If the results are lost, find out from the delivery side what was sent before resuming."
            )
        }
        return ResultWriter(descriptor: CommandIO.current.output, name: "standard output")
    }

    private var resumeHint: String {
        if let output {
            return "To send the rest: the same command with --resume \(output) (results are appended to \(output))."
        }
        return
            "To send the rest: the same command with --resume RESULTS, RESULTS being where these result lines went (append: >> RESULTS, or --output RESULTS)."
    }

    private static func sameFile(path: String, as other: String) -> Bool {
        other != "-" && FileIdentity.same(path: path, as: other)
    }
}
