import Foundation
import KKPushActivities
import KKPushClient
import KKPushCore
import KKPushMock
import KantineKoning

/// The dienst's Live Activity from start to end through kkpush's activity registry (`KKPushActivities`, an SQLite
/// registry in a temporary folder): the server's side (the scenario, as the club's backend would) plans every push
/// with the registry (`planStart`, `planUpdate`, `planEnd`), sends it with the APNs client and records APNs' answer
/// (`recordAnswer`); the phone starts the activity
/// from its push-to-start token, and the app posts its push-to-start token and, when it runs, the activity's update
/// token to the simulated backend on its token update (`live_activity`, `POST /api/mobile/v1/device/apns-token` with
/// its enrollment's JWT), which records them in the same registry. The registry's device is the enrollment
/// (`<tenant>/<device_id>`), as the backend names it. The backend and the registry share one clock that the scenario
/// moves (one second per step, so each push's `timestamp` is newer than the last; the stale timeout at once). Each
/// scenario prints the registry's state per activity after each step and checks itself.
enum LiveActivityRegistryScenarios {
    static let attributesType = LiveActivityScenario.attributesType
    /// The app's type with `let kk_activity_key: String?` added: optional, so a start without it (sent without the
    /// registry) still decodes, as the guide advises.
    static let description = ActivityAttributesDescription(
        name: attributesType,
        attributes: LiveActivityScenario.description.attributes + [.init("kk_activity_key", .optional(.string))],
        contentState: LiveActivityScenario.description.contentState)

    static func run(_ scenario: SimulationScenario, _ configuration: SimulationConfiguration) async throws
        -> ScenarioOutcome
    {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "kkpush-simulate-activities-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let registry = try await SQLiteActivityRegistry.open(
            path: folder.appendingPathComponent("activities.sqlite").path)
        let clock = OffsetWallClock()
        do {
            let outcome = try await withSimulationWorld(
                configuration: configuration, activities: registry, backendClock: clock
            ) { world in
                let run = RegistryRun(world: world, registry: registry, clock: clock)
                do {
                    let outcome: ScenarioOutcome
                    switch scenario {
                    case .liveActivityKilledApp: outcome = try await run.killedApp()
                    case .liveActivityRetriedStart: outcome = try await run.retriedStart()
                    case .liveActivityStalePushToStart: outcome = try await run.stalePushToStart()
                    default: outcome = try await run.startBudget()
                    }
                    await run.stop()
                    return outcome
                } catch {
                    await run.stop()
                    throw error
                }
            }
            await registry.close()
            return outcome
        } catch {
            await registry.close()
            throw error
        }
    }

    /// One scenario's state while it runs.
    final class RegistryRun: @unchecked Sendable {
        let world: SimulationWorld
        let registry: any ActivityRegistry
        let bundleID: String
        let timeout: Duration
        /// The backend's and the registry's clock: moved by the scenario (a stale timeout passes without waiting).
        let clock: OffsetWallClock
        var details: [String] = []
        var checks: [(String, Bool)] = []
        var phones: [LiveActivityPhone] = []
        /// Each phone's app, enrolled with the backend (its JWT posts the token updates).
        var apps: [String: SimulatedApp] = [:]
        /// Each phone's device in the registry: its enrollment, `<tenant>/<device_id>`.
        var devices: [String: String] = [:]

        init(world: SimulationWorld, registry: any ActivityRegistry, clock: OffsetWallClock) {
            self.world = world
            self.registry = registry
            self.clock = clock
            self.bundleID = world.configuration.bundleID
            self.timeout = world.configuration.timeout
        }

        var now: Date { clock.now() }

        func stop() async { for p in phones { await p.stop() } }

        /// A phone with the app installed (a Release build, production) and enrolled with VV Wilhelmus JO11-3.
        func phone(_ name: String) async throws -> LiveActivityPhone {
            let p = LiveActivityPhone(
                name: name, environment: .production, bundleID: bundleID,
                attributesTypes: [LiveActivityRegistryScenarios.attributesType],
                descriptions: [LiveActivityRegistryScenarios.description], mock: world.mock)
            phones.append(p)
            let app = try await world.makeApp(
                name: name, build: AppBuild(scheme: .release),
                enrollments: [EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .member)])
            guard let enrollment = await app.enrollments.first else {
                throw KKPushError(
                    code: .simulateTokenUpdateFailed, message: "\(name): the app has no enrollment.",
                    fix: "Enroll the simulated app before its Live Activity reports.")
            }
            apps[name] = app
            devices[name] = "\(enrollment.tenantSlug)/\(enrollment.deviceID)"
            return p
        }

        /// The registry's device of a phone.
        func device(_ phone: LiveActivityPhone) -> String { devices[phone.name] ?? phone.name }

        /// The app's token update with `live` (`POST /api/mobile/v1/device/apns-token`, the enrollment's JWT): the
        /// backend records its Live Activity tokens in the registry.
        func post(_ live: LiveActivityTokens, from phone: LiveActivityPhone) async throws {
            guard let app = apps[phone.name], let enrollment = await app.enrollments.first,
                let token = await app.deviceToken
            else {
                throw KKPushError(
                    code: .simulateTokenUpdateFailed, message: "\(phone.name): the app is not enrolled.",
                    fix: "Make the phone with phone(_:) first.")
            }
            let update = TokenUpdate(
                token: token, buildEnvironment: app.build.buildEnvironment, appVersion: app.appVersion,
                hardwareIdentifier: app.hardwareIdentifier.uuidString, bundleID: bundleID, platform: "ios",
                isNewToken: false, apsEnvironment: app.build.apsEnvironment, liveActivity: live)
            let answer = try await world.api.updateToken(update, bearer: enrollment.signedDeviceToken)
            guard answer.status == 200 else {
                throw KKPushError(
                    code: .simulateTokenUpdateFailed,
                    message:
                        "\(phone.name): the token update with live_activity got HTTP \(answer.status) \(answer.error?.code.rawValue ?? "") \(answer.error?.message ?? "")",
                    fix: answer.error?.fix ?? "See the backend's answer.")
            }
        }

        func expect(_ what: String, _ ok: Bool) {
            checks.append((what, ok))
            details.append("\(ok ? "✓" : "✗") \(what)")
        }

        func tick(_ seconds: TimeInterval = 1) { clock.advance(by: seconds) }

        static func short(_ token: String?) -> String { token.map { "\($0.prefix(8))…" } ?? "none" }

        static func volunteers(_ names: [String], status: String = "bezig") -> JSONValue {
            LiveActivityScenario.Run.dienstState(names, status: status)
        }

        static let attributes = LiveActivityScenario.Run.attributes

        /// The app posts its push-to-start token (`push_to_start_tokens` of its token update; nil: a rotation iOS
        /// reported without a token). Returns the registry's newest rotation for the phone.
        @discardableResult
        func reportPushToStart(_ phone: LiveActivityPhone, token: String?) async throws -> PushToStartRotation? {
            tick()
            try await post(
                LiveActivityTokens(pushToStartTokens: [
                    .init(attributesType: LiveActivityRegistryScenarios.attributesType, token: token)
                ]), from: phone)
            return try await registry.pushToStartTokens(device: device(phone)).first?.history.last
        }

        /// The running app posts the update tokens it has read (`activity_tokens`; none while it is not running).
        @discardableResult
        func reportActivityTokens(_ phone: LiveActivityPhone) async throws -> Int {
            let items = await phone.takeTokenReports()
            guard !items.isEmpty else { return 0 }
            tick()
            try await post(
                LiveActivityTokens(
                    activityTokens: items.compactMap { item in
                        item.activityKey.map {
                            .init(
                                activityKey: $0, activityID: item.activityID, attributesType: item.attributesType,
                                token: item.token)
                        }
                    }), from: phone)
            details.append("    \(phone.name) posts \(items.count) update token(s) (activity_tokens)")
            return items.count
        }

        /// Sends a push the registry planned, records APNs' answer, and waits for `phone` to handle `handled` pushes.
        func send(_ push: ActivityPush, reaching: (LiveActivityPhone, Int)? = nil) async throws -> PushOutcome {
            let outcome = await world.client.send(push.request, environment: .production)
            tick()
            try await registry.recordAnswer(
                push.answer(status: outcome.httpStatus, reason: outcome.rejection?.reason.rawValue, at: now))
            // Wait for the phone only when the mock's device side delivered the push (it decides before APNs' 200
            // is answered): a push it discarded never reaches the phone.
            if outcome.isAccepted, let (phone, count) = reaching, let id = outcome.apnsID,
                world.mock.delivery(apnsID: id)?.state == .delivered
            {
                _ = await phone.waitForHandled(count, timeout: timeout)
            }
            return outcome
        }

        static func describe(_ o: PushOutcome) -> String { LiveActivityScenario.Run.describe(o) }

        func startRequest(_ key: String, on phone: LiveActivityPhone, volunteers: [String]) -> ActivityStartRequest {
            ActivityStartRequest(
                key: key, device: device(phone), topic: bundleID,
                attributesType: LiveActivityRegistryScenarios.attributesType, attributes: Self.attributes,
                contentState: Self.volunteers(volunteers), alert: .text("Je dienst in de kantine begint"))
        }

        /// Plans a start; sends it when the plan says so. Returns the plan and APNs' answer (nil: nothing sent).
        func start(_ key: String, on phone: LiveActivityPhone, volunteers: [String] = ["Sanne"]) async throws -> (
            ActivityStartPlan, PushOutcome?
        ) {
            tick()
            let plan = try await registry.planStart(startRequest(key, on: phone, volunteers: volunteers), at: now)
            switch plan {
            case .send(let push):
                let before = await phone.handled.count
                let outcome = try await send(push, reaching: (phone, before + 1))
                let token = push.tokenStatus == .suspect ? " (suspect token)" : ""
                details.append(
                    "planStart \(key) → send to push-to-start \(Self.short(push.token))\(token): \(Self.describe(outcome))"
                )
                return (plan, outcome)
            case .existing(let record):
                details.append("planStart \(key) → existing activity (\(record.state.rawValue)); nothing sent")
            case .deferred(let until, let reason):
                details.append("planStart \(key) → deferred until \(UTCTimestamp.format(until) ?? "?"): \(reason)")
            case .refused(let error):
                details.append("planStart \(key) → refused \(error.code.rawValue): \(error.message)")
            }
            return (plan, nil)
        }

        /// Plans an update (or, with `end`, an end) and sends it when the plan says so.
        func change(
            _ key: String, volunteers: [String], end: Bool = false, reaching: (LiveActivityPhone, Int)? = nil
        ) async throws -> (ActivityPushPlan, PushOutcome?) {
            tick()
            let state = Self.volunteers(volunteers, status: end ? "afgelopen" : "bezig")
            let plan =
                end
                ? try await registry.planEnd(
                    ActivityEndRequest(
                        key: key, contentState: state, dismissalDate: Int(now.timeIntervalSince1970) + 3600), at: now)
                : try await registry.planUpdate(ActivityUpdateRequest(key: key, contentState: state), at: now)
            let verb = end ? "planEnd" : "planUpdate"
            switch plan {
            case .send(let push):
                let outcome = try await send(push, reaching: reaching)
                details.append(
                    "\(verb) \(key) → send to update token \(Self.short(push.token)): \(Self.describe(outcome))")
                return (plan, outcome)
            case .refused(let error):
                details.append("\(verb) \(key) → refused \(error.code.rawValue): \(error.message)")
                return (plan, nil)
            }
        }

        /// The registry's activities, one line each, in the details; their states by key.
        @discardableResult
        func registryStates(_ label: String) async throws -> [String: ActivityState] {
            let all = try await registry.activities(.all)
            details.append("  registry \(label):")
            for a in all {
                details.append(
                    "    \(a.key): \(a.state.rawValue) (update token \(Self.short(a.updateToken)))\(a.note.map { ", \($0)" } ?? "")"
                )
            }
            return Dictionary(all.map { ($0.key, $0.state) }) { first, _ in first }
        }

        /// The mock's delivery states of the pushes to `token`.
        func deliveryStates(token: String) -> [DeliveryState] {
            world.mock.deliveries(token: token, limit: 10_000).map(\.state)
        }

        func facts(_ extra: [String: JSONValue] = [:]) async throws -> [String: JSONValue] {
            let all = try await registry.activities(.all)
            var facts = extra
            facts["activities"] = .array(
                all.map {
                    .object([
                        "key": .string($0.key), "device": .string($0.device), "state": .string($0.state.rawValue),
                        "has_update_token": .bool($0.updateToken != nil),
                    ])
                })
            facts["checks"] = .array(checks.map { .object(["check": .string($0.0), "ok": .bool($0.1)]) })
            return facts
        }

        // MARK: The scenarios

        /// A dienst from start to end on a phone whose app runs, and the same start on two phones whose app was
        /// killed: one reports its update token when it is next launched (stale, then active after all), one never
        /// does (stale, its push-to-start token suspect).
        func killedApp() async throws -> ScenarioOutcome {
            let sanne = try await phone("Sanne's iPhone")
            let daan = try await phone("Daan's iPhone")
            let fleur = try await phone("Fleur's iPhone")
            for p in [sanne, daan, fleur] { try await reportPushToStart(p, token: p.pushToStartToken) }
            await daan.killApp()
            await fleur.killApp()
            details.append("Daan's and Fleur's apps are killed (swiped away) before the dienst starts")

            // The start on each phone, from the registry.
            var started: [Bool] = []
            for (p, key) in [(sanne, "dienst-sanne-812"), (daan, "dienst-daan-812"), (fleur, "dienst-fleur-812")] {
                let (_, outcome) = try await start(key, on: p)
                let running = await p.activity
                started.append(outcome?.isAccepted == true && running != nil)
            }
            expect(
                "each start: 200 from APNs, and ActivityKit starts the activity even on a killed app",
                !started.contains(false))
            try await reportActivityTokens(sanne)
            try await reportActivityTokens(daan)
            try await reportActivityTokens(fleur)
            var states = try await registryStates("after the starts")
            expect(
                "Sanne's app reports its update token: active; the killed apps report nothing: requested",
                states["dienst-sanne-812"] == .active && states["dienst-daan-812"] == .requested
                    && states["dienst-fleur-812"] == .requested)

            // Volunteers sign up: updates go to Sanne's update token; Daan's has none yet.
            let (_, first) = try await change(
                "dienst-sanne-812", volunteers: ["Sanne", "Daan"], reaching: (sanne, 2))
            let (_, second) = try await change(
                "dienst-sanne-812", volunteers: ["Sanne", "Daan", "Joost"], reaching: (sanne, 3))
            let shown = await sanne.activity?.contentState
            expect(
                "updates as volunteers sign up reach Sanne's activity through its update token",
                first?.isAccepted == true && second?.isAccepted == true
                    && shown == Self.volunteers(["Sanne", "Daan", "Joost"]))
            let (noToken, _) = try await change("dienst-daan-812", volunteers: ["Sanne", "Daan"])
            var refusedNoToken = false
            if case .refused(let e) = noToken, e.code.rawValue == "activity-no-update-token" { refusedNoToken = true }
            expect(
                "an update for Daan's activity before its token came back: refused activity-no-update-token",
                refusedNoToken)

            // The stale timeout passes: both killed apps' activities are stale, their push-to-start tokens suspect.
            tick(registry.settings.staleTimeout + 1)
            let swept = try await registry.sweepStale(at: now)
            details.append(
                "sweepStale after \(Int(registry.settings.staleTimeout)) s → \(swept.map(\.key).joined(separator: ", "))"
            )
            states = try await registryStates("after the stale timeout")
            let suspect = try await registry.pushToStartTokens(device: device(fleur)).first?.status
            expect(
                "no update token within the stale timeout: stale, the push-to-start token suspect",
                states["dienst-daan-812"] == .stale && states["dienst-fleur-812"] == .stale && suspect == .suspect)

            // Daan opens the app: it reads the activity's token and posts it; the activity is active after all.
            await daan.launchApp()
            details.append("Daan opens the app")
            let posted = try await reportActivityTokens(daan)
            let (late, lateOutcome) = try await change(
                "dienst-daan-812", volunteers: ["Sanne", "Daan"], reaching: (daan, 2))
            states = try await registryStates("after Daan's app ran")
            var lateSent = false
            if case .send = late, lateOutcome?.isAccepted == true { lateSent = true }
            let daanShows = await daan.activity?.contentState
            expect(
                "the killed app's token comes later: the stale activity is active, and its update is delivered",
                posted == 1 && states["dienst-daan-812"] == .active && lateSent
                    && daanShows == Self.volunteers(["Sanne", "Daan"]))

            // The shift ends on Sanne's phone, with a dismissal date; an update after it is refused.
            let (_, ended) = try await change(
                "dienst-sanne-812", volunteers: ["Sanne", "Daan", "Joost"], end: true, reaching: (sanne, 4))
            let (after, _) = try await change("dienst-sanne-812", volunteers: ["Sanne"])
            var refusedEnded = false
            if case .refused(let e) = after, e.code.rawValue == "activity-ended" { refusedEnded = true }
            states = try await registryStates("at the end")
            let sanneEnded = await sanne.activity
            expect(
                "the end (dismissal in 1 hour) ends the activity on the phone and in the registry; a later update is refused activity-ended",
                ended?.isAccepted == true && sanneEnded?.phase == .ended && sanneEnded?.dismissalDate != nil
                    && states["dienst-sanne-812"] == .ended && refusedEnded)
            expect("Fleur's app never ran: her activity stays stale", states["dienst-fleur-812"] == .stale)
            return try await outcome(
                .liveActivityKilledApp,
                expected:
                    "a killed app's activity starts but its update token comes back only when the app next runs: the registry refuses updates until then (activity-no-update-token), flags it stale after the timeout with its push-to-start token suspect, and makes it active when the token arrives; the running app's activity takes every update and ends",
                why:
                    "ActivityKit starts an activity from a push-to-start even when the app is not running, but only the app's code can read Activity.pushTokenUpdates and post the token: a killed app posts it at its next launch, or never. Without a record of the start, the server cannot tell a lost token from a slow one.",
                fix:
                    "Start every activity through the activity registry with a key and input-push-token 1; have the app post activity_tokens at launch and whenever pushTokenUpdates yields; sweep stale starts regularly and treat a suspect push-to-start token as doubtful until the app reports again."
            )
        }

        /// A start retried under the same key: one activity. The same start sent twice without the registry: two.
        func retriedStart() async throws -> ScenarioOutcome {
            let sanne = try await phone("Sanne's iPhone")
            let joost = try await phone("Joost's iPhone")
            try await reportPushToStart(sanne, token: sanne.pushToStartToken)
            let (_, first) = try await start("dienst-vvwilhelmus-812", on: sanne)
            // The backend's request timed out on its side and it tries again: the registry answers with the first.
            let (second, resent) = try await start("dienst-vvwilhelmus-812", on: sanne)
            try await reportActivityTokens(sanne)
            let (third, _) = try await start("dienst-vvwilhelmus-812", on: sanne)
            let states = try await registryStates("after three starts with one key")
            var existing = false
            if case .existing = second, case .existing(let record) = third, record.state == .active { existing = true }
            let starts = world.mock.deliveries(token: sanne.pushToStartToken, limit: 1000).count
            let activities = await sanne.activities.count
            expect(
                "three starts under one key: one push, one activity (the retries answered with the first)",
                first?.isAccepted == true && resent == nil && existing && starts == 1 && activities == 1
                    && states.count == 1)

            // Without the registry: the same start sent twice makes two activities on the phone.
            var content = LiveActivityContent.start(
                attributesType: LiveActivityRegistryScenarios.attributesType, attributes: Self.attributes,
                contentState: Self.volunteers(["Joost"]), alert: .text("Je dienst in de kantine begint"),
                timestamp: LiveActivityRules.currentUnixSeconds())
            content.inputPushToken = true
            let request = NotificationRequest(
                deviceToken: joost.pushToStartToken, topic: LiveActivityContent.topic(forBundleID: bundleID),
                pushType: .liveactivity, priority: 10, payload: content.payload.encoded())
            let once = await world.client.send(request, environment: .production)
            _ = await joost.waitForHandled(1, timeout: timeout)
            let twice = await world.client.send(request, environment: .production)
            _ = await joost.waitForHandled(2, timeout: timeout)
            let doubled = await joost.activities.count
            details.append(
                "without the registry: the same start sent twice to Joost's iPhone → \(Self.describe(once)), \(Self.describe(twice)); \(doubled) activities on the phone"
            )
            expect(
                "the same start sent twice without a key: APNs accepts both and the phone runs two activities",
                once.isAccepted && twice.isAccepted && doubled == 2)
            return try await outcome(
                .liveActivityRetriedStart,
                expected:
                    "a start retried under the same activity key is answered with the first activity and sends nothing; the same start sent twice without the registry makes two activities",
                why:
                    "APNs accepts every start and ActivityKit starts an activity for each: nothing on Apple's side deduplicates a retried start, so a server that retries after a timeout puts a second dienst on the Lock Screen.",
                fix:
                    "Start Live Activities through the activity registry with one key per activity: a known key answers with the existing activity (its state, its update token) and sends nothing."
            )
        }

        /// A push-to-start token rotated on the phone while the registry still has the old one: the start on it is
        /// accepted and never delivered, goes stale and marks the token suspect; a `nil` rotation does not wipe it;
        /// the new token arrives and the next start works.
        func stalePushToStart() async throws -> ScenarioOutcome {
            let sanne = try await phone("Sanne's iPhone")
            let old = sanne.pushToStartToken
            try await reportPushToStart(sanne, token: old)
            // The app is reinstalled: a new push-to-start token, not yet reported.
            let fresh = try await sanne.rotatePushToStartToken()
            details.append(
                "Sanne reinstalls the app: a new push-to-start token \(Self.short(fresh)); the old one is stale on the phone"
            )
            let (_, sent) = try await start("dienst-vvwilhelmus-812", on: sanne)
            let lost = deliveryStates(token: old)
            details.append("    the mock's device side: \(lost.map(\.rawValue).joined(separator: ", "))")
            let nothing = await sanne.activity == nil
            expect(
                "the start on the stale token: 200 from APNs, discarded on the device, no activity",
                sent?.isAccepted == true && lost.last == .discardedStalePushToStartToken && nothing)
            tick(registry.settings.staleTimeout + 1)
            _ = try await registry.sweepStale(at: now)
            var states = try await registryStates("after the stale timeout")
            var tokens = try await registry.pushToStartTokens(device: device(sanne))
            expect(
                "no update token came back: the activity is stale, the old push-to-start token suspect",
                states["dienst-vvwilhelmus-812"] == .stale && tokens.first?.token == old
                    && tokens.first?.status == .suspect)

            // iOS yields a rotation without a token first: it is refused and the stored token kept.
            let empty = try await reportPushToStart(sanne, token: nil)
            tokens = try await registry.pushToStartTokens(device: device(sanne))
            details.append(
                "the app reports a nil push-to-start token → \(empty.map { "\($0.outcome.rawValue)\($0.reason.map { ": \($0)" } ?? "")" } ?? "nothing recorded")"
            )
            expect(
                "a nil rotation is refused and does not wipe the stored token",
                empty?.outcome == .refused && empty?.token == nil && tokens.first?.token == old)
            // Then the new token arrives.
            let rotated = try await reportPushToStart(sanne, token: fresh)
            tokens = try await registry.pushToStartTokens(device: device(sanne))
            expect(
                "the new push-to-start token replaces the old one (history: accepted, refused, accepted)",
                rotated?.outcome == .accepted && tokens.first?.token == fresh
                    && tokens.first?.status == .good
                    && (tokens.first?.history.map(\.outcome) ?? []) == [.accepted, .refused, .accepted])
            let (_, again) = try await start("dienst-vvwilhelmus-812-b", on: sanne)
            try await reportActivityTokens(sanne)
            states = try await registryStates("after a start on the new token")
            let shown = await sanne.activity != nil
            expect(
                "the next start goes to the new token and the activity is active",
                again?.isAccepted == true && states["dienst-vvwilhelmus-812-b"] == .active && shown)
            return try await outcome(
                .liveActivityStalePushToStart,
                expected:
                    "a start to a push-to-start token the phone no longer uses gets 200 and is never delivered; the registry flags it stale and the token suspect; a nil rotation does not wipe the stored token; the new token arrives and the next start works",
                why:
                    "APNs does not know that the app was reinstalled or its push-to-start token rotated: it keeps answering 200 for the old token, and nothing reaches the phone. A rotation that iOS reports without a token, stored as is, would leave the server no token at all.",
                fix:
                    "Have the app post push_to_start_tokens whenever pushToStartTokenUpdates yields; keep the stored token on a nil or empty rotation (the registry refuses it with a reason); sweep stale starts regularly so a token whose starts never come back is marked suspect."
            )
        }

        /// More starts than the budget on one phone: the registry defers the rest; sent anyway, the phone drops them.
        func startBudget() async throws -> ScenarioOutcome {
            let sanne = try await phone("Sanne's iPhone")
            try await reportPushToStart(sanne, token: sanne.pushToStartToken)
            let budget = registry.settings.startBudgetCount
            let total = budget + 2
            var sentCount = 0
            var deferred: [String] = []
            for n in 1...total {
                let (plan, outcome) = try await start("dienst-vvwilhelmus-\(800 + n)", on: sanne)
                if outcome?.isAccepted == true { sentCount += 1 }
                if case .deferred = plan { deferred.append("dienst-vvwilhelmus-\(800 + n)") }
            }
            try await reportActivityTokens(sanne)
            let states = try await registryStates("after \(total) starts")
            expect(
                "the registry sends \(budget) starts (the budget, \(budget) per \(Int(registry.settings.startBudgetWindow)) s) and defers \(total - budget)",
                sentCount == budget && deferred.count == total - budget && states.count == budget
                    && states.values.allSatisfy { $0 == .active })

            // A server without the budget sends the deferred starts anyway: APNs answers 200, the phone drops them.
            var dropped = 0
            for key in deferred {
                let push = try ActivityPushes.start(
                    startRequest(key, on: sanne, volunteers: ["Sanne"]), token: sanne.pushToStartToken,
                    apnsID: UUID().uuidString.lowercased(), at: now)
                let outcome = await world.client.send(push, environment: .production)
                if outcome.isAccepted,
                    let id = outcome.apnsID,
                    world.mock.delivery(apnsID: id)?.state == .discardedStartBudget
                {
                    dropped += 1
                }
            }
            let rules = world.mock.deviceRules
            details.append(
                "without the budget: \(deferred.count) more starts sent straight to APNs → \(dropped) discarded: start-budget on the phone (\(rules.pushToStartBudget) per \(Int(rules.pushToStartBudgetWindow)) s)"
            )
            let running = await sanne.activities.count
            expect(
                "sent past the budget, each start gets 200 and the device side drops it (discarded: start-budget)",
                dropped == deferred.count && running == budget)
            return try await outcome(
                .liveActivityStartBudget,
                expected:
                    "the registry sends as many starts as the budget allows and defers the rest with the time the budget frees; the same starts sent anyway get 200 from APNs and are dropped on the device (discarded: start-budget)",
                why:
                    "The device takes about 10 push-to-start starts in a short window and drops the rest while APNs answers 200 (an Apple DTS engineer, Apple Developer Forums thread 799505): a server that does not count its starts loses them silently.",
                fix:
                    "Start through the registry: past the budget a start is deferred with the time the budget frees (or refused, activity-start-budget, if the caller asks); send it again then."
            )
        }

        func outcome(_ scenario: SimulationScenario, expected: String, why: String, fix: String) async throws
            -> ScenarioOutcome
        {
            let held = checks.filter(\.1).count
            return ScenarioOutcome(
                scenario: scenario, reproduced: !checks.isEmpty && checks.allSatisfy(\.1), expected: expected,
                observed: "\(held) of \(checks.count) checks held: "
                    + checks.map { "\($0.1 ? "✓" : "✗") \($0.0)" }.joined(separator: "; "),
                why: why, fix: fix, details: details, facts: try await facts())
        }
    }
}
