package import KKPushStore
package import KantineKoning

/// Where the audit's passes hand what they read: the findings' tally and output are the caller's.
package protocol AuditPasses: Actor {
    func begin(pass: Int)
    /// A batch of the first pass (in apns_token order): its readable enrollments, and how many rows it read.
    func tokenBatch(_ batch: [Enrollment], rows: Int)
    /// One token's probe answers (with a prober).
    func probed(_ a: AuditProber.Answered)
    func finishTokenPass()
    /// A batch of the second pass (in hardware_identifier order), rows that cannot be read as an enrollment
    /// included: each is reported once, here.
    func hardwareBatch(_ batch: [EnrollmentRow])
    func finishHardwarePass()
    /// A batch of the third pass (in team_manager_email order): its readable enrollments, and how many rows it read.
    func emailBatch(_ batch: [Enrollment], rows: Int)
    func finishEmailPass()
}

/// The audit's three passes over a store: by apns_token (each token probed as its holders are complete, with a
/// prober), by hardware_identifier, and by team_manager_email (the lookups the backend's troubleshooting makes).
package enum AuditScan {
    /// Reads `store` in batches of `batchSize`, handing every batch to `sink`. Throws ``AuditInterrupted`` once the
    /// prober was stopped by a signal (the answers so far are delivered).
    package static func run(
        _ store: any EnrollmentStore, batchSize size: Int, sink: some AuditPasses, prober: AuditProber?
    ) async throws {
        @Sendable func readable(_ rows: [EnrollmentRow]) -> [Enrollment] {
            rows.compactMap { if case .enrollment(let e) = $0 { e } else { nil } }
        }
        await sink.begin(pass: 1)
        let deliver: @Sendable (AuditProber.Answered) async -> Void = { await sink.probed($0) }
        try await store.forEachEnrollmentRow(orderedBy: .apnsToken, tenant: nil, batchSize: size) { rows in
            let batch = readable(rows)
            await sink.tokenBatch(batch, rows: rows.count)
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
        try await store.forEachEnrollmentRow(orderedBy: .hardwareIdentifier, tenant: nil, batchSize: size) { rows in
            await sink.hardwareBatch(rows)
        }
        await sink.finishHardwarePass()
        await sink.begin(pass: 3)
        try await store.forEachEnrollmentRow(orderedBy: .teamManagerEmail, tenant: nil, batchSize: size) { rows in
            await sink.emailBatch(readable(rows), rows: rows.count)
        }
        await sink.finishEmailPass()
    }
}
