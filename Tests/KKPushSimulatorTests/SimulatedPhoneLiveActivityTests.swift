import Foundation
import KKPushClient
import KKPushCore
import KKPushMock
import KKPushSimulator
import Testing

/// A simulated phone's Live Activity decisions, each reached by a real push through the mock (TLS on
/// loopback) from the real client.
@Suite("A simulated phone's Live Activity takes and drops pushes as ActivityKit does")
struct SimulatedPhoneLiveActivityTests {
    static let type = "DienstActivityAttributes"

    static func state(_ n: Int) -> JSONValue { .object(["n": .int(n)]) }

    static func send(
        _ content: LiveActivityContent, to token: String, in world: SimulationWorld, environment: APNsEnvironment
    ) async -> PushOutcome {
        await world.client.send(
            NotificationRequest(
                deviceToken: token, topic: LiveActivityContent.topic(forBundleID: world.configuration.bundleID),
                pushType: .liveactivity, priority: 5, payload: content.payload.encoded()),
            environment: environment)
    }

    @Test("With the app's ActivityAttributes known: a start or update that would not decode is dropped (APNs said 200)")
    func undecodableDropped() async throws {
        let description = ActivityAttributesDescription(
            name: Self.type, attributes: [.init("team", .string)], contentState: [.init("n", .int)])
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let phone = LiveActivityPhone(
                name: "Sanne's iPhone", environment: .production, bundleID: world.configuration.bundleID,
                attributesTypes: [], descriptions: [description], mock: world.mock)
            let now = LiveActivityRules.currentUnixSeconds()
            var handled = 0
            func step(_ content: LiveActivityContent, to token: String) async throws -> ActivityPushHandling {
                let outcome = await Self.send(content, to: token, in: world, environment: .production)
                #expect(outcome.isAccepted, "APNs accepts it whatever the app's types: \(outcome)")
                handled += 1
                #expect(await phone.waitForHandled(handled, timeout: .seconds(20)))
                return try #require(await phone.handled.last)
            }
            // `team` is a number, the app's attributes declare a String: nothing starts.
            var start = LiveActivityContent.start(
                attributesType: Self.type, attributes: .object(["team": .int(7)]), contentState: Self.state(1),
                alert: .text("start"), timestamp: now + 1)
            start.inputPushToken = true
            var h = try await step(start, to: phone.pushToStartToken)
            #expect(!h.taken && h.note.contains("would not decode") && h.note.contains("aps.attributes.team"), "\(h)")
            #expect(await phone.activity == nil)

            start.attributes = .object(["team": .string("JO11-3")])
            start.timestamp = now + 2
            h = try await step(start, to: phone.pushToStartToken)
            #expect(h.taken, "\(h)")
            let token = try #require(await phone.activity?.updateToken)

            // An update whose content-state has a string where the app decodes Int: dropped, the old state stays.
            h = try await step(.update(contentState: .object(["n": .string("two")]), timestamp: now + 3), to: token)
            #expect(!h.taken && h.note.contains("aps.content-state.n"), "\(h)")
            #expect(await phone.activity?.contentState == Self.state(1))
            h = try await step(.update(contentState: Self.state(2), timestamp: now + 4), to: token)
            #expect(h.taken, "\(h)")
            #expect(await phone.activity?.contentState == Self.state(2))
            await phone.stop()
        }
    }

    @Test(
        "A Unix time in a Date field decodes (misread, shown), so the phone takes it; only live-activity-would-not-decode drops a push"
    )
    func misreadDateIsNotDropped() async throws {
        let description = ActivityAttributesDescription(
            name: Self.type, attributes: [.init("team", .string)],
            contentState: [.init("n", .int), .init("startsAt", .date)])
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let phone = LiveActivityPhone(
                name: "Sanne's iPhone", environment: .production, bundleID: world.configuration.bundleID,
                attributesTypes: [], descriptions: [description], mock: world.mock)
            let now = LiveActivityRules.currentUnixSeconds()
            var handled = 0
            func step(_ content: LiveActivityContent, to token: String) async throws -> ActivityPushHandling {
                let outcome = await Self.send(content, to: token, in: world, environment: .production)
                #expect(outcome.isAccepted, "\(outcome)")
                handled += 1
                #expect(await phone.waitForHandled(handled, timeout: .seconds(20)))
                return try #require(await phone.handled.last)
            }
            // `startsAt` as a Unix time: JSONDecoder decodes it (as seconds since 2001), the linter warns, the phone
            // starts the activity.
            let unixState: JSONValue = .object(["n": .int(1), "startsAt": .int(now)])
            let misread = description.problems(
                in: LiveActivityContent.start(
                    attributesType: Self.type, attributes: .object(["team": .string("JO11-3")]),
                    contentState: unixState, alert: .text("start"), timestamp: now + 1
                ).payload)
            #expect(misread.map(\.code) == [.liveActivityDateMisread], "\(misread)")
            var start = LiveActivityContent.start(
                attributesType: Self.type, attributes: .object(["team": .string("JO11-3")]), contentState: unixState,
                alert: .text("start"), timestamp: now + 1)
            start.inputPushToken = true
            var h = try await step(start, to: phone.pushToStartToken)
            #expect(h.taken, "\(h)")
            let token = try #require(await phone.activity?.updateToken)
            #expect(await phone.activity?.contentState == unixState)

            // A string where the app decodes a Date: JSONDecoder refuses it, the phone drops the update.
            let broken: JSONValue = .object(["n": .int(2), "startsAt": .string("morgen")])
            h = try await step(.update(contentState: broken, timestamp: now + 2), to: token)
            #expect(!h.taken && h.note.contains("would not decode") && h.note.contains("startsAt"), "\(h)")
            #expect(await phone.activity?.contentState == unixState)
            await phone.stop()
        }
    }

    @Test("wrong token, unknown type, older timestamp and pushes after the end are dropped; the rest taken")
    func decisions() async throws {
        try await withSimulationWorld(configuration: SimulatorFixtures.configuration()) { world in
            let phone = LiveActivityPhone(
                name: "Sanne's iPhone", environment: .production, bundleID: world.configuration.bundleID,
                attributesTypes: [Self.type], mock: world.mock)
            let now = LiveActivityRules.currentUnixSeconds()
            var handled = 0
            func step(_ content: LiveActivityContent, to token: String) async throws -> ActivityPushHandling {
                let outcome = await Self.send(content, to: token, in: world, environment: .production)
                #expect(outcome.isAccepted, "\(outcome)")
                handled += 1
                #expect(await phone.waitForHandled(handled, timeout: .seconds(20)))
                return try #require(await phone.handled.last)
            }

            // An update sent to the push-to-start token does nothing.
            var h = try await step(.update(contentState: Self.state(0), timestamp: now), to: phone.pushToStartToken)
            #expect(!h.taken && h.note.contains("push-to-start token does nothing"))
            #expect(await phone.activity == nil)

            // A start naming a type the app does not declare starts nothing.
            var start = LiveActivityContent.start(
                attributesType: "OtherAttributes", attributes: .object([:]), contentState: Self.state(1),
                alert: .text("start"), timestamp: now + 1)
            h = try await step(start, to: phone.pushToStartToken)
            #expect(!h.taken && h.note.contains("no ActivityAttributes type named OtherAttributes"))

            // The right type, asking for an update token.
            start.attributesType = Self.type
            start.timestamp = now + 2
            start.inputPushToken = true
            h = try await step(start, to: phone.pushToStartToken)
            #expect(h.taken && h.event == "start")
            let token = try #require(await phone.activity?.updateToken)
            #expect(token != phone.pushToStartToken)

            // A second start while one runs starts a second activity with its own update token, as ActivityKit does
            // (why a server keeps one key per activity); a start on the update token does nothing.
            start.timestamp = now + 3
            h = try await step(start, to: phone.pushToStartToken)
            #expect(h.taken, "\(h)")
            #expect(await phone.activities.count == 2)
            let second = try #require(await phone.activity?.updateToken)
            #expect(second != token)
            h = try await step(start, to: token)
            #expect(!h.taken && h.note.contains("a start sent to an activity's token"))

            // An update no newer than the last shown is dropped; a newer one is taken, by the activity it names.
            h = try await step(.update(contentState: Self.state(9), timestamp: now + 2), to: token)
            #expect(!h.taken && h.note.contains("not newer"))
            #expect(await phone.activity(updateToken: token)?.contentState == Self.state(1))
            h = try await step(.update(contentState: Self.state(2), timestamp: now + 4), to: token)
            #expect(h.taken && h.via == "update token")
            #expect(await phone.activity(updateToken: token)?.contentState == Self.state(2))
            #expect(await phone.activity(updateToken: second)?.contentState == Self.state(1))

            // The end, then nothing more: the device drops an update to the ended activity before the phone sees it.
            h = try await step(.end(contentState: Self.state(3), timestamp: now + 5, dismissalDate: now), to: token)
            #expect(h.taken)
            #expect(await phone.activity(updateToken: token)?.phase == .ended)
            #expect(await phone.activity(updateToken: token)?.dismissalDate == now)
            let late = await Self.send(
                .update(contentState: Self.state(4), timestamp: now + 6), to: token, in: world, environment: .production
            )
            #expect(late.isAccepted, "\(late)")
            let lateID = try #require(late.apnsID)
            let dropped = world.mock.deliveries(limit: 1000).first { $0.apnsID == lateID }
            #expect(dropped?.state == .droppedActivityEnded, "\(String(describing: dropped))")
            #expect(await phone.handled.count == handled)
            #expect(await phone.activity(updateToken: token)?.contentState == Self.state(3))
            await phone.stop()
        }
    }
}
