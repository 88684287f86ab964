import Foundation
public import KKPushCore
public import KKPushStore
public import KantineKoning
public import Logging

/// The result of one push of a fan-out.
public struct FanOutDelivery: Sendable, Hashable {
    /// The device token pushed to.
    public var token: String
    /// The environment it was sent to.
    public var environment: APNsEnvironment
    /// The enrollments (device ids) that share this token.
    public var deviceIDs: [String]
    /// What APNs answered.
    public var delivery: PushDelivery
    /// How many enrollments had the token cleared because APNs answered 410.
    public var clearedEnrollments: Int
    /// Warnings of the environment resolution.
    public var problems: [Problem]
}

/// The outcome of a team fan-out.
public struct FanOutReport: Sendable, Hashable {
    /// The tenant.
    public var tenant: String
    /// The team.
    public var team: String
    /// How many active enrollments with a token follow the team.
    public var enrollmentCount: Int
    /// One entry per distinct device token, in the order of the plan.
    public var deliveries: [FanOutDelivery]

    /// How many pushes APNs accepted.
    public var accepted: Int { deliveries.filter { if case .accepted = $0.delivery { true } else { false } }.count }
    /// How many it rejected.
    public var rejected: Int { deliveries.filter { if case .rejected = $0.delivery { true } else { false } }.count }
    /// How many failed without an answer.
    public var failed: Int { deliveries.filter { if case .failed = $0.delivery { true } else { false } }.count }
}

/// Sends one notification to every device of a team: one push per distinct device token (see
/// ``TeamFanOutPlan``), each to the environment its enrollment resolves to with the server's settings,
/// at most ``maxConcurrent`` at a time; a 410 clears the token from every enrollment that holds it and
/// registered it at or before the 410's timestamp.
public struct TeamFanOut: Sendable {
    /// Where the enrollments are.
    public var store: any EnrollmentStore
    /// Who sends.
    public var sender: any PushSender
    /// The server's `APNS_FORCE_ENV` / `APNS_ENV`.
    public var settings: ServerAPNsSettings
    /// The clock that stamps cleared tokens.
    public var clock: any WallClock
    /// How many pushes may be in flight at once.
    public var maxConcurrent: Int
    /// Where to log (no output by default).
    public var logger: Logger
    /// Where to count pushes, their latency and the store's (nil: nowhere).
    public var metrics: BackendMetrics?

    /// Creates a fan-out.
    public init(
        store: any EnrollmentStore, sender: any PushSender, settings: ServerAPNsSettings = ServerAPNsSettings(),
        clock: any WallClock = SystemWallClock(), maxConcurrent: Int = 16,
        logger: Logger = Logger(label: "kkpush.backend.push", factory: { _ in SwiftLogNoOpLogHandler() }),
        metrics: BackendMetrics? = nil
    ) {
        self.metrics = metrics
        self.store = store
        self.sender = sender
        self.settings = settings
        self.clock = clock
        self.maxConcurrent = max(1, maxConcurrent)
        self.logger = logger
    }

    /// Pushes `makeRequest(token)` to every device of `team` in `tenant`.
    public func send(
        tenant: String, team: String, makeRequest: @Sendable (String) -> NotificationRequest
    ) async throws -> FanOutReport {
        let (store, metrics) = (self.store, self.metrics)
        let enrollments = try await Self.timed(metrics, "active_enrollments") {
            try await store.activeEnrollments(tenant: tenant, team: team)
        }
        let targets = TeamFanOutPlan.targets(enrollments: enrollments, tenant: tenant, team: team, settings: settings)
        let withToken = enrollments.filter { $0.apnsToken?.isEmpty == false }.count
        logger.info(
            "fan-out",
            metadata: [
                "tenant": "\(tenant)", "team": "\(team)", "enrollments": "\(withToken)", "pushes": "\(targets.count)",
            ])
        var results = [PushDelivery?](repeating: nil, count: targets.count)
        let sender = self.sender
        await withTaskGroup(of: (Int, PushDelivery).self) { group in
            var next = 0
            func addNext() {
                guard next < targets.count else { return }
                let index = next
                let target = targets[index]
                let request = makeRequest(target.token)
                // On Swift's cooperative pool, not on the executor of the request that started the fan-out (an HTTP
                // server's event loop): the pushes' answers come back in turn with the rest of the process's work, so
                // the fan-out sends its next push after the work its earlier pushes caused was taken up. In `simulate`
                // that work is the phones' refreshes: running ahead of them (on the backend's own threads), the
                // fan-out had most of a thousand pushes accepted before most refreshes began, and each refresh then
                // waited for all the ones before it.
                group.addTask(executorPreference: globalConcurrentExecutor) {
                    let start = ContinuousClock.now
                    let delivery = await sender.send(request, to: target.environment)
                    metrics?.observePush(environment: target.environment, ContinuousClock.now - start)
                    return (index, delivery)
                }
                next += 1
            }
            for _ in 0..<min(maxConcurrent, targets.count) { addNext() }
            while let (index, delivery) = await group.next() {
                results[index] = delivery
                addNext()
            }
        }
        var deliveries: [FanOutDelivery] = []
        for (target, result) in zip(targets, results) {
            let delivery = result ?? .failed(message: "no result")
            var cleared = 0
            if delivery.isUnregistered {
                // Only where the token was registered at or before the 410's timestamp: a device that
                // registered the token again since keeps it.
                var unregisteredAt: Date?
                if case .rejected(_, _, let timestamp) = delivery { unregisteredAt = timestamp }
                let now = clock.now()
                cleared = try await Self.timed(metrics, "clear_token") {
                    try await store.clearToken(target.token, unregisteredAt: unregisteredAt, at: now)
                }
                metrics?.tokensCleared(cleared)
                logger.notice(
                    "token unregistered: cleared",
                    metadata: [
                        "token": "\(DeviceToken.redacted(target.token))", "enrollments": "\(cleared)",
                    ])
            }
            metrics?.fanOutPush(delivery, environment: target.environment)
            deliveries.append(
                FanOutDelivery(
                    token: target.token, environment: target.environment, deviceIDs: target.enrollments.map(\.deviceID),
                    delivery: delivery, clearedEnrollments: cleared, problems: target.problems))
        }
        return FanOutReport(tenant: tenant, team: team, enrollmentCount: withToken, deliveries: deliveries)
    }

    private static func timed<T>(_ metrics: BackendMetrics?, _ operation: String, _ body: () async throws -> T)
        async rethrows -> T
    {
        guard let metrics else { return try await body() }
        return try await metrics.timed(operation, body)
    }
}
