import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushClient
import KKPushCore
import KKPushStore
import KantineKoning

/// `kkpush audit`: every enrollment of a store, in two streamed passes, judged by diagnose's rules and by
/// what only the whole fleet shows.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Audit every enrollment of a store in one run: diagnose's rules per enrollment, and the fleet's.",
        discussion: """
            Reads the store (an SQLite file or a postgres:// URL, opened read-only as diagnose --store opens it; \
            default $DATABASE_URL) in two streamed passes, one ordered by apns_token and one by \
            hardware_identifier, holding one token's or one phone's enrollments at a time: memory does not grow \
            with the table. Reports, per enrollment, diagnose's findings without a probe (token-missing, \
            token-format, server-env-override, test-user-production-build, environment-mismatch, \
            build-environment-*), revoked-with-token, and across enrollments token-shared (one token on \
            several hardware identifiers), build-environment-disagree (one phone's active enrollments report \
            different build environments) and too-many-teams (more than 5 teams on one phone). Text: a summary \
            by finding, by tenant and by routing group (where the server's APNS_FORCE_ENV/APNS_ENV sends each \
            group; each token environment marked signed (aps_environment), inferred (build_environment, a claim) \
            or, with --probe, proved, which replaces the inference), then the first --examples findings of each code. --json: one JSON object per finding per \
            line, then {"summary": {...}}. Progress (rows, rows/s) on stderr when it is a terminal or with \
            --progress. --probe also asks APNs about each distinct token of the active enrollments: diagnose's \
            probe (an empty-payload background request, which delivers nothing) to BOTH environments, at most \
            --max-rate tokens a second, and reports token-unregistered (410), token-wrong-environment (only the \
            environment the backend does not send it to knows the token), token-unknown (BadDeviceToken in both) \
            and probe-inconclusive (a timeout, 429, 5xx: never a guessed verdict). With --state FILE each \
            token's answers are appended to FILE as it is probed (its SHA-256, never the token); a rerun with \
            the same file probes only the tokens without a conclusive answer there, so SIGINT stops cleanly \
            (exit 130) and the rerun resumes. Exit status: 1 when an error-level finding is reported, 0 \
            otherwise, 2 when the store cannot be read, 64 for bad flags, 130/143 when interrupted.
            """)

    @Option(
        name: .long,
        help: "The enrollment store: an SQLite file or a postgres:// URL, opened read-only (default: $DATABASE_URL).")
    var store: String?

    @Option(
        name: .customLong("schema-map"),
        help: "With a postgres:// --store: a JSON file naming the table and mapping kkpush's column names to its own.")
    var schemaMap: String?

    @Option(name: .long, help: "Report only findings about this tenant's enrollments (every tenant is still read).")
    var tenant: String?

    @Option(name: .long, help: "Report only this finding code (repeatable).")
    var finding: [String] = []

    @Flag(help: "Print one JSON object per finding per line, then {\"summary\": {...}}.") var json = false

    @Flag(help: "Show progress on stderr even when it is not a terminal.") var progress = false

    @Option(name: .customLong("batch-size"), help: "Enrollments read per batch (1 to 100000).")
    var batchSize: Int = 2000

    @Option(name: .long, help: "Text output: how many findings of each code to show (0 to 1000).")
    var examples: Int = 5

    @OptionGroup(title: "Server settings")
    var server: ServerSettingsOptions

    @Flag(
        help:
            "Ask both APNs environments about each distinct token with diagnose's non-delivering probe (needs a credential)."
    )
    var probe = false

    @Option(
        name: .customLong("max-rate"), parsing: .unconditional,
        help: "With --probe: the most tokens probed per second (each is one request to each environment).")
    var maxRate: Double = 20

    @Option(
        name: .long,
        help:
            "With --probe: a JSON-lines file of the tokens probed (SHA-256) and their answers; a rerun with it resumes."
    )
    var state: String?

    @Option(name: .long, help: "With --probe: the apns-topic (default: $APNS_TOPIC, else nl.kantinekoning.app).")
    var topic: String?

    @OptionGroup var providerKey: ProviderKeyOptions
    @OptionGroup var certificate: ProbeCertificateOptions
    @OptionGroup var endpoints: ProbeEndpointOptions

    /// The most tokens probed at a time.
    var probeConcurrency: Int { max(1, min(8, Int(maxRate.rounded(.up)))) }

    func validate() throws {
        guard (1...100_000).contains(batchSize) else {
            throw ValidationError("--batch-size must be 1 to 100000 (got \(batchSize)).")
        }
        guard (0...1000).contains(examples) else {
            throw ValidationError("--examples must be 0 to 1000 (got \(examples)).")
        }
        for code in finding where FleetAuditCatalog.entry(code) == nil {
            throw ValidationError(
                "--finding \(code) is not an audit finding; one of: \(FleetAuditCatalog.codes.joined(separator: ", "))."
            )
        }
        if let tenant, tenant.isEmpty { throw ValidationError("--tenant needs a tenant slug.") }
        if let store, store.isEmpty { throw ValidationError("--store needs an SQLite file or a postgres:// URL.") }
        if let schemaMap, schemaMap.isEmpty { throw ValidationError("--schema-map needs a file.") }
        guard maxRate.isFinite, maxRate > 0, maxRate <= 10_000 else {
            throw ValidationError("--max-rate must be a positive number of tokens per second up to 10000.")
        }
        try TextFlags.nonEmpty([
            ("--state", state), ("--topic", topic), ("--key", providerKey.keyFile), ("--key-id", providerKey.keyIDFlag),
            ("--team-id", providerKey.teamIDFlag),
        ])
        try endpoints.check()
        try certificate.check()
        if !probe {
            let given =
                endpoints.given
                + [
                    ("--state", state != nil), ("--topic", topic != nil), ("--cert", certificate.cert != nil),
                    ("--key", providerKey.keyFile != nil),
                ].filter(\.1).map(\.0)
            if let flag = given.first { throw ValidationError("\(flag) is for --probe only: add --probe.") }
        }
        if certificate.cert != nil, providerKey.keyFile != nil {
            throw ValidationError("Give either --key (with --key-id and --team-id) or --cert, not both.")
        }
    }

    /// The credential `--probe` sends with: --cert, else the provider key.
    func probeCredential() throws -> APNsCredential {
        if let cert = certificate.cert {
            let password = try Secrets.resolve(
                Secrets.certPassword, flag: certificate.certPassword, file: certificate.certPasswordFile)
            return try certificateCredential(path: cert, keyPath: certificate.certKey, password: password)
        }
        guard let signing = try providerKey.signingKey() else {
            throw CLIError.usage(
                .probeNoCredential, "--probe needs a credential to send with.",
                fix: "Give --key AuthKey_KEYID.p8 --key-id KEYID --team-id TEAMID, or --cert FILE.p12.")
        }
        guard let kid = providerKey.keyID(), let team = providerKey.teamID() else {
            throw CLIError.usage(
                .keyIncomplete, "A provider key needs --key-id and --team-id (or APNS_KEY_ID, APNS_TEAM_ID).",
                fix: "Give all three: --key AuthKey_KEYID.p8 --key-id KEYID --team-id TEAMID.")
        }
        return .token(ProviderTokenCache(key: try signing.load(), keyID: kid, teamID: team))
    }

    /// The prober of `--probe` (its client, its --state), or nil without --probe.
    func makeProber() throws -> AuditProber? {
        guard probe else { return nil }
        let credential = try probeCredential()
        let (sandbox, production) = try endpoints.endpoints()
        let client: APNsClient
        do {
            client = try DiagnosisProbe.makeClient(
                credential: credential, sandbox: sandbox, production: production, proxy: endpoints.proxy,
                timeout: try endpoints.wait(), concurrency: probeConcurrency)
        } catch let e as KKPushError where e.code == "client-proxy-url" {
            throw CLIError.usage(
                .proxyUrl, "--proxy: \(e.message)", fix: e.fix ?? "Use http://host:port or socks5h://host:port.")
        }
        let topic =
            topic ?? CommandIO.current.environment["APNS_TOPIC"].flatMap { $0.isEmpty ? nil : $0 }
            ?? TokenUpdate.defaultBundleID
        return AuditProber(
            client: client, topic: topic, state: try state.map { try AuditProbeState(path: $0) }, tenant: tenant,
            maxRate: maxRate, concurrency: probeConcurrency)
    }

    /// --store, else $DATABASE_URL; and which of the two it is.
    var storeSource: (value: String, flag: String)? {
        if let store { return (store, "--store") }
        guard let url = CommandIO.current.environment[EnrollmentStoreLocation.environmentVariable],
            !url.trimmingWhitespace().isEmpty
        else { return nil }
        return (url, EnrollmentStoreLocation.environmentVariable)
    }

    func run() async throws {
        let failed = try await reportingErrors(exitCode: ExitStatus.input) { () async throws -> Bool in
            guard let (value, flag) = storeSource else {
                throw CLIError.usage(
                    .storeUrlInvalid, "audit needs a store: --store was not given and DATABASE_URL is not set.",
                    fix: "kkpush audit --store enrollments.sqlite (or --store 'postgres://…', or set DATABASE_URL).")
            }
            let settings = server.settings()
            let sink = AuditSink(
                audit: FleetAudit(
                    settings: settings, tenant: tenant, codes: finding.isEmpty ? nil : Set(finding),
                    exampleLimit: examples),
                json: json, progress: progress || Terminal.isTTY(CommandIO.current.error))
            let started = ContinuousClock.now
            let shown = (try? EnrollmentStoreLocation.parse(value, origin: flag).display) ?? value
            let prober = try makeProber()
            let signals = prober.map { _ in TerminationSignals() }
            let watcher = Task { [prober] in
                if let signals, let prober { prober.stop(await signals.wait()) }
            }
            defer {
                watcher.cancel()
                signals?.cancel()
            }
            do {
                try await scan(value, flag: flag, sink: sink, prober: prober)
                await prober?.client.shutdown()
            } catch let stop as AuditInterrupted {
                await prober?.client.shutdown()
                await sink.flush()
                let done = (prober?.probed ?? 0) + (prober?.reused ?? 0)
                StandardError.line(
                    "audit: interrupted by \(stop.signal == SIGTERM ? "SIGTERM" : "SIGINT") after \(done) tokens probed"
                        + (state.map { "; their answers are in \($0): run the same command again to resume." }
                            ?? " (give --state FILE to resume an interrupted audit)."))
                throw ExitCode(128 + stop.signal)
            } catch let e as DecodingError {
                // A row the store cannot read as an enrollment (a team_codes that is not a list of strings).
                throw CLIError.input(
                    .storeMalformed, "A row of \(flag) \(shown) cannot be read as an enrollment: \(e).",
                    fix: "`kkpush backend export --db '\(shown)'` shows the same; fix or remove the row.")
            }
            let seconds = (ContinuousClock.now - started).seconds
            let tally = await sink.tally
            var extra: [String: JSONValue] = [
                "store": .string(shown), "seconds": .double((seconds * 1000).rounded() / 1000),
            ]
            if let prober {
                extra["probe"] = .object([
                    "probed": .int(prober.probed), "reused": .int(prober.reused), "max_rate": .double(maxRate),
                    "state": state.map(JSONValue.string) ?? .null,
                ])
            }
            if json {
                var out: [UInt8] = []
                JSONValue.writeOrderedObject(
                    [
                        (
                            "summary",
                            FlagWords.common.apply(tally.summaryJSON(settings: settings, extra: extra))
                        )
                    ], to: &out)
                out.append(0x0A)
                await sink.write(out)
                await sink.flush()
            } else {
                print(
                    AuditText.render(
                        tally, settings: settings, store: shown, seconds: seconds, tenant: tenant, examples: examples))
                if let prober {
                    print(
                        "Probed \(AuditText.grouped(prober.probed)) tokens in both environments (at most \(InputNumbers.text(maxRate))/s)\(prober.reused > 0 ? "; \(AuditText.grouped(prober.reused)) answers reused from \(state ?? "--state")" : "")."
                    )
                }
            }
            return tally.hasErrors
        }
        if failed { throw ExitCode(ExitStatus.failed) }
    }

    /// The two passes: by apns_token, then by hardware_identifier.
    func scan(_ value: String, flag: String, sink: AuditSink, prober: AuditProber? = nil) async throws {
        let size = batchSize
        try await EnrollmentStoreReading.with(value, flag: flag, schemaMap: schemaMap) { db in
            await sink.begin(pass: 1)
            let deliver: @Sendable (AuditProber.Answered) async -> Void = { await sink.probed($0) }
            try await db.forEachEnrollment(orderedBy: .apnsToken, tenant: nil, batchSize: size) { batch in
                await sink.tokenBatch(batch)
                if let prober {
                    await prober.feed(batch, deliver: deliver)
                    if let signal = prober.stoppedBy { throw AuditInterrupted(signal: signal) }
                }
            }
            if let prober {
                await prober.finish(deliver: deliver)
                if let signal = prober.stoppedBy { throw AuditInterrupted(signal: signal) }
            }
            await sink.finishTokenPass()
            await sink.begin(pass: 2)
            try await db.forEachEnrollment(orderedBy: .hardwareIdentifier, tenant: nil, batchSize: size) { batch in
                await sink.hardwareBatch(batch)
            }
            await sink.finishHardwarePass()
        }
    }
}

/// Where the passes' findings go: JSON lines on stdout (buffered), the tally, the progress line.
actor AuditSink {
    private var audit: FleetAudit
    private let json: Bool
    private let progress: Bool
    private var buffer: [UInt8] = []
    private var pass = 0
    private var rows = 0
    private var passStarted = ContinuousClock.now
    private var lastProgress: ContinuousClock.Instant?

    init(audit: FleetAudit, json: Bool, progress: Bool) {
        self.audit = audit
        self.json = json
        self.progress = progress
        buffer.reserveCapacity(1 << 16)
    }

    var tally: FleetAuditTally { audit.tally }

    func begin(pass: Int) {
        self.pass = pass
        rows = 0
        passStarted = ContinuousClock.now
        lastProgress = nil
    }

    func tokenBatch(_ batch: [Enrollment]) {
        for e in batch { emit(audit.tokenPass(e)) }
        advance(batch.count)
    }

    func finishTokenPass() {
        emit(audit.finishTokenPass())
        endProgress()
    }

    /// `--probe`: one token's answers, judged on its holders.
    func probed(_ a: AuditProber.Answered) {
        emit(audit.probeFindings(a.holders, sandbox: a.sandbox, production: a.production))
    }

    func hardwareBatch(_ batch: [Enrollment]) {
        for e in batch { emit(audit.hardwarePass(e)) }
        advance(batch.count)
    }

    func finishHardwarePass() {
        emit(audit.finishHardwarePass())
        endProgress()
        flush()
    }

    private func emit(_ findings: [FleetAuditFinding]) {
        guard json, !findings.isEmpty else { return }
        for f in findings {
            FlagWords.common.apply(f).writeJSON(to: &buffer)
            buffer.append(0x0A)
        }
        if buffer.count >= 1 << 16 { flush() }
    }

    func write(_ bytes: [UInt8]) { buffer += bytes }

    /// Writes what is buffered to stdout (a closed stdout ends the writing, not the audit).
    func flush() {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { _ = FileDescriptors.writeAll(CommandIO.current.output, $0) }
        buffer.removeAll(keepingCapacity: true)
    }

    private func advance(_ n: Int) {
        rows += n
        guard progress else { return }
        let now = ContinuousClock.now
        if let last = lastProgress, now - last < .milliseconds(250) { return }
        lastProgress = now
        showProgress(now)
    }

    private func showProgress(_ now: ContinuousClock.Instant) {
        let elapsed = max((now - passStarted).seconds, 0.001)
        let what = pass == 1 ? "by apns_token" : "by hardware_identifier"
        StandardError.emit(
            "\raudit pass \(pass)/2 (\(what)): \(AuditText.grouped(rows)) rows, \(AuditText.grouped(Int(Double(rows) / elapsed))) rows/s   "
        )
    }

    private func endProgress() {
        guard progress else { return }
        showProgress(ContinuousClock.now)
        StandardError.emit("\n")
    }
}

/// The text report.
enum AuditText {
    /// `1234567` → `1,234,567`.
    static func grouped(_ n: Int) -> String {
        let digits = String(abs(n))
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }

    static func padLeft(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
    }

    /// The most tenants listed in the text table (`--json` has all).
    static let tenantRows = 40

    static func render(
        _ t: FleetAuditTally, settings: ServerAPNsSettings, store: String, seconds: Double, tenant: String?,
        examples: Int
    ) -> String {
        var lines: [String] = []
        let scope = tenant.map { " of tenant \($0)" } ?? ""
        lines.append(
            "Audited \(grouped(t.scanned)) enrollments\(scope) in \(store) (\(grouped(t.active)) active, \(grouped(t.revoked)) revoked; \(grouped(t.withToken)) active with a token, \(grouped(t.distinctTokens)) distinct tokens) in \(String(format: "%.1f", seconds)) s."
        )
        let force = settings.forceEnv.map { "APNS_FORCE_ENV=\"\($0)\"" } ?? "APNS_FORCE_ENV unset"
        let legacy = settings.legacyAPNSEnv.map { "APNS_ENV=\"\($0)\"" } ?? "APNS_ENV unset"
        lines.append("Server settings: \(force), \(legacy).")
        lines.append("")
        if t.byCode.isEmpty {
            lines.append("No findings.")
        } else {
            lines.append(
                "\(pad("severity", 9)) \(pad("finding", 33)) \(padLeft("count", 9))  meaning")
            for code in t.codesFound {
                lines.append(
                    "\(pad(FleetAuditTally.severity(code).rawValue, 9)) \(pad(code, 33)) \(padLeft(grouped(t.byCode[code] ?? 0), 9))  \(FlagWords.common.apply(FleetAuditCatalog.entry(code)?.meaning ?? ""))"
                )
            }
            lines.append(
                "\(grouped(t.errorCount)) error and \(grouped(t.warningCount)) warning findings (one per enrollment and code)."
            )
        }
        lines.append("")
        lines.append("By tenant:")
        lines.append(
            "\(pad("tenant", 24)) \(padLeft("enrollments", 11)) \(padLeft("errors", 8)) \(padLeft("warnings", 8))  findings"
        )
        let tenants = t.byTenant.sorted {
            let a = $0.value.findings.values.reduce(0, +)
            let b = $1.value.findings.values.reduce(0, +)
            return a != b ? a > b : $0.key < $1.key
        }
        for (slug, c) in tenants.prefix(tenantRows) {
            let errors = c.findings.filter { FleetAuditTally.severity($0.key) == .error }.values.reduce(0, +)
            let warnings = c.findings.filter { FleetAuditTally.severity($0.key) == .warning }.values.reduce(0, +)
            let codes = c.findings.sorted { $0.value > $1.value }.map { "\($0.key) \(grouped($0.value))" }
            lines.append(
                "\(pad(slug, 24)) \(padLeft(grouped(c.enrollments), 11)) \(padLeft(grouped(errors), 8)) \(padLeft(grouped(warnings), 8))  \(codes.joined(separator: ", "))"
            )
        }
        if tenants.count > tenantRows {
            lines.append("… \(tenants.count - tenantRows) more tenants (--json lists all).")
        }
        lines.append("")
        lines.append("Where the server sends active enrollments with a token (\(force), \(legacy)):")
        lines.append(
            "\(pad("tokens", 21)) \(pad("pushed to", 11)) \(pad("decided by", 18)) \(padLeft("enrollments", 11))")
        for (g, n) in t.effectiveRouting.sorted(by: { $0.value > $1.value }) {
            let token = EnvironmentModel.label(g.tokenEnvironment, g.tokenEvidence)
            let misrouted =
                !g.misrouted
                ? ""
                : g.tokenEvidence == .inferred
                    ? "  MISROUTED if build_environment is right: BadDeviceToken" : "  MISROUTED: BadDeviceToken"
            lines.append(
                "\(pad(token, 21)) \(pad(g.pushEnvironment.rawValue, 11)) \(pad(g.decidedBy.rawValue, 18)) \(padLeft(grouped(n), 11))\(misrouted)"
            )
        }
        lines.append(
            "Token environments are proved (by --probe: APNs knows the token there), signed (aps_environment, from the embedded profile) or inferred (build_environment: a claim; the signature decides). A proved one replaces the inference."
        )
        if examples > 0, !t.byCode.isEmpty {
            lines.append("")
            lines.append("Affected enrollments (the first \(examples) of each finding; --json lists all):")
            for code in t.codesFound {
                let count = t.byCode[code] ?? 0
                lines.append("\(FleetAuditTally.severity(code).rawValue) \(code) (\(grouped(count))):")
                for f in t.examples[code] ?? [] {
                    lines.append("  \(FlagWords.common.apply(f.message))")
                }
                if let fix = t.examples[code]?.first?.fix { lines.append("  fix: \(FlagWords.common.apply(fix))") }
            }
        }
        return lines.joined(separator: "\n")
    }
}
