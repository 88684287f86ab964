import Foundation
import KKPushClient
import KKPushCore
import KKPushQueue
import Testing

/// The rule from a push's outcome to its queue row's next state (`QueueVerdict`), case by case, with no database.
struct QueueVerdictTests {
    static let row = QueuedPush(
        id: 7, deviceToken: String(repeating: "ab", count: 32), topic: "nl.kantinekoning.app", pushType: "alert",
        priority: 10, payload: "{}", environment: .sandbox, credential: nil, collapseID: nil, expiration: nil,
        attempts: 2, possiblyDuplicated: false)

    static func outcome(_ result: PushOutcome.Result, attempts: Int = 1, duplicated: Bool = false) -> PushOutcome {
        PushOutcome(
            result: result, duration: .milliseconds(3), attempts: attempts, possiblyDuplicated: duplicated,
            endpoint: .apple(.sandbox))
    }

    static func decide(_ outcome: PushOutcome, attempts: Int = 2, max: Int = 5) -> QueueVerdict {
        var row = Self.row
        row.attempts = attempts
        return QueueVerdict.decide(
            row: row, outcome: outcome, maxAttempts: max, backoff: .init(base: 1, maximum: 300), worker: "w",
            jitter: 1)
    }

    @Test("Accepted keeps the apns-id; a 410 is rejected with Apple's reason and timestamp")
    func finalStates() {
        let accepted = Self.decide(Self.outcome(.accepted(apnsID: "A-1", apnsUniqueID: nil)))
        #expect(accepted.write.state == "accepted" && accepted.write.apnsID == "A-1" && accepted.outcome == "accepted")
        let gone = Date(timeIntervalSince1970: 1_800_000_000)
        let rejected = Self.decide(
            Self.outcome(.rejected(PushRejection(status: 410, reason: .unregistered, timestamp: gone))))
        #expect(rejected.write.state == "rejected" && rejected.write.status == 410)
        #expect(rejected.write.reason == "Unregistered")
        #expect(rejected.write.apnsTimestamp == "2027-01-15T08:00:00.000Z")
    }

    @Test("429, 5xx and transport failures retry after a doubling back-off, then end dead at the last claim")
    func retries() {
        for result in [
            PushOutcome.Result.rejected(PushRejection(status: 429, reason: .tooManyRequests)),
            .rejected(PushRejection(status: 503, reason: .serviceUnavailable)),
            .failed(PushFailure(kind: .timeout, message: "no answer")),
        ] {
            let retry = Self.decide(Self.outcome(result), attempts: 3)
            #expect(retry.write.state == "retry" && retry.write.delay == 4 && retry.outcome == "retry")
            let dead = Self.decide(Self.outcome(result), attempts: 5)
            #expect(dead.write.state == "dead" && dead.write.delay == nil && dead.outcome == "dead")
        }
        #expect(QueueVerdict.Backoff(base: 1, maximum: 300).delay(claims: 20) == 300)
    }

    @Test("Interrupted: unsent goes back without counting the claim; possibly sent goes back flagged")
    func interrupted() {
        let unsent = Self.decide(
            Self.outcome(.failed(PushFailure(kind: .interrupted, message: "stopped")), attempts: 0))
        #expect(unsent.write.state == "retry" && unsent.write.attemptsDelta == -1 && !unsent.write.duplicated)
        #expect(unsent.outcome == "returned" && unsent.write.delay == nil)
        let sent = Self.decide(
            Self.outcome(.failed(PushFailure(kind: .interrupted, message: "stopped")), attempts: 1, duplicated: true))
        #expect(
            sent.write.attemptsDelta == 0 && sent.write.duplicated
                && sent.write.event["possibly_duplicated"] == .bool(true))
        let preflight = Self.decide(Self.outcome(.failed(PushFailure(kind: .preflight, message: "BadTopic"))))
        #expect(preflight.write.state == "rejected" && preflight.write.reason == "preflight")
    }
}

/// The answers about a worker's own configuration (`QueueVerdict.isConfiguration`): held, never ended.
struct QueueVerdictConfigurationTests {
    @Test(
        "A credential APNs refuses, a credential the router refuses, no endpoint: held, claim not counted, at any claim"
    )
    func configurationHeld() {
        let reasons: [APNsReason] = [
            .invalidProviderToken, .missingProviderToken, .expiredProviderToken, .badCertificate,
            .badCertificateEnvironment, .forbidden, .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken,
            .unrelatedKeyIdInToken,
        ]
        var results = reasons.map { PushOutcome.Result.rejected(PushRejection(status: 403, reason: $0)) }
        results.append(.failed(PushFailure(kind: .credential, message: "credential-topic: out of scope")))
        results.append(.failed(PushFailure(kind: .client, message: "No endpoint for production rows")))
        for result in results {
            // At the last claim too: the row never ends rejected or dead for the worker's configuration.
            for attempts in [1, 5] {
                var row = QueueVerdictTests.row
                row.attempts = attempts
                let v = QueueVerdict.decide(
                    row: row, outcome: QueueVerdictTests.outcome(result), maxAttempts: 5, backoff: .init(),
                    worker: "w", jitter: 1, heldDelay: 2)
                #expect(v.write.state == "retry" && v.outcome == "held", "\(result)")
                #expect(v.write.attemptsDelta == -1 && v.write.delay == 2, "\(result)")
                #expect(v.write.event["claim_counted"] == .bool(false))
            }
        }
        // The push's own faults still end it.
        let topic = QueueVerdictTests.decide(
            QueueVerdictTests.outcome(.rejected(PushRejection(status: 400, reason: .badDeviceToken))))
        #expect(topic.write.state == "rejected")
    }

    @Test("A flagged row accepted may be a second copy; an unflagged one is not")
    func duplicates() {
        var flagged = QueueVerdictTests.row
        flagged.possiblyDuplicated = true
        let accepted = QueueVerdictTests.outcome(.accepted(apnsID: "A", apnsUniqueID: nil))
        let copy = QueueVerdict.decide(row: flagged, outcome: accepted, maxAttempts: 5, backoff: .init(), worker: "w")
        #expect(copy.mayHaveDuplicated)
        let plain = QueueVerdict.decide(
            row: QueueVerdictTests.row, outcome: accepted, maxAttempts: 5, backoff: .init(), worker: "w")
        #expect(!plain.mayHaveDuplicated)
    }
}
