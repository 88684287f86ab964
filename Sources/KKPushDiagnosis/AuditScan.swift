package import KKPushStore
package import KantineKoning

/// Where the audit's passes hand what they read: the findings' tally and output are the caller's.
package protocol AuditPasses: Actor {
    func begin(pass: Int)
    /// A batch of the first pass (in apns_token order).
    func tokenBatch(_ batch: [Enrollment])
    /// One token's probe answers (with a prober).
    func probed(_ a: AuditProber.Answered)
    func finishTokenPass()
    /// A batch of the second pass (in hardware_identifier order).
    func hardwareBatch(_ batch: [Enrollment])
    func finishHardwarePass()
}

/// The audit's two passes over a store: by apns_token (each token probed as its holders are complete, with a
/// prober), then by hardware_identifier.
package enum AuditScan {
    /// Reads `store` in batches of `batchSize`, handing every batch to `sink`. Throws ``AuditInterrupted`` once the
    /// prober was stopped by a signal (the answers so far are delivered).
    package static func run(
        _ store: any EnrollmentStore, batchSize size: Int, sink: some AuditPasses, prober: AuditProber?
    ) async throws {
        await sink.begin(pass: 1)
        let deliver: @Sendable (AuditProber.Answered) async -> Void = { await sink.probed($0) }
        try await store.forEachEnrollment(orderedBy: .apnsToken, tenant: nil, batchSize: size) { batch in
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
        try await store.forEachEnrollment(orderedBy: .hardwareIdentifier, tenant: nil, batchSize: size) { batch in
            await sink.hardwareBatch(batch)
        }
        await sink.finishHardwarePass()
    }
}
