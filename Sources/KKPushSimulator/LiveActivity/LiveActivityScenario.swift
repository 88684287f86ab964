import Foundation
import KKPushClient
import KKPushCore
import KKPushMock

/// The `live-activity` scenario: a dienst in progress on the volunteers' Lock Screens.
///
/// The club creates a broadcast channel in production (storage policy 1). Each volunteer's phone gets a
/// push-to-start that subscribes the new activity to the channel; the Test iPhone (a Release Testing
/// build, sandbox) asks for its own update token instead. One broadcast carries the new volunteer list
/// to every subscribed activity, and one broadcast ends them at the end of the shift. On the way it
/// reproduces three mistakes: a push-to-start without `attributes-type` (APNs answers 200, nothing
/// starts), a broadcast to the production channel through the sandbox host (`400 ChannelNotRegistered`),
/// and an update token sent to the other environment (`400 BadDeviceToken`), and an update whose `content-state`
/// does not decode into the app's `ContentState` (APNs answers 200, the phone drops it). After every push it shows
/// each phone's activity.
enum LiveActivityScenario {
    static let attributesType = "DienstActivityAttributes"

    /// The app's `DienstActivityAttributes`, as the phones decode it: the dienst's tenant, team, location and time,
    /// and a `ContentState` of its status and the volunteers' names.
    static let description = ActivityAttributesDescription(
        name: attributesType,
        attributes: [
            .init("tenant", .string), .init("team", .string), .init("location", .string), .init("dienst", .string),
        ],
        contentState: [.init("status", .string), .init("volunteers", .array(.string))])

    /// One push of the scenario and what came of it.
    struct Step {
        var label: String
        var answer: String
        var states: [(String, String)]
        var notes: [String]
    }

    static func run(_ configuration: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: configuration) { world in
            try await Run(world: world).run()
        }
    }

    /// The scenario's state while it runs.
    final class Run: @unchecked Sendable {
        let world: SimulationWorld
        let bundleID: String
        let broadcasts: APNsBroadcastClient
        let timeout: Duration
        var clock = LiveActivityRules.currentUnixSeconds()
        var steps: [Step] = []
        var checks: [(String, Bool)] = []
        var phones: [LiveActivityPhone] = []

        init(world: SimulationWorld) throws {
            self.world = world
            self.bundleID = world.configuration.bundleID
            self.broadcasts = try APNsBroadcastClient(configuration: world.client.configuration)
            self.timeout = world.configuration.timeout
        }

        /// The next content timestamp: one second after the last, so every push is newer than the one before.
        func tick() -> Int {
            clock += 1
            return clock
        }

        func expect(_ what: String, _ ok: Bool) { checks.append((what, ok)) }

        func snapshot(_ label: String, answer: String, notes: [String] = []) async {
            var states: [(String, String)] = []
            for p in phones { states.append((p.name, await p.stateLine)) }
            steps.append(Step(label: label, answer: answer, states: states, notes: notes))
        }

        static func dienstState(_ volunteers: [String], status: String) -> JSONValue {
            .object(["status": .string(status), "volunteers": .array(volunteers.map { .string($0) })])
        }

        static let attributes: JSONValue = .object([
            "tenant": .string("vvwilhelmus"), "team": .string("JO11-3"), "location": .string("Kantine"),
            "dienst": .string("zaterdag 09:00–12:30"),
        ])

        /// Sends a device push and waits for the phones named in `reaching` to handle it.
        func push(
            _ content: LiveActivityContent, to token: String, environment: APNsEnvironment,
            reaching: [(LiveActivityPhone, Int)]
        ) async -> PushOutcome {
            let request = NotificationRequest(
                deviceToken: token, topic: LiveActivityContent.topic(forBundleID: bundleID), pushType: .liveactivity,
                priority: 10, payload: content.payload.encoded())
            let outcome = await world.client.send(request, environment: environment)
            if outcome.isAccepted {
                for (phone, count) in reaching { _ = await phone.waitForHandled(count, timeout: timeout) }
            }
            return outcome
        }

        /// Sends a broadcast on `channel` through `environment`'s APNs host and waits for the subscribers.
        func broadcast(
            _ content: LiveActivityContent, channel: String, environment: APNsEnvironment,
            reaching: [(LiveActivityPhone, Int)]
        ) async throws -> BroadcastResponse {
            let endpoint = environment == .sandbox ? world.mock.sandboxEndpoint : world.mock.productionEndpoint
            let response = try await broadcasts.broadcast(
                BroadcastRequest(bundleID: bundleID, channelID: channel, payload: content.payload.encoded()),
                to: endpoint)
            if response.isSuccess {
                for (phone, count) in reaching { _ = await phone.waitForHandled(count, timeout: timeout) }
            }
            return response
        }

        static func describe(_ o: PushOutcome) -> String {
            if o.isAccepted { return "200 accepted" }
            if let r = o.rejection { return "\(r.status) \(r.reason.rawValue)" }
            return o.status
        }

        static func describe(_ r: BroadcastResponse) -> String {
            r.isSuccess
                ? "\(r.status) (apns-request-id \(r.requestID ?? "none"))"
                : "\(r.status) \(r.reason?.rawValue ?? "?")"
        }

        func run() async throws -> ScenarioOutcome {
            let mock = world.mock
            func phone(_ name: String, _ environment: APNsEnvironment) -> LiveActivityPhone {
                let p = LiveActivityPhone(
                    name: name, environment: environment, bundleID: bundleID,
                    attributesTypes: [LiveActivityScenario.attributesType],
                    descriptions: [LiveActivityScenario.description], mock: mock)
                phones.append(p)
                return p
            }
            let sanne = phone("Sanne's iPhone", .production)
            let daan = phone("Daan's iPhone", .production)
            let fleur = phone("Fleur's iPhone", .production)
            let joost = phone("Joost's iPhone", .production)
            let test = phone("Test iPhone", .sandbox)
            defer { for p in phones { Task { await p.stop() } } }

            // The club's channel, in production.
            let created = try await broadcasts.perform(
                .create(bundleID: bundleID, storagePolicy: .mostRecentMessageStored),
                at: mock.channelEndpoint(.production))
            guard created.status == 201, let channel = created.channelID else {
                throw KKPushError(
                    code: .simulateChannelCreateFailed,
                    message: "The mock did not create the channel: \(Self.describe(created)).",
                    fix: "Run the live-activity scenario with its JSON report and see the answer (simulateCommand).")
            }
            let shortChannel = "\(channel.prefix(8))…"
            await snapshot("channel \(shortChannel) created in production (message-storage-policy 1)", answer: "201")

            // Push-to-start on each volunteer's phone, subscribing to the channel.
            var volunteers = ["Sanne", "Daan", "Fleur"]
            for p in [sanne, daan, fleur] {
                var start = LiveActivityContent.start(
                    attributesType: LiveActivityScenario.attributesType, attributes: Self.attributes,
                    contentState: Self.dienstState(volunteers, status: "bezig"),
                    alert: .text("Je dienst in de kantine is begonnen"), timestamp: tick())
                start.inputPushChannel = channel
                let outcome = await push(start, to: p.pushToStartToken, environment: .production, reaching: [(p, 1)])
                await snapshot("push-to-start → \(p.name) (input-push-channel)", answer: Self.describe(outcome))
                let subscribed = (await p.activity?.channelID) == channel
                expect("\(p.name) started and subscribed", outcome.isAccepted && subscribed)
            }

            // The Test iPhone (sandbox) asks for its own update token.
            var testStart = LiveActivityContent.start(
                attributesType: LiveActivityScenario.attributesType, attributes: Self.attributes,
                contentState: Self.dienstState(volunteers, status: "bezig"),
                alert: .text("Je dienst in de kantine is begonnen"), timestamp: tick())
            testStart.inputPushToken = true
            let testOutcome = await push(
                testStart, to: test.pushToStartToken, environment: .sandbox, reaching: [(test, 1)])
            await snapshot(
                "push-to-start → Test iPhone in sandbox (input-push-token 1)", answer: Self.describe(testOutcome))
            let updateToken = await test.activity?.updateToken
            expect("the Test iPhone started with its own update token", testOutcome.isAccepted && updateToken != nil)

            // Mistake 1: a push-to-start without attributes-type. APNs takes it; the phone starts nothing.
            var bare = LiveActivityContent.start(
                attributesType: LiveActivityScenario.attributesType, attributes: Self.attributes,
                contentState: Self.dienstState(volunteers, status: "bezig"),
                alert: .text("Je dienst in de kantine is begonnen"), timestamp: tick())
            bare.attributesType = nil
            bare.inputPushChannel = channel
            let bareRequest = NotificationRequest(
                deviceToken: joost.pushToStartToken, topic: LiveActivityContent.topic(forBundleID: bundleID),
                pushType: .liveactivity, priority: 10, payload: bare.payload.encoded())
            let lint = APNsRequestRules.check(bareRequest, authentication: .token, judging: .all).problems.map(\.code)
            let bareOutcome = await push(
                bare, to: joost.pushToStartToken, environment: .production, reaching: [(joost, 1)])
            let joostNote = await joost.handled.first?.note ?? "the push did not arrive"
            await snapshot(
                "MISTAKE push-to-start → Joost's iPhone without attributes-type", answer: Self.describe(bareOutcome),
                notes: [
                    "Joost's iPhone: \(joostNote)",
                    "the payload linter: \(lint.map(\.rawValue).joined(separator: ", "))",
                ])
            let noActivity = (await joost.activity) == nil
            let bareReproduced = bareOutcome.isAccepted && noActivity && lint.contains(.liveactivityStartIncomplete)
            expect("a start without attributes-type: 200 from APNs, no activity, named by the linter", bareReproduced)

            // The same start with attributes-type.
            var fixed = bare
            fixed.attributesType = LiveActivityScenario.attributesType
            fixed.timestamp = tick()
            let fixedOutcome = await push(
                fixed, to: joost.pushToStartToken, environment: .production, reaching: [(joost, 2)])
            await snapshot("push-to-start → Joost's iPhone with attributes-type", answer: Self.describe(fixedOutcome))
            let joostStarted = (await joost.activity) != nil
            expect("Joost's iPhone started once attributes-type was sent", fixedOutcome.isAccepted && joostStarted)

            // The volunteer list changes: Fleur swaps with Joost. One broadcast updates every subscriber.
            volunteers = ["Sanne", "Daan", "Joost"]
            let changed = Self.dienstState(volunteers, status: "bezig")
            let update = LiveActivityContent.update(contentState: changed, timestamp: tick())
            let before = mock.deliveries(limit: 100_000).filter { $0.channelID == channel }.count
            let updated = try await broadcast(
                update, channel: channel, environment: .production,
                reaching: [(sanne, 2), (daan, 2), (fleur, 2), (joost, 3)])
            await snapshot("broadcast update on \(shortChannel) (Fleur ⇄ Joost)", answer: Self.describe(updated))
            let copies = mock.deliveries(limit: 100_000).filter { $0.channelID == channel }.count - before
            var subscribersUpdated = true
            for p in [sanne, daan, fleur, joost] where (await p.activity?.contentState) != changed {
                subscribersUpdated = false
            }
            let testUntouched = (await test.activity?.contentState) != changed
            expect(
                "one broadcast reached exactly the 4 subscribed activities (\(copies) copies in the delivery log)",
                updated.isSuccess && copies == 4 && subscribersUpdated && testUntouched)

            // Mistake 2: the production channel used through the sandbox host.
            let wrongHost = try await broadcast(
                LiveActivityContent.update(contentState: changed, timestamp: tick()), channel: channel,
                environment: .sandbox, reaching: [])
            await snapshot(
                "MISTAKE broadcast on \(shortChannel) through the sandbox host", answer: Self.describe(wrongHost))
            expect(
                "the production channel through the sandbox host: 400 ChannelNotRegistered",
                wrongHost.status == 400 && wrongHost.reason == .channelNotRegistered)

            // Mistake 3: the Test iPhone's update token sent to production.
            var wrongEnvironment: PushOutcome? = nil
            var rightEnvironment: PushOutcome? = nil
            if let updateToken {
                let content = LiveActivityContent.update(contentState: changed, timestamp: tick())
                wrongEnvironment = await push(content, to: updateToken, environment: .production, reaching: [])
                await snapshot(
                    "MISTAKE update → Test iPhone's update token sent to production",
                    answer: Self.describe(wrongEnvironment!))
                rightEnvironment = await push(
                    content, to: updateToken, environment: .sandbox, reaching: [(test, 2)])
                await snapshot(
                    "update → Test iPhone's update token in sandbox", answer: Self.describe(rightEnvironment!))
            }
            let testUpdated = (await test.activity?.contentState) == changed
            expect(
                "the sandbox update token sent to production: 400 BadDeviceToken, then taken in sandbox",
                wrongEnvironment?.rejection?.reason == .badDeviceToken && rightEnvironment?.isAccepted == true
                    && testUpdated)

            // Mistake 4: an update whose content-state the app cannot decode (the names as one string, not a list).
            var undecodable: PushOutcome? = nil
            var undecodableNote = "not sent"
            if let updateToken {
                let broken: JSONValue = .object([
                    "status": .string("bezig"), "volunteers": .string(volunteers.joined(separator: ", ")),
                ])
                let content = LiveActivityContent.update(contentState: broken, timestamp: tick())
                undecodable = await push(content, to: updateToken, environment: .sandbox, reaching: [(test, 3)])
                undecodableNote = await test.handled.last?.note ?? "the push did not arrive"
                let lint = LiveActivityScenario.description.problems(in: content.payload).map(\.message)
                await snapshot(
                    "MISTAKE update → Test iPhone with a content-state the app cannot decode",
                    answer: Self.describe(undecodable!),
                    notes: [
                        "Test iPhone: \(undecodableNote)",
                        "checked against the app's types: \(lint.joined(separator: "; "))",
                    ])
            }
            let testKept = (await test.activity?.contentState) == changed
            expect(
                "a content-state the app cannot decode: 200 from APNs, dropped by the phone, named by the check",
                undecodable?.isAccepted == true && undecodableNote.contains("would not decode") && testKept)

            // The shift ends: one broadcast ends every subscribed activity; the Test iPhone's by its token.
            let endAt = tick()
            let finished = Self.dienstState(volunteers, status: "afgelopen")
            let end = LiveActivityContent.end(contentState: finished, timestamp: endAt, dismissalDate: endAt + 3600)
            let ended = try await broadcast(
                end, channel: channel, environment: .production,
                reaching: [(sanne, 3), (daan, 3), (fleur, 3), (joost, 4)])
            await snapshot("broadcast end on \(shortChannel) (dismissal in 1 hour)", answer: Self.describe(ended))
            if let updateToken {
                let o = await push(
                    LiveActivityContent.end(contentState: finished, timestamp: tick(), dismissalDate: endAt + 3600),
                    to: updateToken, environment: .sandbox, reaching: [(test, 4)])
                await snapshot("end → Test iPhone's update token", answer: Self.describe(o))
            }
            var allEnded = ended.isSuccess
            for p in phones where (await p.activity?.phase) != .ended { allEnded = false }
            expect("every activity ended at the end of the shift", allEnded)

            // Each push, then the phones whose activity it changed (every phone after the first).
            var details: [String] = []
            var previous: [String: String] = [:]
            for step in steps {
                details.append("\(step.label): \(step.answer)")
                let changed = step.states.filter { previous[$0.0] != $0.1 }
                for (name, state) in changed { details.append("    \(name): \(state)") }
                if changed.isEmpty { details.append("    (no phone's activity changed)") }
                for note in step.notes { details.append("    \(note)") }
                for (name, state) in step.states { previous[name] = state }
            }
            for (what, ok) in checks { details.append("\(ok ? "✓" : "✗") \(what)") }
            var handlings: [JSONValue] = []
            for p in phones {
                for h in await p.handled {
                    handlings.append(
                        .object([
                            "phone": .string(h.phone), "via": .string(h.via), "event": .string(h.event),
                            "taken": .bool(h.taken), "note": .string(h.note),
                        ]))
                }
            }
            let facts: [String: JSONValue] = [
                "channel_id": .string(channel),
                "broadcast_copies": .int(copies),
                "steps": .array(
                    steps.map { s in
                        .object([
                            "push": .string(s.label), "answer": .string(s.answer),
                            "notes": .array(s.notes.map { .string($0) }),
                            "phones": .object(Dictionary(uniqueKeysWithValues: s.states.map { ($0.0, .string($0.1)) })),
                        ])
                    }),
                "handled": .array(handlings),
                "checks": .array(checks.map { .object(["check": .string($0.0), "ok": .bool($0.1)]) }),
            ]
            let reproduced = checks.allSatisfy(\.1)
            return ScenarioOutcome(
                scenario: .liveActivity, reproduced: reproduced,
                expected:
                    "every volunteer's activity starts, takes the one broadcast update and ends; a start without attributes-type is answered 200 and starts nothing; the production channel through sandbox gets 400 ChannelNotRegistered; the sandbox update token sent to production gets 400 BadDeviceToken; an update whose content-state does not decode into the app's ContentState is answered 200 and dropped by the phone",
                observed:
                    "start without attributes-type: \(Self.describe(bareOutcome)), Joost's iPhone: \(joostNote); broadcast on sandbox: \(Self.describe(wrongHost)); update token in production: \(wrongEnvironment.map(Self.describe) ?? "not sent"); undecodable update: \(undecodable.map(Self.describe) ?? "not sent"), Test iPhone: \(undecodableNote); broadcast update: \(copies) copies; \(checks.filter(\.1).count) of \(checks.count) checks held",
                why:
                    "APNs checks the request, not what the phone can do with it: a start without attributes-type is valid HTTP/2 and JSON, so APNs answers 200 and ActivityKit, which cannot tell which ActivityAttributes to decode, starts nothing. Channels and tokens each belong to one environment, as device tokens do. ActivityKit decodes content-state into the app's own types: a field of the wrong JSON type is dropped on the phone, after APNs said 200.",
                fix:
                    "Lint every Live Activity payload (payloadLintCommand): liveactivity-start-incomplete names the missing keys; check them against the app's own ActivityAttributes: describe its types (payloadActivityAttributesCommand) and lint with that description; send broadcasts and updates to the environment where the channel was created or the token was issued (listing an environment's channels shows them (channelListCommand)).",
                details: details, facts: facts)
        }
    }
}
