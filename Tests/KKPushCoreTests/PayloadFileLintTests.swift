import Foundation
import KKPushCore
import KKPushTestSupport
import Testing

@Suite("Payload files and lint")
struct PayloadFileLintTests {
    @Test("a Simulator .apns file: the target bundle becomes the topic and is not sent; the rest is, as written")
    func simulatorFile() throws {
        let bytes = try fixture("dienst-update.apns")
        let file = PayloadFile.read(bytes, fileName: "dienst-update.apns")
        #expect(file.isSimulatorFile)
        #expect(file.topic == "com.kantinekoning.app")
        #expect(file.problems.map(\.code.rawValue) == ["simulator-target-bundle", "payload-whitespace"])
        #expect(file.problems.allSatisfy { $0.severity == .info })
        let sent = String(decoding: file.payload, as: UTF8.self)
        #expect(!sent.contains("Simulator Target Bundle"))
        // The member and its comma cut out of the file (its final newline is no part of it); nothing else changes,
        // the white space of the pretty-printed file included (noted, as for a plain file).
        let text = String(decoding: PayloadFile.withoutFinalLineEnding(bytes), as: UTF8.self)
        #expect(
            sent
                == text.replacingOccurrences(
                    of: "\n    \"Simulator Target Bundle\": \"com.kantinekoning.app\",", with: ""))
        let reparsed = try JSONSerialization.jsonObject(with: Data(file.payload)) as? [String: Any]
        #expect(reparsed?["dienst_id"] as? String == "4711" && reparsed?.count == 4)

        let lint = PayloadLint.lint(file)
        #expect(lint.isValid)
        #expect(lint.topic == "com.kantinekoning.app")
        #expect(lint.fileTopic == "com.kantinekoning.app")
        #expect(lint.size == file.payload.count)
        #expect(lint.pushType == .alert && lint.pushTypeAssumed)
    }

    @Test("a .apns file whose target bundle is not a string: warned, stripped, no topic")
    func badBundle() throws {
        let file = PayloadFile.read(try fixture("bad-bundle.apns"))
        #expect(file.topic == nil)
        #expect(file.problems.map(\.code.rawValue) == ["simulator-target-bundle-invalid", "payload-whitespace"])
        #expect(String(decoding: file.payload, as: UTF8.self) == #"{ "aps": {"alert": "Hoi"}}"#)
    }

    @Test("a plain JSON file is sent byte for byte (but its final newline); white space is counted and noted")
    func plainFile() throws {
        let bytes = try fixture("cta.json")
        let file = PayloadFile.read(bytes, fileName: "cta.json")
        #expect(bytes.last == 0x0A)
        #expect(file.payload == Array(bytes.dropLast()))
        #expect(file.topic == nil && !file.isSimulatorFile)
        #expect(file.problems.map(\.code.rawValue) == ["payload-whitespace"])
        let lint = PayloadLint.lint(file)
        #expect(lint.size == bytes.count - 1)
        #expect(lint.isValid)
    }

    @Test("one final newline (LF or CRLF) is not part of the payload; any other white space is sent and noted")
    func finalNewline() {
        let json = Array(#"{"aps":{"alert":"x"}}"#.utf8)
        for ending in ["\n", "\r\n"] {
            let file = PayloadFile.read(json + Array(ending.utf8))
            #expect(file.payload == json)
            #expect(file.problems.isEmpty)
        }
        let twice = PayloadFile.read(json + Array("\n\n".utf8))
        #expect(twice.payload == json + [0x0A])
        #expect(twice.problems.map(\.code.rawValue) == ["payload-whitespace"])
        let leading = PayloadFile.read(Array(" ".utf8) + json)
        #expect(leading.problems.map(\.code.rawValue) == ["payload-whitespace"])
        #expect(PayloadFile.withoutFinalLineEnding(Array("\r".utf8)) == Array("\r".utf8))
        #expect(PayloadFile.withoutFinalLineEnding([]) == [])
    }

    @Test("lint: the background dienst update at priority 5 has no problems; assumptions are noted")
    func lintBackground() throws {
        let file = PayloadFile.read(try fixture("dienst-update-background.json"))
        let assumed = PayloadLint.lint(file)
        #expect(assumed.pushType == .background)
        #expect(assumed.check.problems.map(\.code.rawValue) == ["push-type-assumed", "priority-assumed"])
        let given = PayloadLint.lint(file, pushType: .background, topic: bundleID, priority: 5)
        #expect(given.check.problems.isEmpty)
        let priority10 = PayloadLint.lint(file, pushType: .background, priority: 10)
        #expect(priority10.isValid)
        #expect(priority10.check.warnings.map(\.code.rawValue) == ["background-priority-10"])
    }

    @Test("lint: too large is 413 PayloadTooLarge as alert, but fits as voip")
    func lintTooLarge() throws {
        let file = PayloadFile.read(try fixture("too-large.json"))
        let alert = PayloadLint.lint(file, pushType: .alert)
        #expect(!alert.isValid)
        #expect(alert.check.rejection == APNsRejection(status: 413, reason: .payloadTooLarge))
        #expect(alert.size == 4147 && alert.limit == 4096)
        let voip = PayloadLint.lint(file, pushType: .voip, topic: bundleID + ".voip")
        #expect(voip.isValid)
        #expect(voip.limit == 5120)
    }

    @Test("lint: broken JSON, bad header values and a wrong topic are rejections")
    func lintErrors() throws {
        let broken = PayloadLint.lint(PayloadFile.read(try fixture("broken.json")))
        #expect(broken.check.rejection == APNsRejection(.payloadEmpty))
        let file = PayloadFile.read(try fixture("dienst-update-background.json"))
        #expect(PayloadLint.lint(file, priority: 3).check.rejection == APNsRejection(.badPriority))
        #expect(PayloadLint.lint(file, pushType: PushType("silent")).check.rejection == APNsRejection(.invalidPushType))
        #expect(
            PayloadLint.lint(file, pushType: .voip, topic: bundleID).check.rejection == APNsRejection(.badTopic))
    }
}
