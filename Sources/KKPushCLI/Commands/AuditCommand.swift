import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushDiagnosis
import KKPushStore
import KKPushSystem
import KantineKoning

/// `kkpush audit`: every enrollment of a store, in three streamed passes, judged by diagnose's rules and by
/// what only the whole fleet shows.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Audit every enrollment of a store in one run: diagnose's rules per enrollment, and the fleet's.",
        discussion: """
            Reads the store (an SQLite file or a postgres:// URL, opened read-only as diagnose --store opens it; \
            default $DATABASE_URL) in three streamed passes, ordered by apns_token, by hardware_identifier and \
            by team_manager_email, holding one token's, phone's or e-mail's enrollments at a time: memory does not \
            grow with the table. Reports, per enrollment, diagnose's findings without a probe (token-missing, \
            token-format, server-env-override, test-user-production-build, environment-mismatch, \
            build-environment-*), revoked-with-token, row-unreadable (a row with a role or status kkpush does \
            not know, named; the audit goes on), and across enrollments token-shared (one token on \
            several hardware identifiers), build-environment-disagree (one phone's active enrollments report \
            different build environments), too-many-teams (more than 5 teams on one phone), and where the \
            backend's lookups by e-mail or token (Repo.get_by) would raise or miss: email-lookup-ambiguous, \
            token-lookup-ambiguous. Text: a summary \
            by finding, by tenant and by routing group (where the server's APNS_FORCE_ENV/APNS_ENV sends each \
            group; each token environment marked signed (aps_environment), inferred (build_environment, a claim) \
            or, with --probe, proved, which replaces the inference), then the first --examples findings of each code. --json: one JSON object per finding per \
            line, then {"summary": {...}}. Progress (rows, rows/s) on stderr when it is a terminal or with \
            --progress. --probe also asks APNs about each distinct token of the active enrollments: diagnose's \
            probe (an empty-payload background request, which delivers nothing) to BOTH environments, at most \
            --max-rate tokens a second, and reports token-unregistered (410), token-wrong-environment (only the \
            environment the backend does not send it to knows the token), token-unknown (BadDeviceToken in both) \
            probe-inconclusive (a timeout, 429, 5xx: never a guessed verdict) and probe-both-environments \
            (both accept the token: a stand-in, never real APNs). With --state FILE each \
            token's answers are appended to FILE as it is probed (its SHA-256, never the token); a rerun with \
            the same file probes only the tokens without a conclusive answer there, so SIGINT stops cleanly \
            (exit 130) and the rerun resumes. Exit status: 1 when an error-level finding is reported, 0 \
            otherwise, 2 when the store cannot be read or --tenant names a tenant it has no enrollment of \
            (tenant-unknown, naming the nearest ones), 64 for bad flags, 130/143 when interrupted (without \
            --probe the signal ends the process, which a shell reports the same way).
            """)

    @OptionGroup var storeOptions: StoreOptions
    var store: String? { storeOptions.store }
    var schemaMap: String? { storeOptions.schemaMap }

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

    @Option(
        name: .long,
        help:
            "A credentials file (JSON): count the enrollments no credential of it may serve (their environment, --topic)."
    )
    var credentials: String?

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
        } catch let e as KKPushError where e.code == .clientProxyUrl {
            throw CLIError.usage(
                .proxyUrl, "--proxy: \(e.message)", fix: e.fix ?? "Use http://host:port or socks5h://host:port.")
        }
        let topic =
            topic ?? CommandIO.current.environment["APNS_TOPIC"].flatMap { $0.isEmpty ? nil : $0 }
            ?? TokenUpdate.defaultBundleID
        return AuditProber(
            client: client, topic: topic, state: try state.map(Self.openState), tenant: tenant,
            maxRate: maxRate, concurrency: probeConcurrency)
    }

    /// `--state FILE`: what an earlier run recorded, and the file opened for appending.
    static func openState(_ path: String) throws -> AuditProbeState {
        do {
            return try AuditProbeState(
                path: path, label: "--state", holds: "the JSON lines an earlier `audit --probe --state` run wrote")
        } catch let e as AuditProbeState.Unwritable {
            throw CLIError.input(
                .fileUnreadable,
                "--state \(e.path) cannot be opened for writing: \(ErrorWords.systemText(errno: e.code)).",
                fix: "Give a file in a directory you can write to.")
        }
    }

    /// --store, else $DATABASE_URL; and which of the two it is.
    var storeSource: (value: String, flag: String)? {
        EnrollmentStoreLocation.flagOrEnvironment(store, flag: "--store")
    }

    func run() async throws {
        let failed = try await reportingErrors { () async throws -> Bool in
            guard let (value, flag) = storeSource else {
                throw CLIError.usage(
                    .storeUrlInvalid, "audit needs a store: --store was not given and DATABASE_URL is not set.",
                    fix: "kkpush audit --store enrollments.sqlite (or --store 'postgres://…', or set DATABASE_URL).")
            }
            let settings = server.settings()
            let credentialSet = try credentials.map { try ProviderCredentialSet.load(path: $0) }
            let coverageTopic = topic ?? CommandIO.current.environment["APNS_TOPIC"] ?? "nl.kantinekoning.app"
            let sink = AuditSink(
                audit: FleetAudit(
                    settings: settings, tenant: tenant, codes: finding.isEmpty ? nil : Set(finding),
                    exampleLimit: examples),
                json: json, progress: progress || Terminal.isTTY(CommandIO.current.error),
                coverage: credentialSet.map { ($0, coverageTopic, settings) })
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
            }
            let seconds = (ContinuousClock.now - started).seconds
            let tally = await sink.tally
            if let tenant, tally.scanned == 0 {
                throw Self.unknownTenant(tenant, known: await sink.tenantsSeen, store: shown)
            }
            let unservable = await sink.unservable
            let summary = AuditSummary(
                tally: tally, settings: settings, store: shown, seconds: seconds, tenant: tenant, examples: examples,
                probe: prober.map {
                    AuditSummary.Probe(probed: $0.probed, reused: $0.reused, maxRate: maxRate, state: state)
                },
                credentials: credentials.map {
                    AuditSummary.Credentials(file: $0, topic: coverageTopic, unservable: unservable)
                })
            if json {
                // The summary is the JSON-lines stream's last line, after the findings the sink wrote.
                var out: [UInt8] = []
                Output.json(encoding: AuditSummaryLine(summary)).write(to: &out)
                out.append(0x0A)
                await sink.write(out)
                await sink.flush()
            } else {
                Output.printReport(summary, json: false)
            }
            return tally.hasErrors
        }
        if failed { throw ExitCode(ExitStatus.failed) }
    }

    /// `--tenant` names a tenant without a single row in the store (a misspelt slug): exit 2, naming the slug and
    /// the nearest tenants the store has, never "0 enrollments, no findings".
    static func unknownTenant(_ tenant: String, known: Set<String>, store: String) -> CLIError {
        let nearest = known.map { (slug: $0, distance: CommandSpelling.distance(tenant.lowercased(), $0.lowercased())) }
            .sorted { ($0.distance, $0.slug) < ($1.distance, $1.slug) }.prefix(3).map(\.slug)
        return CLIError.input(
            .tenantUnknown,
            "--tenant \(tenant): \(store) has no enrollment of tenant '\(tenant)'"
                + (known.isEmpty
                    ? " (it has no enrollments at all)."
                    : "; the nearest of its \(known.count) tenants: \(nearest.joined(separator: ", ")).")
                + " Nothing was audited.",
            fix: nearest.first.map { "Check the slug (tenant_slug, as stored): --tenant \($0)?" }
                ?? "Give a store that holds enrollments.")
    }

    /// The three passes (AuditScan) over the store `value` names: by apns_token, by hardware_identifier, by
    /// team_manager_email; the store's notes (absent columns, a read-only fallback) on standard error.
    func scan(_ value: String, flag: String, sink: AuditSink, prober: AuditProber? = nil) async throws {
        let size = batchSize
        try await EnrollmentStoreReading.with(value, flag: flag, schemaMap: schemaMap, notes: true) { db in
            try await AuditScan.run(db, batchSize: size, sink: sink, prober: prober)
        }
    }
}
