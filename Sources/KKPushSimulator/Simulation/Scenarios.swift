import Foundation
import KKPushAuth
import KKPushBackend
package import KKPushCore
import KKPushMock
import KantineKoning

/// The failures from the app README's troubleshooting table that `kkpush simulate --scenario` reproduces, and the
/// device side's decisions after APNs accepts a push (``DeviceSideScenarios``).
package enum SimulationScenario: String, Sendable, CaseIterable {
    /// The server pinned to sandbox (`APNS_ENV=sandbox`) while production builds exist.
    case serverAPNsEnvOverride = "server-apns-env-override"
    /// The diensten refreshed with one tenant's JWT (`primaryAuthToken`).
    case primaryToken = "primary-token"
    /// A provider token older than an hour: `ExpiredProviderToken`, and the client recovers.
    case expiredProviderToken = "expired-provider-token"
    /// A device that uninstalled the app: 410, the token cleared, no more pushes.
    case unregisteredDevice = "unregistered-device"
    /// A logging build signed for development that reports `testing`.
    case wrongBuildScheme = "wrong-build-scheme"
    /// A phone switches from a TestFlight build to the App Store build (both signed for production).
    case vendorIDChange = "vendor-id-change"
    /// A Release Testing (Debug configuration) build distributed through TestFlight: signed for production,
    /// reports development.
    case testFlightDebugBuild = "testflight-debug-build"
    /// A Release-configuration build run from Xcode: signed for development, reports production.
    case xcodeReleaseBuild = "xcode-release-build"
    /// A dienst in progress as a Live Activity: push-to-start, one channel broadcast, the end; and three
    /// mistakes (no attributes-type, the channel through the other host, an update token in the other
    /// environment).
    case liveActivity = "live-activity"
    /// A dienst's Live Activity through the activity registry, from start to end, and two apps killed at the start:
    /// one reports its update token later, one never (stale).
    case liveActivityKilledApp = "live-activity-killed-app"
    /// A start retried under one activity key: one activity (and two without the registry).
    case liveActivityRetriedStart = "live-activity-retried-start"
    /// A push-to-start token rotated on the phone, the old one still in the registry: stale and suspect; a `nil`
    /// rotation that does not wipe it; the new token.
    case liveActivityStalePushToStart = "live-activity-stale-push-to-start"
    /// More starts than the push-to-start budget: the registry defers; sent anyway, the device drops them.
    case liveActivityStartBudget = "live-activity-start-budget"
    /// After the 200: four background pushes in a row to an app in the background; the fourth waits for the budget.
    case silentPushThrottled = "silent-push-throttled"
    /// After the 200: an alert to an app in the background runs no code; the refresh waits until it is opened.
    case alertRefreshOnOpen = "alert-refresh-on-open"
    /// After the 200: three pushes to an offline phone; APNs keeps only the last.
    case offlineCoalescing = "offline-coalescing"
    /// After the 200: `apns-expiration: 0` to an offline phone is discarded, never delivered.
    case expirationZeroOffline = "expiration-zero-offline"
    /// After the 200: two alerts with one `apns-collapse-id`; the second replaces the first on the device.
    case collapseIDUpdate = "collapse-id-update"
    /// After the 200: a background push to a force-quit app is not run.
    case forceQuitApp = "force-quit-app"

    /// One line on what it shows.
    package var title: String {
        switch self {
        case .serverAPNsEnvOverride: "APNS_ENV=sandbox on the server while production builds exist"
        case .primaryToken: "diensten refreshed with one tenant's JWT (primaryAuthToken)"
        case .expiredProviderToken: "the provider token outlives its hour"
        case .unregisteredDevice: "APNs answers 410 Unregistered for a device"
        case .wrongBuildScheme: "a Release-with-logging build reports build_environment \"testing\""
        case .vendorIDChange: "TestFlight → App Store: a new identifierForVendor, the old enrollments until the sync"
        case .testFlightDebugBuild:
            "a Release Testing (Debug) build on TestFlight: signed for production, reports \"development\""
        case .xcodeReleaseBuild: "a Release build run from Xcode: signed for development, reports \"production\""
        case .liveActivity:
            "a dienst in progress as a Live Activity: push-to-start, a channel broadcast, the end, and three mistakes"
        case .liveActivityKilledApp:
            "a Live Activity through the registry: a killed app's update token comes late or never (stale)"
        case .liveActivityRetriedStart: "a Live Activity start retried under one key: one activity, never two"
        case .liveActivityStalePushToStart:
            "a rotated push-to-start token: 200 and never delivered, stale and suspect; a nil rotation keeps the token"
        case .liveActivityStartBudget: "more Live Activity starts than the device's budget: deferred, not dropped"
        case .silentPushThrottled: "four silent pushes in an hour to an app in the background: the fourth is throttled"
        case .alertRefreshOnOpen: "an alert to an app in the background refreshes the diensten only when opened"
        case .offlineCoalescing: "three pushes to an offline phone: only the last arrives"
        case .expirationZeroOffline: "apns-expiration 0 to an offline phone: discarded, never delivered"
        case .collapseIDUpdate: "one apns-collapse-id for every dienst update: the newer alert replaces the older"
        case .forceQuitApp: "a force-quit app: the background push does not run it"
        }
    }
}

/// What a scenario showed.
package struct ScenarioOutcome: Sendable {
    /// The scenario.
    package var scenario: SimulationScenario
    /// True if the failure happened as the README describes it (and, where it applies, the recovery too).
    package var reproduced: Bool
    /// The failure expected.
    package var expected: String
    /// What happened.
    package var observed: String
    /// Why it fails.
    package var why: String
    /// How to fix it.
    package var fix: String
    /// The steps, for people.
    package var details: [String]
    /// Figures for scripts (`--json`'s `facts`), where the scenario has them.
    package var facts: [String: JSONValue] = [:]
}

/// Runs the scenarios, each in a world of its own.
package enum Scenarios {
    /// Runs `scenario` and reports whether its failure reproduced.
    package static func run(
        _ scenario: SimulationScenario, configuration: SimulationConfiguration = SimulationConfiguration()
    ) async throws -> ScenarioOutcome {
        switch scenario {
        case .serverAPNsEnvOverride: try await serverAPNsEnvOverride(configuration)
        case .primaryToken: try await primaryToken(configuration)
        case .expiredProviderToken: try await expiredProviderToken(configuration)
        case .unregisteredDevice: try await unregisteredDevice(configuration)
        case .wrongBuildScheme: try await wrongBuildScheme(configuration)
        case .vendorIDChange: try await vendorIDChange(configuration)
        case .testFlightDebugBuild:
            try await signingMismatch(
                .testFlightDebugBuild, AppBuild(scheme: .releaseTesting, distribution: .testFlight), configuration)
        case .xcodeReleaseBuild:
            try await signingMismatch(
                .xcodeReleaseBuild, AppBuild(scheme: .release, distribution: .xcode), configuration)
        case .liveActivity: try await LiveActivityScenario.run(configuration)
        case .liveActivityKilledApp, .liveActivityRetriedStart, .liveActivityStalePushToStart,
            .liveActivityStartBudget:
            try await LiveActivityRegistryScenarios.run(scenario, configuration)
        case .silentPushThrottled: try await DeviceSideScenarios.silentPushThrottled(configuration)
        case .alertRefreshOnOpen: try await DeviceSideScenarios.alertRefreshOnOpen(configuration)
        case .offlineCoalescing: try await DeviceSideScenarios.offlineCoalescing(configuration)
        case .expirationZeroOffline: try await DeviceSideScenarios.expirationZeroOffline(configuration)
        case .collapseIDUpdate: try await DeviceSideScenarios.collapseIDUpdate(configuration)
        case .forceQuitApp: try await DeviceSideScenarios.forceQuitApp(configuration)
        }
    }

    static func delivery(_ change: DienstChangeResult, to app: SimulatedApp) async -> FanOutDeliverySummary? {
        let token = await app.deviceToken
        return change.deliveries.first { $0.token == token }
    }

    static func serverAPNsEnvOverride(_ base: SimulationConfiguration) async throws -> ScenarioOutcome {
        var configuration = base
        configuration.serverSettings = ServerAPNsSettings(legacyAPNSEnv: "sandbox")
        return try await withSimulationWorld(configuration: configuration) { world in
            let dev = try await world.makeApp(
                name: "Test iPhone", build: AppBuild(scheme: .releaseTesting),
                enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .manager)])
            let prod = try await world.makeApp(
                name: "Sanne's iPhone", build: AppBuild(scheme: .release), enrollments: EnrollmentSpec.readmePhone)
            let change = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3")
            let devResult = await delivery(change, to: dev)
            let prodResult = await delivery(change, to: prod)
            _ = await world.collector.wait(forAtLeast: change.accepted, timeout: configuration.timeout)
            let reproduced =
                devResult?.isAccepted == true && prodResult?.result == "rejected"
                && prodResult?.reason == APNsReason.badDeviceToken.rawValue && prodResult?.environment == .sandbox
            return ScenarioOutcome(
                scenario: .serverAPNsEnvOverride, reproduced: reproduced,
                expected:
                    "the Release (production) build's push is sent to sandbox and rejected 400 BadDeviceToken; the Release Testing build's push is accepted",
                observed:
                    "Release Testing: \(devResult.map(Simulation.describe) ?? "no push"); Release: \(prodResult.map(Simulation.describe) ?? "no push")",
                why:
                    "APNS_ENV=sandbox pins every push to the sandbox, but a Release build's token belongs to production; APNs sandbox does not know it (to the app it looks like an APNs timeout).",
                fix:
                    "Remove the override and let auto-detection decide: \(OverrideRemedy.unset(ServerAPNsSettings.legacyVariable))",
                details: [
                    "server: APNS_ENV=sandbox",
                    "dienst changed: \(change.dienst.id) (\(change.tenant) \(change.team)), \(change.deliveries.count) push(es)",
                ])
        }
    }

    static func primaryToken(_ configuration: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: configuration) { world in
            let app = try await world.makeApp(
                name: "Sanne's iPhone", build: AppBuild(scheme: .release), enrollments: EnrollmentSpec.readmePhone,
                handlers: [PrimaryTokenRefreshHandler()])
            let change = try await world.changeNextDienst(tenant: "agovv", team: "JO10-5")
            let arrived = await world.collector.wait(forAtLeast: change.accepted, timeout: configuration.timeout)
            let wrong = await app.handled.last?.refresh
            let wrongIDs = Set(await app.upcoming.map(\.id))
            let right = await app.refreshDiensten()
            let rightList = await app.upcoming
            let missing = rightList.filter { !wrongIDs.contains($0.id) }
            let missingTenants = Set(missing.map(\.tenantSlug)).sorted()
            let missingTeams = Set(missing.map { "\($0.tenantSlug) \($0.teamCode)" }).sorted()
            let refused = wrong?.requests.filter { !$0.succeeded } ?? []
            let reproduced =
                arrived && wrong != nil && !missing.isEmpty && missingTenants.contains("agovv")
                && right.isComplete && missing.contains { $0.teamCode == "JO13-1" }
            return ScenarioOutcome(
                scenario: .primaryToken, reproduced: reproduced,
                expected:
                    "refreshing every tenant with the first enrollment's JWT loses the other enrollments' diensten (AGOVV JO10-5, VV Wilhelmus JO13-1)",
                observed: "primaryAuthToken refresh: \(wrong?.dienstenCount ?? 0) diensten"
                    + (refused.isEmpty
                        ? ""
                        : ", refused: "
                            + refused.map { "\($0.tenant) \($0.status) \($0.errorCode ?? "")" }.joined(separator: ", "))
                    + "; per-enrollment refresh: \(right.dienstenCount) diensten; \(missing.count) diensten missing (\(missingTeams.joined(separator: ", ")))",
                why:
                    "Each JWT names one enrollment: the backend refuses it for another tenant (403 jwt-wrong-tenant) and filters its own tenant to that enrollment's team codes, so the member enrollment's JO13-1 is missing too.",
                fix:
                    "Refresh once per enrollment with that enrollment's signedDeviceToken (model.tenants[...].signedDeviceToken), never primaryAuthToken; merge and dedup client-side.",
                details: [
                    "phone: \(await app.enrollments.map(\.label).joined(separator: "; "))",
                    "dienst changed: \(change.dienst.id) → push \(change.accepted == 1 ? "accepted" : "not accepted")",
                ]
                    + (wrong?.requests ?? []).map {
                        "primary-token request: tenant \($0.tenant) with JWT of \($0.deviceID) (\($0.bearerPrefix)) → HTTP \($0.status)\($0.errorCode.map { " " + $0 } ?? "") \($0.count) diensten"
                    }
                    + right.requests.map {
                        "per-enrollment request: tenant \($0.tenant) with JWT of \($0.deviceID) (\($0.bearerPrefix)) → HTTP \($0.status) \($0.count) diensten"
                    })
        }
    }

    static func expiredProviderToken(_ base: SimulationConfiguration) async throws -> ScenarioOutcome {
        var configuration = base
        // A cache that reuses its token for the full hour, on a provider clock that runs behind APNs'.
        configuration.providerTokenReuse = 60 * 60
        return try await withSimulationWorld(configuration: configuration) { world in
            let app = try await world.makeApp(
                name: "Test iPhone", build: AppBuild(scheme: .releaseTesting),
                enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .manager)])
            let first = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3")
            let generationsBefore = world.tokenCache.generations
            // 62 minutes pass at APNs; the provider's clock, 4 minutes behind, sees 58: it keeps its token.
            world.mock.advanceClock(by: 62 * 60)
            world.providerClock.advance(by: 58 * 60)
            let second = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3", volunteer: "Ahmed")
            let arrived = await world.collector.wait(
                forAtLeast: first.accepted + second.accepted, timeout: configuration.timeout)
            let forced = world.tokenCache.forcedRefreshes
            let secondResult = await delivery(second, to: app)
            let refreshed = await app.handled.compactMap(\.refresh).filter(\.isComplete).count
            let reproduced =
                first.accepted == 1 && forced >= 1 && secondResult?.isAccepted == true && arrived
                && refreshed >= 2
            return ScenarioOutcome(
                scenario: .expiredProviderToken, reproduced: reproduced,
                expected:
                    "after the mock's clock passes an hour, APNs answers 403 ExpiredProviderToken to the old token; the client mints a new one and the push is accepted",
                observed:
                    "first push: \(first.deliveries.first.map(Simulation.describe) ?? "none"); after 62 min: forced token refreshes \(forced), tokens minted \(generationsBefore) → \(world.tokenCache.generations), push \(secondResult.map(Simulation.describe) ?? "none"); app refreshed \(refreshed) time(s)",
                why:
                    "APNs rejects provider tokens whose iat is more than an hour old. A cache that reuses its token for the full 60 minutes, on a clock behind APNs', sends one that is too old.",
                fix:
                    "Reuse a provider token for 20-50 minutes (the client's default is 50), keep the clock in sync (NTP), and on ExpiredProviderToken mint a new token once and retry, as the push client does.",
                details: [
                    "provider token reuse: 60 min; mock clock +62 min, provider clock +58 min",
                    "dienst changes: \(first.dienst.id), then \(second.dienst.id) after the hour",
                ])
        }
    }

    static func unregisteredDevice(_ configuration: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: configuration) { world in
            let gone = try await world.makeApp(
                name: "Oude iPhone", build: AppBuild(scheme: .release),
                enrollments: [
                    EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .member),
                    EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3", "JO11-5"], role: .manager),
                ])
            let kept = try await world.makeApp(
                name: "Ouder JO11-3", build: AppBuild(scheme: .release),
                enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .member)])
            let goneToken = await gone.deviceToken ?? ""
            try world.mock.unregister(token: goneToken)
            let first = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3")
            let firstGone = await delivery(first, to: gone)
            let stored = try await world.api.allEnrollments().filter {
                $0.hardwareIdentifier == gone.hardwareIdentifier.uuidString
            }
            let cleared = stored.filter { $0.apnsToken == nil }.count
            let second = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3", volunteer: "Ahmed")
            let secondGone = await delivery(second, to: gone)
            let secondKept = await delivery(second, to: kept)
            _ = await world.collector.wait(forAtLeast: first.accepted + second.accepted, timeout: configuration.timeout)
            let goneReceived = await gone.handled.count
            let reproduced =
                firstGone?.status == 410 && firstGone?.clearedEnrollments == stored.count && cleared == stored.count
                && !stored.isEmpty && secondGone == nil && secondKept?.isAccepted == true && goneReceived == 0
            return ScenarioOutcome(
                scenario: .unregisteredDevice, reproduced: reproduced,
                expected:
                    "410 Unregistered for the old phone's token; the backend clears it from every enrollment holding it; the next dienst change sends no push to it",
                observed:
                    "first change: \(firstGone.map(Simulation.describe) ?? "no push"), cleared from \(cleared) of \(stored.count) enrollment(s); second change: \(secondGone == nil ? "no push to the old token" : "pushed again: " + Simulation.describe(secondGone!)), other phone \(secondKept.map(Simulation.describe) ?? "no push")",
                why:
                    "APNs answers 410 when the app was uninstalled or the token is no longer valid for the topic; pushing it again wastes requests and APNs may treat it as abuse.",
                fix:
                    "On 410, clear apns_token for every enrollment holding it (the backend's fan-out does) and wait for the app's next token update.",
                details: [
                    "old phone: 2 enrollments sharing one token \(Redaction.prefix(goneToken)); mock marked it unregistered",
                    "dienst changes: \(first.dienst.id), then \(second.dienst.id)",
                ])
        }
    }

    static func wrongBuildScheme(_ configuration: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: configuration) { world in
            let logging = AppBuild(scheme: .releaseWithLogging, loggingVariant: .testing)
            let wrong = try await world.makeApp(
                name: "Logging build", build: logging,
                enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .manager)])
            let right = try await world.makeApp(
                name: "Release Testing build", build: AppBuild(scheme: .releaseTesting),
                enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .member)])
            let change = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3")
            let wrongResult = await delivery(change, to: wrong)
            let rightResult = await delivery(change, to: right)
            _ = await world.collector.wait(forAtLeast: change.accepted, timeout: configuration.timeout)
            let problem = logging.problems().first
            let reproduced =
                wrongResult?.result == "rejected" && wrongResult?.reason == APNsReason.badDeviceToken.rawValue
                && wrongResult?.environment == .production && rightResult?.isAccepted == true
            let logLines = await wrong.log.filter {
                $0.contains("Build Environment") || $0.contains("Detected APNS") || $0.contains("Final Environment")
            }
            return ScenarioOutcome(
                scenario: .wrongBuildScheme, reproduced: reproduced,
                expected:
                    "the logging build (sandbox token) reports \"testing\", the server resolves production, APNs answers 400 BadDeviceToken",
                observed:
                    "logging build: \(wrongResult.map(Simulation.describe) ?? "no push"); Release Testing build: \(rightResult.map(Simulation.describe) ?? "no push")",
                why: problem?.message
                    ?? "build_environment \"testing\" is not development or debug, so the server falls through to production.",
                fix: problem?.fix
                    ?? "Make getBuildEnvironment() return \"development\" for builds signed with the development entitlement.",
                details: ["logging build's token update:"] + logLines.map { "  " + $0.trimmingWhitespace() })
        }
    }

    /// The facts of one fan-out push, for `--json`.
    static func deliveryFact(_ d: FanOutDeliverySummary, handledBy: String?) -> JSONValue {
        var o: [String: JSONValue] = [
            "token_prefix": .string(Redaction.prefix(d.token)), "environment": .string(d.environment.rawValue),
            "device_ids": .array(d.deviceIDs.map(JSONValue.string)), "result": .string(d.result),
            "apns_status": d.isAccepted ? .int(200) : d.status.map(JSONValue.int) ?? .null,
            "handled_by": handledBy.map(JSONValue.string) ?? .null,
        ]
        if let reason = d.reason { o["reason"] = .string(reason) }
        return .object(o)
    }

    static func vendorIDChange(_ configuration: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: configuration) { world in
            try await vendorIDChange(in: world, configuration: configuration)
        }
    }

    /// The scenario's body, a function of its own: as one closure it took the type checker 1.3 s.
    private static func vendorIDChange(
        in world: SimulationWorld, configuration: SimulationConfiguration
    ) async throws -> ScenarioOutcome {
        let specs = [
            EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .manager),
            EnrollmentSpec(tenant: "agovv", teams: ["JO10-5"], role: .member),
        ]
        // The TestFlight build: App Store Connect profile, aps-environment production, a production token (Apple sets
        // the entitlement from the profile); the Release scheme, so it reports production too.
        let testFlight = try await world.makeApp(
            name: "Sanne's iPhone (TestFlight)", build: AppBuild(scheme: .release, distribution: .testFlight),
            enrollments: specs)
        let oldToken = await testFlight.deviceToken ?? ""
        let oldJWT = await testFlight.enrollments.first?.signedDeviceToken ?? ""
        // The App Store build replaces it: the app's data stays, identifierForVendor and the token change;
        // the app enrolls again (the same tenants and teams) and sends its token updates.
        await testFlight.stop()
        let appStore = try await world.makeApp(
            name: "Sanne's iPhone (App Store)", build: AppBuild(scheme: .release), enrollments: specs,
            carryingOver: testFlight)
        let newToken = await appStore.deviceToken ?? ""
        let stored = try await world.api.allEnrollments()
        let oldIDs = stored.filter { $0.hardwareIdentifier == testFlight.hardwareIdentifier.uuidString }
        let newIDs = stored.filter { $0.hardwareIdentifier == appStore.hardwareIdentifier.uuidString }

        // Before the sync: the fan-out still pushes the TestFlight enrollments' token.
        let before = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3")
        _ = await world.collector.wait(forAtLeast: 1, timeout: configuration.timeout)
        let beforeOld = before.deliveries.first { $0.token == oldToken }
        let beforeNew = before.deliveries.first { $0.token == newToken }
        let oldHandled = await testFlight.handled.count

        // Foreground: tenant info refresh, then the sync (with the superseded JWTs the app kept).
        let sync = await appStore.foreground()
        let oldRefused = try await world.api.diensten(tenant: "vvwilhelmus", bearer: oldJWT)
        let again = await appStore.foreground()
        let backendAgain = try await world.api.syncEnrollments(
            await appStore.enrollments.map {
                SyncEntry(
                    tenantSlug: $0.tenantSlug, role: $0.role, teamCodes: $0.teamCodes,
                    hardwareIdentifier: appStore.hardwareIdentifier.uuidString)
            }, supersededTokens: [], bearer: await appStore.enrollments.first?.signedDeviceToken ?? "")

        // After the sync: one push per live device.
        let after = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3", volunteer: "Ahmed")
        let arrived = await world.collector.wait(forAtLeast: 2, timeout: configuration.timeout)
        let newHandled = await appStore.handled.count
        let afterTokens = after.deliveries.map(\.token)

        // One condition per line: as a single && chain this took the type checker over a second.
        let conditions: [Bool] = [
            beforeOld?.environment == .production, beforeOld != nil, beforeNew?.isAccepted == true,
            beforeNew?.environment == .production, oldHandled == 0, sync.synced,
            sync.enrollmentsRevoked == oldIDs.count, oldIDs.count == specs.count,
            Set(sync.revoked.map(\.deviceID)) == Set(oldIDs.map(\.deviceID)), oldRefused.status == 403,
            afterTokens == [newToken], after.accepted == 1, arrived, newHandled == 2, backendAgain.status == 429,
        ]
        let reproduced = conditions.allSatisfy { $0 }
        func handler(_ d: FanOutDeliverySummary) -> String? {
            d.token == newToken && d.isAccepted ? appStore.name : nil
        }
        let oldAnswer =
            beforeOld.map { d in
                d.isAccepted
                    ? "APNs production answered 200 (accepted), yet no app received it: the TestFlight build is gone from the phone"
                    : "APNs answered \(Simulation.describe(d))"
            } ?? "no push"
        var facts: [String: JSONValue] = [
            "old_hardware_identifier": .string(testFlight.hardwareIdentifier.uuidString),
            "new_hardware_identifier": .string(appStore.hardwareIdentifier.uuidString),
            "old_token_prefix": .string(Redaction.prefix(oldToken)), "old_token_environment": .string("production"),
            "new_token_prefix": .string(Redaction.prefix(newToken)),
            "new_token_environment": .string("production"),
            "old_enrollments": .array(oldIDs.map { .string($0.id.description) }),
            "new_enrollments": .array(newIDs.map { .string($0.id.description) }),
            "before_sync": .object([
                "dienst_id": .string(before.dienst.id), "pushes": .int(before.deliveries.count),
                "deliveries": .array(before.deliveries.map { deliveryFact($0, handledBy: handler($0)) }),
                "old_app_handled": .int(oldHandled),
            ]),
            "sync": .object([
                "status": .int(sync.status), "synced": .bool(sync.synced),
                "enrollments_revoked": .int(sync.enrollmentsRevoked), "teams_removed": .int(sync.teamsRemoved),
                "revoked": .array(sync.revoked.map { .string($0.description) }),
            ]),
            "old_jwt_after_sync": .object([
                "status": .int(oldRefused.status),
                "error": oldRefused.error.map { .string($0.code.rawValue) } ?? .null,
            ]),
            "foreground_again": .string(again.abortedBecause ?? "synced again"),
            "backend_sync_again_status": .int(backendAgain.status),
            "after_sync": .object([
                "dienst_id": .string(after.dienst.id), "pushes": .int(after.deliveries.count),
                "deliveries": .array(after.deliveries.map { deliveryFact($0, handledBy: handler($0)) }),
            ]),
        ]
        facts["new_app_handled"] = .int(newHandled)
        let syncLines = await appStore.log.filter {
            $0.hasPrefix("💾") || $0.hasPrefix("🏟️") || $0.contains("Enrollment sync") || $0.hasPrefix("⏭️")
        }
        return ScenarioOutcome(
            scenario: .vendorIDChange, reproduced: reproduced,
            expected:
                "before the App Store build's sync, the fan-out pushes both the old TestFlight enrollments' token (no app receives it) and the new one; the sync revokes the \(specs.count) old enrollments (their JWTs are refused from then on); after it, one push per live device",
            observed:
                "before sync: \(before.deliveries.count) push(es): old token \(Redaction.prefix(oldToken)) \(beforeOld.map(Simulation.describe) ?? "no push"), received by \(oldHandled) app(s); new token \(beforeNew.map(Simulation.describe) ?? "no push"). Sync: HTTP \(sync.status), \(sync.enrollmentsRevoked) enrollment(s) revoked, \(sync.teamsRemoved) team(s) removed; old JWT now HTTP \(oldRefused.status) \(oldRefused.error?.code.rawValue ?? ""). After sync: \(after.deliveries.count) push(es) (\(after.deliveries.map { Redaction.prefix($0.token) + " " + Simulation.describe($0) }.joined(separator: ", "))); a second sync within the hour: app skipped it, backend HTTP \(backendAgain.status)",
            why:
                "The app's team reports that a TestFlight ↔ App Store switch changes identifierForVendor (Apple documents only that an App Store install's vendor id comes from App Store data and a development or enterprise install's from the bundle id; TestFlight is not named). The APNs environment does not change: both are App Store Connect distribution, signed for production. The backend sees a new phone, and the TestFlight enrollments keep their token and active status. \(oldAnswer); APNs answers 410 only once it learns the app is gone, and until then every dienst change costs a push that reaches nobody.",
            fix:
                "Let the app reconcile on foreground after its tenant info refresh (POST /api/mobile/v1/enrollments/sync, at most once an hour), sending the JWTs it kept from the TestFlight build as superseded_device_tokens; or revoke the old enrollments by hand: a diagnosis by the user's e-mail address (email) shows them (diagnoseCommand). Stick to one distribution method per test session.",
            details: [
                "TestFlight build: identifierForVendor \(testFlight.hardwareIdentifier.uuidString), production token \(Redaction.prefix(oldToken)), enrollments \(oldIDs.map { $0.id.description }.joined(separator: ", "))",
                "App Store build: identifierForVendor \(appStore.hardwareIdentifier.uuidString), production token \(Redaction.prefix(newToken)), enrolled again: \(newIDs.map { $0.id.description }.joined(separator: ", "))",
                "dienst changed before the sync: \(before.dienst.id) → "
                    + before.deliveries.map { "\(Redaction.prefix($0.token)) \(Simulation.describe($0))" }.joined(
                        separator: "; "),
            ] + syncLines.map { "app: " + $0 } + [
                "dienst changed after the sync: \(after.dienst.id) → "
                    + after.deliveries.map { "\(Redaction.prefix($0.token)) \(Simulation.describe($0))" }.joined(
                        separator: "; ")
            ],
            facts: facts)
    }

    /// One mismatch cell of the configuration × distribution table: today's app reports its configuration and its
    /// pushes go to the wrong environment (BadDeviceToken); the fixed app, the same build that also sends
    /// `aps_environment` from its embedded profile, is routed right.
    static func signingMismatch(
        _ scenario: SimulationScenario, _ build: AppBuild, _ configuration: SimulationConfiguration
    ) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: configuration) { world in
            var fixedBuild = build
            fixedBuild.sendsAPSEnvironment = true
            let today = try await world.makeApp(
                name: "\(build.label) (today's app)", build: build,
                enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .manager)])
            let fixed = try await world.makeApp(
                name: "\(build.label) (fixed app)", build: fixedBuild,
                enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .member)])
            let change = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3")
            let todayResult = await delivery(change, to: today)
            let fixedResult = await delivery(change, to: fixed)
            _ = await world.collector.wait(forAtLeast: change.accepted, timeout: configuration.timeout)
            let fixedHandled = await fixed.handled.count
            let todayHandled = await today.handled.count
            let token = build.tokenEnvironment
            let wrong = token == .sandbox ? APNsEnvironment.production : .sandbox
            let reproduced =
                todayResult?.result == "rejected" && todayResult?.reason == APNsReason.badDeviceToken.rawValue
                && todayResult?.environment == wrong && fixedResult?.isAccepted == true
                && fixedResult?.environment == token && fixedHandled == 1 && todayHandled == 0
            let problem = build.problems().first
            let logLines = await fixed.log.filter {
                $0.contains("Build Environment") || $0.contains("APS Environment") || $0.contains("Final Environment")
            }
            let facts: [String: JSONValue] = [
                "scheme": .string(build.scheme.rawValue),
                "build_configuration": .string(build.scheme.buildConfiguration),
                "distribution": .string(build.distribution.rawValue),
                "aps_environment": .string(token.entitlementValue), "token_environment": .string(token.rawValue),
                "build_environment": .string(build.buildEnvironment),
                "today": todayResult.map { deliveryFact($0, handledBy: todayHandled > 0 ? today.name : nil) } ?? .null,
                "fixed": fixedResult.map { deliveryFact($0, handledBy: fixedHandled > 0 ? fixed.name : nil) } ?? .null,
            ]
            return ScenarioOutcome(
                scenario: scenario, reproduced: reproduced,
                expected:
                    "today's app reports build_environment \"\(build.buildEnvironment)\", the server pushes to \(wrong), APNs answers 400 BadDeviceToken; the fixed app sends aps_environment \"\(token.entitlementValue)\" and its push is accepted in \(token) and handled",
                observed:
                    "today's app: \(todayResult.map(Simulation.describe) ?? "no push"), handled by \(todayHandled) app(s); fixed app: \(fixedResult.map(Simulation.describe) ?? "no push"), handled by \(fixedHandled) app(s)",
                why: problem?.message
                    ?? "The build's configuration decides what it reports; its distribution decides its tokens.",
                fix: problem?.fix ?? "Send aps_environment from the embedded profile.",
                details: [
                    "\(build.scheme.rawValue) = \(build.scheme.buildConfiguration) configuration → build_environment \"\(build.buildEnvironment)\"",
                    "\(build.distribution.title) → \(build.distribution.profileKind) profile → aps-environment \(token.entitlementValue) → \(token) token",
                    "fixed app's token update:",
                ] + logLines.map { "  " + $0.trimmingWhitespace() },
                facts: facts)
        }
    }
}
