import Foundation
import KKPushAuth
import KKPushBackend
import KKPushCLISupport
import KKPushCore
import KKPushDiagnosis
import KKPushStore
import KKPushSystem
import KantineKoning

/// Where the passes' findings go: JSON lines on stdout (buffered), the tally, the progress line.
actor AuditSink: AuditPasses {
    private var audit: FleetAudit
    private let json: Bool
    private let progress: Bool
    private var buffer: [UInt8] = []
    private var pass = 0
    private var rows = 0
    private var passStarted = ContinuousClock.now
    private var lastProgress: ContinuousClock.Instant?

    /// `--credentials`: the file, the topic and the server's settings to judge each enrollment's environment by.
    private let coverage: (credentials: ProviderCredentialSet, topic: String, settings: ServerAPNsSettings)?
    /// Enrollments with a device token that no credential of the file may serve, by environment.
    private(set) var unservable: [APNsEnvironment: Int] = [:]

    init(
        audit: FleetAudit, json: Bool, progress: Bool,
        coverage: (credentials: ProviderCredentialSet, topic: String, settings: ServerAPNsSettings)? = nil
    ) {
        self.coverage = coverage
        self.audit = audit
        self.json = json
        self.progress = progress
        buffer.reserveCapacity(1 << 16)
    }

    var tally: FleetAuditTally { audit.tally }
    var tenantsSeen: Set<String> { audit.tenantsSeen }

    func begin(pass: Int) {
        self.pass = pass
        rows = 0
        passStarted = ContinuousClock.now
        lastProgress = nil
    }

    func tokenBatch(_ batch: [Enrollment], rows: Int) {
        for e in batch { emit(audit.tokenPass(e)) }
        if let coverage {
            for e in batch where !(e.apnsToken ?? "").isEmpty {
                let environment = EnvironmentResolver.resolve(
                    buildEnvironment: e.buildEnvironment, apsEnvironment: e.apsEnvironment, isTestUser: e.isTestUser,
                    settings: coverage.settings
                ).environment
                if coverage.credentials.servers(topic: coverage.topic, environment: environment).isEmpty {
                    unservable[environment, default: 0] += 1
                }
            }
        }
        advance(rows)
    }

    func finishTokenPass() {
        emit(audit.finishTokenPass())
        endProgress()
    }

    /// `--probe`: one token's answers, judged on its holders.
    func probed(_ a: AuditProber.Answered) {
        emit(audit.probeFindings(a.holders, sandbox: a.sandbox, production: a.production))
    }

    func hardwareBatch(_ batch: [EnrollmentRow]) {
        for row in batch {
            switch row {
            case .enrollment(let e): emit(audit.hardwarePass(e))
            case .unreadable(let u): emit(audit.unreadableRow(u))
            }
        }
        advance(batch.count)
    }

    func finishHardwarePass() {
        emit(audit.finishHardwarePass())
        endProgress()
    }

    func emailBatch(_ batch: [Enrollment], rows: Int) {
        for e in batch { emit(audit.emailPass(e)) }
        advance(rows)
    }

    func finishEmailPass() {
        emit(audit.finishEmailPass())
        endProgress()
        flush()
    }

    private func emit(_ findings: [FleetAuditFinding]) {
        guard json, !findings.isEmpty else { return }
        for f in findings {
            // One line per finding, through the CLI's one encoder (its library words in this command line's).
            Output.json(encoding: f).write(to: &buffer)
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
        let what = ["by apns_token", "by hardware_identifier", "by team_manager_email"][max(0, min(pass - 1, 2))]
        StandardError.emit(
            "\raudit pass \(pass)/3 (\(what)): \(AuditText.grouped(rows)) rows, \(AuditText.grouped(Int(Double(rows) / elapsed))) rows/s   "
        )
    }

    private func endProgress() {
        guard progress else { return }
        showProgress(ContinuousClock.now)
        StandardError.emit("\n")
    }
}
