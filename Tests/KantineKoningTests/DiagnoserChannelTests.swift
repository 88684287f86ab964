import Foundation
import KKPushCore
import KantineKoning
import Testing

/// A broadcast diagnosed (`diagnose --channel`): the broadcast rules instead of the device-push ones, what the
/// channel-management hosts said of the channel, and the root cause when several things are wrong.
@Suite("Diagnoser: broadcasts and channels")
struct DiagnoserChannelTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let id = "dHN0LXNyY2gtY2hubA=="
    static let missing = DiagnosisFacts.ChannelAnswer.rejected(status: 400, reason: .channelNotRegistered)

    static func facts(
        env: APNsEnvironment = .production, topic: String = "nl.kantinekoning.app", channelID: String = id,
        sandbox: DiagnosisFacts.ChannelAnswer? = nil, production: DiagnosisFacts.ChannelAnswer? = nil,
        expiration: Int? = nil
    ) -> DiagnosisFacts {
        var f = DiagnosisFacts(now: now)
        f.sendEnvironment = env
        f.topic = topic
        f.pushType = "liveactivity"
        f.expiration = expiration
        f.payload = Array(#"{"aps":{"event":"update","timestamp":1800000000,"content-state":{"open":2}}}"#.utf8)
        f.channel = DiagnosisFacts.Channel(id: channelID, sandbox: sandbox, production: production)
        return f
    }

    static func codes(_ d: Diagnosis) -> [String] { d.findings.filter { $0.severity == .error }.map(\.code.rawValue) }

    @Test("a healthy broadcast: no finding, and none of the device-push topic rules")
    func healthy() {
        let d = Diagnoser.diagnose(Self.facts(sandbox: Self.missing, production: .exists(storagePolicy: 1)))
        #expect(d.verdict == nil, "\(d.findings)")
        #expect(!d.findings.contains { $0.code == DiagnosisCode.topicSuffix })
        // 4,500 bytes fits a broadcast (5120), though not a device push (4096).
        var big = Self.facts(sandbox: Self.missing, production: .exists(storagePolicy: 1))
        big.payload = Array(
            #"{"aps":{"event":"update","timestamp":1,"content-state":{"x":"\#(String(repeating: "a", count: 4450))"}}}"#
                .utf8)
        #expect(Diagnoser.diagnose(big).verdict == nil)
        big.payload = Array(#"{"aps":{"content-state":{"x":"\#(String(repeating: "a", count: 5200))"}}}"#.utf8)
        #expect(Diagnoser.diagnose(big).verdict?.code == DiagnosisCode.payloadInvalid)
    }

    @Test("the channel in the other environment; in neither; its fix names the environment that has it")
    func environments() throws {
        let other = Diagnoser.diagnose(Self.facts(sandbox: .exists(storagePolicy: 0), production: Self.missing))
        let v = try #require(other.verdict)
        #expect(v.code == DiagnosisCode.channelOtherEnvironment)
        #expect(
            v.message.contains("exists in sandbox") && v.fix.contains("through the sandbox host (env)") && v.confirmed)
        let neither = Diagnoser.diagnose(Self.facts(sandbox: Self.missing, production: Self.missing))
        #expect(neither.verdict?.code == DiagnosisCode.channelNotRegistered)
        #expect(neither.verdict?.message.contains("nor in sandbox") == true)
    }

    @Test("an expiration on a policy-0 channel: an error when read, a note when not")
    func expiration() {
        let read = Diagnoser.diagnose(
            Self.facts(sandbox: Self.missing, production: .exists(storagePolicy: 0), expiration: 1_900_000_000))
        #expect(read.verdict?.code == DiagnosisCode.channelExpirationNoStorage)
        let kept = Diagnoser.diagnose(
            Self.facts(sandbox: Self.missing, production: .exists(storagePolicy: 1), expiration: 1_900_000_000))
        #expect(kept.verdict == nil)
        let unread = Diagnoser.diagnose(Self.facts(expiration: 1_900_000_000))
        #expect(unread.verdict == nil)
        #expect(
            unread.findings.contains { $0.code == DiagnosisCode.channelExpirationNoStorage && $0.severity == .info })
    }

    @Test("several wrong at once: the verdict is the root cause, every error still listed")
    func pairs() {
        // A suffixed bundle id is refused before the channel is looked up.
        let suffixed = Diagnoser.diagnose(
            Self.facts(
                topic: "nl.kantinekoning.app.push-type.liveactivity", sandbox: Self.missing, production: Self.missing))
        #expect(suffixed.verdict?.code == DiagnosisCode.channelTopicSuffixed)
        #expect(Self.codes(suffixed).contains(DiagnosisCode.channelNotRegistered.rawValue))
        #expect(suffixed.verdict?.fix.contains("\"nl.kantinekoning.app\" as the topic (topic)") == true)
        // A malformed id before the lookup's answer.
        let malformed = Diagnoser.diagnose(
            Self.facts(channelID: "not base64!", sandbox: Self.missing, production: Self.missing))
        #expect(malformed.verdict?.code == DiagnosisCode.channelIDInvalid)
        // The other environment before the policy of the channel there.
        let both = Diagnoser.diagnose(
            Self.facts(sandbox: .exists(storagePolicy: 0), production: Self.missing, expiration: 1_900_000_000))
        #expect(both.verdict?.code == DiagnosisCode.channelOtherEnvironment)
        // A refused credential before the channel's state.
        let refused = Diagnoser.diagnose(
            Self.facts(
                sandbox: .rejected(status: 403, reason: .invalidProviderToken),
                production: .rejected(status: 403, reason: .invalidProviderToken)))
        #expect(refused.verdict?.code == DiagnosisCode.channelRejected)
        // No answer: inconclusive.
        let silent = Diagnoser.diagnose(
            Self.facts(sandbox: .failed(message: "timed out"), production: .failed(message: "timed out")))
        #expect(silent.inconclusive)
        // A push type APNs refuses on a broadcast, on a channel that is fine.
        var typed = Self.facts(sandbox: Self.missing, production: .exists(storagePolicy: 1))
        typed.pushType = "alert"
        let wrongType = Diagnoser.diagnose(typed)
        #expect(wrongType.verdict?.code == DiagnosisCode.requestInvalid)
        #expect(wrongType.verdict?.why.contains("InvalidPushType") == true)
    }
}
