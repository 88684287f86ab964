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

    @Test(
        "every push type's topic: the bundle id without its suffix; the reader gives back the same payload, byte for byte, and the topic with its suffix"
    )
    func roundTripEveryPushType() throws {
        // Keys in the sender's order (a custom key first, aps's keys not in kkpush's own order) and white space: the
        // file holds the payload as it was sent, and the reader gives exactly that back.
        let payloads = [
            #"{"aps":{"alert":{"title":"Dienst gewijzigd","body":"Bardienst om 19:00"},"sound":"default"},"type":"dienst_update","dienst_id":"4711"}"#,
            #"{"type":"dienst_update","aps":{"sound":"default","badge":1,"alert":{"body":"b","title":"t"}}}"#,
            "{\n  \"aps\" : { \"content-available\" : 1 },\n  \"n\" : 1.50\n}\n",
        ].map { Array($0.utf8) }
        for payload in payloads {
            for type in PushType.allCases {
                let topic = type.topic(forBundleID: "nl.kantinekoning.app")
                let written = try SimulatorPushFile.make(payload: payload, topic: topic, pushType: type)
                #expect(written.bundleID == "nl.kantinekoning.app", "\(type)")
                _ = try Self.checkAgainstSimctl(written.bytes, bundleID: "nl.kantinekoning.app")
                #expect(
                    written.bytes == Array(#"{"Simulator Target Bundle":"nl.kantinekoning.app","#.utf8)
                        + payload.dropFirst(),
                    "\(type): \(String(decoding: written.bytes, as: UTF8.self))")
                let read = PayloadFile.read(written.bytes + [0x0A], fileName: "push.apns")
                #expect(read.isSimulatorFile)
                #expect(read.topic == "nl.kantinekoning.app")
                #expect(read.topic(for: type) == topic, "\(type)")
                #expect(
                    read.payload == payload,
                    "\(type): the payload read back differs: \(String(decoding: read.payload, as: UTF8.self))")
                let warned = written.problems.map(\.code.rawValue) == ["simulator-push-type"]
                #expect(warned == !(type == .alert || type == .background), "\(type): \(written.problems)")
                // Lint takes the same topic: no BadTopic for a push type with a suffix.
                guard type.topicSuffix != nil else { continue }
                let lint = PayloadLint.lint(read, pushType: type)
                #expect(lint.topic == topic && lint.fileTopic == topic, "\(type)")
                #expect(
                    !lint.check.problems.contains { $0.code.rawValue == "BadTopic" }, "\(type): \(lint.check.problems)")
            }
        }
    }

    @Test("a hand-written .apns file: the member cut out, every other byte kept; a suffixed bundle is kept as it is")
    func handWritten() throws {
        let text =
            "{\n  \"aps\": {\"alert\": \"x\"},\n  \"Simulator Target Bundle\": \"nl.kantinekoning.app\" ,\n  \"k\": [1, 2]\n}"
        let read = PayloadFile.read(Array(text.utf8))
        #expect(
            String(decoding: read.payload, as: UTF8.self) == "{\n  \"aps\": {\"alert\": \"x\"},\n  \"k\": [1, 2]\n}")
        #expect(read.problems.map(\.code.rawValue) == ["simulator-target-bundle", "payload-whitespace"])
        let last = PayloadFile.read(Array(#"{"aps":{},"Simulator Target Bundle":"a.b.voip"}"#.utf8))
        #expect(String(decoding: last.payload, as: UTF8.self) == #"{"aps":{}}"#)
        #expect(last.topic(for: .voip) == "a.b.voip" && last.topic(for: .alert) == "a.b.voip")
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
