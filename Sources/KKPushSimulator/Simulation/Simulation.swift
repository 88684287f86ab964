package import Foundation
package import KKPushBackend
package import KKPushCore
import KKPushMock
package import KantineKoning

/// One phone's part in a simulation run.
package struct DeviceReport: Sendable {
    /// The app's name.
    package var name: String
    /// The build scheme.
    package var scheme: AppBuildScheme
    /// What the build reports as `build_environment`.
    package var buildEnvironment: String
    /// The environment its token belongs to.
    package var tokenEnvironment: APNsEnvironment
    /// The device token's first 12 characters and `…`.
    package var tokenPrefix: String
    /// The enrollments, as `tenant role teams`.
    package var enrollments: [String]
    /// How many pushes the backend sent to this phone.
    package var pushesSent: Int
    /// How many of them APNs accepted.
    package var pushesAccepted: Int
    /// The rejections and failures, as `400 BadDeviceToken (production)`.
    package var pushProblems: [String]
    /// How many pushes the app handled with a complete refresh.
    package var refreshed: Int
    /// Push-to-refresh latencies, in seconds.
    package var latencies: [TimeInterval]
    /// The refreshed `upcoming` list.
    package var upcoming: [Dienst]
    /// The app's log lines.
    package var log: [String]
}

/// The result of `kkpush simulate`.
package struct SimulationReport: Sendable {
    /// The mock's sandbox port.
    package var sandboxPort: Int
    /// The mock's production port.
    package var productionPort: Int
    /// The backend's base URL.
    package var backendURL: String
    /// One entry per phone.
    package var devices: [DeviceReport]
    /// The dienst changes and their fan-outs.
    package var changes: [DienstChangeResult]
    /// How many push handlings were expected (one per accepted push).
    package var expectedHandled: Int
    /// How many arrived before the deadline.
    package var handled: Int
    /// The push-to-refresh latency distribution.
    package var latency: LatencySummary
    /// Seconds to set up the devices (enrollments, tokens, token updates).
    package var setupSeconds: Double
    /// Seconds from the first dienst change until every app had refreshed.
    package var pushSeconds: Double
    /// Seconds for the whole run.
    package var totalSeconds: Double

    /// The latency goal: p99 push → refreshed list at or under this many milliseconds.
    package static let latencyGoalMilliseconds = 100.0

    /// Whether the p99 latency met ``latencyGoalMilliseconds``; nil if nothing was measured. A benchmark
    /// figure (it depends on the machine and its load), not part of ``succeeded``.
    package var latencyGoalMet: Bool? {
        latency.count == 0 ? nil : latency.p99 <= Self.latencyGoalMilliseconds
    }

    /// True if every push was accepted and every app refreshed completely for each (the latency goal is
    /// not part of it: see ``latencyGoalMet``).
    package var succeeded: Bool {
        handled >= expectedHandled
            && devices.allSatisfy { $0.pushesAccepted == $0.pushesSent && $0.refreshed == $0.pushesAccepted }
    }
}

/// The end-to-end simulation behind `kkpush simulate`.
package enum Simulation {
    /// Runs the main job: starts the mock APNs server, the backend and `deviceCount` apps (the standard
    /// five by default), changes the next dienst of JO11-3 (VV Wilhelmus) and JO10-5 (AGOVV), and
    /// waits until every app has handled every accepted push.
    package static func run(
        deviceCount: Int = Fleet.standard.count, configuration: SimulationConfiguration = SimulationConfiguration()
    ) async throws -> SimulationReport {
        guard (1...100_000).contains(deviceCount) else {
            throw KKPushError(
                code: .simulateDevices, message: "The device count (devices) \(deviceCount) is out of range.",
                fix: "Give between 1 and 100000 devices (1000 is the benchmark).")
        }
        let started = ContinuousClock.now
        return try await withSimulationWorld(configuration: configuration) { world in
            let apps = try await setUp(world: world, profiles: Fleet.make(count: deviceCount))
            let setupDone = ContinuousClock.now
            let teams = Fleet.changedTeams.filter { t in
                Fleet.make(count: deviceCount).contains {
                    $0.enrollments.contains { $0.tenant == t.tenant && $0.teams.contains(t.team) }
                }
            }
            let changes = try await withThrowingTaskGroup(of: (Int, DienstChangeResult).self) { group in
                for (i, t) in teams.enumerated() {
                    group.addTask { (i, try await world.changeNextDienst(tenant: t.tenant, team: t.team)) }
                }
                var results: [(Int, DienstChangeResult)] = []
                for try await r in group { results.append(r) }
                return results.sorted { $0.0 < $1.0 }.map(\.1)
            }
            let expected = changes.reduce(0) { $0 + $1.accepted }
            _ = await world.collector.wait(forAtLeast: expected, timeout: configuration.timeout)
            let pushDone = ContinuousClock.now
            let report = await makeReport(world: world, apps: apps, changes: changes, expected: expected)
            for app in apps { await app.stop() }
            var r = report
            r.setupSeconds = SimulatedApp.seconds(setupDone - started)
            r.pushSeconds = SimulatedApp.seconds(pushDone - setupDone)
            r.totalSeconds = SimulatedApp.seconds(ContinuousClock.now - started)
            return r
        }
    }

    /// Sets up the phones, at most ``SimulationConfiguration/setupConcurrency`` at a time, in order.
    package static func setUp(world: SimulationWorld, profiles: [DeviceProfile]) async throws -> [SimulatedApp] {
        let limit = max(1, world.configuration.setupConcurrency)
        return try await withThrowingTaskGroup(of: (Int, SimulatedApp).self) { group in
            var next = 0
            var apps = [SimulatedApp?](repeating: nil, count: profiles.count)
            func add() {
                guard next < profiles.count else { return }
                let index = next
                let profile = profiles[index]
                group.addTask {
                    (
                        index,
                        try await world.makeApp(
                            name: profile.name, build: profile.build, enrollments: profile.enrollments)
                    )
                }
                next += 1
            }
            for _ in 0..<min(limit, profiles.count) { add() }
            while let (index, app) = try await group.next() {
                apps[index] = app
                add()
            }
            return apps.compactMap { $0 }
        }
    }

    static func makeReport(
        world: SimulationWorld, apps: [SimulatedApp], changes: [DienstChangeResult], expected: Int
    ) async -> SimulationReport {
        var byToken: [String: [FanOutDeliverySummary]] = [:]
        for change in changes { for d in change.deliveries { byToken[d.token, default: []].append(d) } }
        var devices: [DeviceReport] = []
        var latencies: [TimeInterval] = []
        for app in apps {
            let token = await app.deviceToken ?? ""
            let handled = await app.handled
            let sent = byToken[token] ?? []
            let refreshes = handled.compactMap(\.refresh)
            let appLatencies = refreshes.compactMap(\.latency)
            latencies += appLatencies
            devices.append(
                DeviceReport(
                    name: app.name, scheme: app.build.scheme, buildEnvironment: app.build.buildEnvironment,
                    tokenEnvironment: await app.tokenEnvironment ?? app.build.tokenEnvironment,
                    tokenPrefix: Redaction.prefix(token), enrollments: await app.enrollments.map(\.label),
                    pushesSent: sent.count, pushesAccepted: sent.filter(\.isAccepted).count,
                    pushProblems: sent.filter { !$0.isAccepted }.map(describe),
                    refreshed: refreshes.filter(\.isComplete).count, latencies: appLatencies,
                    upcoming: await app.upcoming,
                    log: await app.log))
        }
        return SimulationReport(
            sandboxPort: world.mock.sandboxEndpoint.port, productionPort: world.mock.productionEndpoint.port,
            backendURL: world.backend.baseURL, devices: devices, changes: changes, expectedHandled: expected,
            handled: world.collector.count, latency: LatencySummary(seconds: latencies), setupSeconds: 0,
            pushSeconds: 0, totalSeconds: 0)
    }

    /// `400 BadDeviceToken (sent to production)` or `failed: …`.
    package static func describe(_ d: FanOutDeliverySummary) -> String {
        switch d.result {
        case "rejected": "\(d.status ?? 0) \(d.reason ?? "?") (sent to \(d.environment))"
        case "failed": "failed: \(d.message ?? "?") (\(d.environment))"
        default: "accepted (\(d.environment))"
        }
    }
}
