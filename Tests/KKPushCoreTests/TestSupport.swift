import Foundation
import KKPushCore
import KKPushTestSupport

/// How the mock judges a request, stage by stage, stopping at the first rejection (the mock issue
/// does authentication between stage 2 and 4; here authentication is given as accepted).
func judgeLikeMock(_ received: ReceivedRequest, authentication: AuthenticationKind) -> (
    rejection: APNsRejection?, problems: [Problem]
) {
    let (request, lineCheck) = APNsRequestRules.checkRequestLine(received)
    if let rejection = lineCheck.rejection { return (rejection, lineCheck.problems) }
    guard let request else { return (nil, lineCheck.problems) }
    let topicCheck: RequestCheck
    switch authentication {
    case .token:
        topicCheck = APNsRequestRules.checkTopicAndToken(
            request, topicRequired: true, allowedTopics: nil, usingCertificate: false)
    case .certificate(let topics):
        topicCheck = APNsRequestRules.checkTopicAndToken(
            request, topicRequired: (topics?.count ?? 1) > 1, allowedTopics: topics, usingCertificate: true)
    }
    if let rejection = topicCheck.rejection { return (rejection, lineCheck.problems + topicCheck.problems) }
    let payloadCheck = APNsRequestRules.checkPayload(request)
    return (payloadCheck.rejection, lineCheck.problems + topicCheck.problems + payloadCheck.problems)
}

/// A JSON payload of exactly `size` bytes: `{"aps":{"alert":"xxx…"}}`.
func alertPayload(ofSize size: Int) -> [UInt8] {
    let overhead = Array(#"{"aps":{"alert":""}}"#.utf8).count
    precondition(size >= overhead)
    let bytes =
        Array(#"{"aps":{"alert":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: size - overhead)
        + Array(#""}}"#.utf8)
    return bytes
}

/// The directory of this test file's fixtures.
let fixturesDirectory = Repository.file("Tests/KKPushCoreTests/.fixtures")

/// The bytes of a fixture file.
func fixture(_ name: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: fixturesDirectory.appendingPathComponent(name)))
}
