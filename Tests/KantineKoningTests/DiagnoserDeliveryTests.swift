import Foundation
import KKPushCore
import KantineKoning
import Testing

/// Rule 7: accepted but never arrived. The verdict names what the device decided, with its fix and Apple's page;
/// never APNs or the environment; and no verdict of this kind for a push that arrived and ran the app's code.
@Suite("Diagnoser: after APNs accepts the push")
struct DiagnoserDeliveryTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let background = Array(
        #"{"aps":{"content-available":1},"type":"dienst_update","tenant":"vvwilhelmus","dienst_id":"7"}"#.utf8)
    static let alert = Array(
        #"{"aps":{"alert":{"title":"Dienst gewijzigd","body":"Zaterdag"}},"type":"dienst_update","tenant":"vvwilhelmus","dienst_id":"7"}"#
            .utf8)
    static let noContentAvailable = Array(#"{"type":"dienst_update","tenant":"vvwilhelmus","dienst_id":"7"}"#.utf8)

    /// The push as sent, the topic the bundle id, and the device's state.
    static func facts(
        pushType: String, priority: Int, payload: [UInt8], expiration: Int? = nil,
        device: DiagnosisFacts.DeviceSide? = nil, delivery: DiagnosisFacts.DeliveryRecord? = nil
    ) -> DiagnosisFacts {
        var f = DiagnosisFacts(now: now)
        f.topic = "nl.kantinekoning.app"
        f.pushType = pushType
        f.priority = priority
        f.payload = payload
        f.expiration = expiration
        f.deviceSide = device
        f.delivery = delivery
        return f
    }

    static func record(
        _ state: String, detail: String? = nil, runs: [String] = [], onOpen: Bool = false,
        app: DiagnosisFacts.AppState = .background
    ) -> DiagnosisFacts.DeliveryRecord {
        DiagnosisFacts.DeliveryRecord(
            apnsID: "1b2c3d4e-0000-4000-8000-000000000001", state: state,
            history: [.init(state: "received"), .init(state: state, detail: detail)], runs: runs, onOpen: onOpen,
            appState: app, source: "the mock's delivery log (test)")
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var verdict: String
        var facts: @Sendable () -> DiagnosisFacts
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "apns-expiration 0 to an offline phone", verdict: "expiration-zero-offline") {
            facts(pushType: "background", priority: 5, payload: background, expiration: 0, device: .init(offline: true))
        },
        Case(name: "a background push without content-available", verdict: "background-no-content-available") {
            facts(
                pushType: "background", priority: 5, payload: noContentAvailable, device: .init(appState: .background))
        },
        Case(name: "silent pushes over the budget", verdict: "background-budget") {
            facts(
                pushType: "background", priority: 5, payload: background,
                device: .init(appState: .suspended, backgroundPushesPerHour: 12))
        },
        Case(name: "an alert expected to refresh a backgrounded app", verdict: "alert-no-background-refresh") {
            facts(pushType: "alert", priority: 10, payload: alert, device: .init(appState: .background))
        },
        Case(name: "a background push to a force-quit app", verdict: "app-force-quit") {
            facts(pushType: "background", priority: 5, payload: background, device: .init(appState: .forceQuit))
        },
        Case(name: "the mock: replaced by a newer alert with its collapse id", verdict: "collapse-id-replaced") {
            facts(
                pushType: "alert", priority: 10, payload: alert,
                delivery: record("replaced: same collapse id", detail: "ab has the same apns-collapse-id 'diensten'"))
        },
        Case(name: "the mock: discarded, apns-expiration 0, device offline", verdict: "expiration-zero-offline") {
            facts(
                pushType: "background", priority: 5, payload: background,
                delivery: record(
                    "discarded: expired",
                    detail:
                        "apns-expiration 0: APNs delivers at once or not at all and does not store it; the device was offline"
                ))
        },
        Case(name: "the mock: replaced while offline", verdict: "replaced-while-offline") {
            facts(
                pushType: "background", priority: 5, payload: background,
                delivery: record("discarded: replaced by a newer push"))
        },
        Case(name: "the mock: deferred by the background budget", verdict: "background-budget") {
            facts(
                pushType: "background", priority: 5, payload: background,
                delivery: record("deferred: background budget"))
        },
        Case(name: "the mock: not run, app force-quit", verdict: "app-force-quit") {
            facts(
                pushType: "background", priority: 5, payload: background,
                delivery: record("not run: app force-quit", app: .forceQuit))
        },
        Case(name: "the mock: an alert shown, code only on open", verdict: "alert-no-background-refresh") {
            facts(pushType: "alert", priority: 10, payload: alert, delivery: record("delivered", onOpen: true))
        },
    ]

    static let deviceCodes: Set<String> = [
        "expiration-zero-offline", "push-expired", "replaced-while-offline", "app-force-quit",
        "background-no-content-available", "background-budget", "alert-no-background-refresh", "collapse-id-replaced",
    ]

    @Test("Each case's verdict names the device's decision, Apple's page and the fix", arguments: cases)
    func verdict(_ c: Case) throws {
        let d = Diagnoser.diagnose(c.facts())
        let v = try #require(d.verdict, "\(d.findings)")
        #expect(v.code.rawValue == c.verdict, "\(d.findings)")
        #expect(v.why.contains("developer.apple.com"), "\(v.why)")
        #expect(!v.fix.isEmpty)
        // Never APNs' or the environment's fault: every error is one of the device side's.
        let errors = d.findings.filter { $0.severity == .error }.map(\.code.rawValue)
        #expect(errors.allSatisfy(Self.deviceCodes.contains), "\(errors)")
        #expect(d.pushEnvironment == nil)
    }

    @Test("No verdict of this kind for a push that arrived and ran the app's code, or the device would run")
    func noFalseVerdict() {
        let arrived = [
            // The mock: delivered, the background handler ran.
            Self.facts(
                pushType: "background", priority: 5, payload: Self.background,
                delivery: Self.record("delivered", runs: ["background-handler"])),
            // The mock: an alert in the foreground (willPresent).
            Self.facts(
                pushType: "alert", priority: 10, payload: Self.alert,
                delivery: Self.record("delivered", runs: ["will-present"], app: .foreground)),
            // Told: an alert to an app in the foreground; a background push within the budget; online, expiration 0.
            Self.facts(pushType: "alert", priority: 10, payload: Self.alert, device: .init(appState: .foreground)),
            Self.facts(
                pushType: "background", priority: 5, payload: Self.background,
                device: .init(appState: .background, backgroundPushesPerHour: 2)),
            Self.facts(
                pushType: "background", priority: 5, payload: Self.background, expiration: 0,
                device: .init(appState: .background, offline: false)),
        ]
        for f in arrived {
            let d = Diagnoser.diagnose(f)
            #expect(d.verdict == nil, "\(d.findings)")
            #expect(!d.findings.contains { Self.deviceCodes.contains($0.code.rawValue) }, "\(d.findings)")
        }
        // Without the device side nothing of this kind is judged (the request rules alone).
        let d = Diagnoser.diagnose(Self.facts(pushType: "alert", priority: 10, payload: Self.alert))
        #expect(!d.findings.contains { Self.deviceCodes.contains($0.code.rawValue) })
    }

    @Test("A delivered push that ran its code says so (info)")
    func deliveredRan() {
        let d = Diagnoser.diagnose(
            Self.facts(
                pushType: "background", priority: 5, payload: Self.background,
                delivery: Self.record("delivered", runs: ["background-handler"])))
        #expect(d.findings.contains { $0.code.rawValue == "delivered-ran" && $0.severity == .info })
    }
}
