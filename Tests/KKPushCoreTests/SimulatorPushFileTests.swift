import Foundation
import KKPushCore
import Testing

/// `.apns` files kkpush writes (``SimulatorPushFile``), read back by kkpush's own reader (``PayloadFile``) and held
/// to what `xcrun simctl push --help` documents: a JSON object at the top level, an `aps` key, 4096 bytes or less,
/// the target app under `Simulator Target Bundle`.
@Suite("Simulator .apns files written by kkpush")
struct SimulatorPushFileTests {
    /// The keys simctl's help names for the file: `Simulator Target Bundle` (the target app) and `aps`.
    static func checkAgainstSimctl(_ bytes: [UInt8], bundleID: String) throws -> [String: Any] {
        #expect(bytes.count <= 4096)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["Simulator Target Bundle"] as? String == bundleID)
        #expect(object["aps"] is [String: Any])
        return object
    }

    @Test("every push type's topic: the bundle id without its suffix; the reader gives back the same payload")
    func roundTripEveryPushType() throws {
        let payload = Array(
            #"{"aps":{"alert":{"title":"Dienst gewijzigd","body":"Bardienst om 19:00"},"sound":"default"},"type":"dienst_update","dienst_id":"4711"}"#
                .utf8)
        for type in PushType.allCases {
            let topic = type.topic(forBundleID: "nl.kantinekoning.app")
            let written = try SimulatorPushFile.make(payload: payload, topic: topic, pushType: type)
            #expect(written.bundleID == "nl.kantinekoning.app", "\(type)")
            _ = try Self.checkAgainstSimctl(written.bytes, bundleID: "nl.kantinekoning.app")
            let read = PayloadFile.read(written.bytes, fileName: "push.apns")
            #expect(read.isSimulatorFile)
            #expect(read.topic == "nl.kantinekoning.app")
            #expect(read.payload == payload, "\(type): the payload read back differs")
            let warned = written.problems.map(\.code) == ["simulator-push-type"]
            #expect(warned == !(type == .alert || type == .background), "\(type): \(written.problems)")
        }
    }

    @Test("the Simulator Target Bundle comes first; a payload's own Simulator Target Bundle is replaced")
    func keyOrder() throws {
        let written = try SimulatorPushFile.make(
            payload: Array(#"{"Simulator Target Bundle":"com.other","aps":{"badge":1}}"#.utf8),
            topic: "nl.kantinekoning.app")
        #expect(
            String(decoding: written.bytes, as: UTF8.self)
                == #"{"Simulator Target Bundle":"nl.kantinekoning.app","aps":{"badge":1}}"#)
        // Characters JSON must escape survive the round trip.
        let odd = try SimulatorPushFile.make(
            payload: Array(#"{"aps":{"alert":"\"quoted\" \\ \u00e9 ✓"}}"#.utf8), topic: "nl.kantinekoning.app")
        let object = try Self.checkAgainstSimctl(odd.bytes, bundleID: "nl.kantinekoning.app")
        #expect((object["aps"] as? [String: Any])?["alert"] as? String == "\"quoted\" \\ é ✓")
    }

    @Test("the 4096-byte limit of simctl push: at the limit written, one byte over refused with the count")
    func sizeLimit() throws {
        let prefix = #"{"Simulator Target Bundle":"nl.kantinekoning.app","aps":{"alert":""#
        let suffix = #""}}"#
        let fill = SimulatorPushFile.sizeLimit - prefix.utf8.count - suffix.utf8.count
        let payload = #"{"aps":{"alert":""# + String(repeating: "x", count: fill) + suffix
        let written = try SimulatorPushFile.make(payload: Array(payload.utf8), topic: "nl.kantinekoning.app")
        #expect(written.bytes.count == 4096)
        _ = try Self.checkAgainstSimctl(written.bytes, bundleID: "nl.kantinekoning.app")
        let over = #"{"aps":{"alert":""# + String(repeating: "x", count: fill + 1) + suffix
        let error = #expect(throws: KKPushError.self) {
            try SimulatorPushFile.make(payload: Array(over.utf8), topic: "nl.kantinekoning.app")
        }
        #expect(error?.code == .simulatorFileTooLarge)
        #expect(error?.message.contains("4097 bytes") == true, "\(String(describing: error))")
    }

    @Test("no aps, not an object: refused, naming what simctl needs")
    func refusals() throws {
        let noAPS = #expect(throws: KKPushError.self) {
            try SimulatorPushFile.make(payload: Array(#"{"type":"x"}"#.utf8), topic: "nl.kantinekoning.app")
        }
        #expect(noAPS?.code == .simulatorFileNoAPS)
        for bad in ["[1,2]", "not json", ""] {
            let error = #expect(throws: KKPushError.self) {
                try SimulatorPushFile.make(payload: Array(bad.utf8), topic: "nl.kantinekoning.app")
            }
            #expect(error?.code == .simulatorFileNotObject, "\(bad)")
        }
    }

    @Test("push_type and priority labels: bounded sets")
    func metricLabels() {
        #expect(PushMetricLabels.pushType("widgets") == "widgets")
        #expect(PushMetricLabels.pushType("controls") == "controls")
        #expect(PushMetricLabels.pushType(nil) == "none")
        #expect(PushMetricLabels.pushType("Alert") == "other")
        #expect(PushMetricLabels.pushType("x-\(UUID())") == "other")
        #expect(PushMetricLabels.priority("10") == "10")
        #expect(PushMetricLabels.priority(5) == "5")
        #expect(PushMetricLabels.priority(nil as Int?) == "none")
        #expect(PushMetricLabels.priority("7") == "other")
        #expect(Set(PushMetricLabels.pushTypes).count == PushType.allCases.count + 2)
    }
}
