import Foundation
import KKPushCore
import KKPushHTTP
import NIOHTTP1

/// The web console's routes on the admin API: its static files (``MockConsole``) and `POST /send`, the
/// test push it sends through the configured ``TestPushSender``.
extension MockAdminAPI {
    func addConsoleRoutes(to router: inout HTTPRouter) {
        for (path, file) in MockConsole.files {
            router.get(path) { _ in file.response() }
        }
        let hooks = self.hooks
        router.post("/send") { request in
            try await Self.sendTestPush(request, hooks: hooks)
        }
    }

    /// `POST /send`: checks the form, sends through the hook, answers with APNs's answer and, for a
    /// reason the catalogue knows, its explanation and fix.
    static func sendTestPush(_ request: HTTPRequest, hooks: AdminHooks) async throws -> HTTPResponse {
        struct SendIn: Decodable {
            var environment: String
            var token: String
            var topic: String
            var push_type: String?
            var priority: Int?
            var collapse_id: String?
            var payload: String
        }
        let input = try decode(
            SendIn.self, request.body,
            shape: .fields(["environment", "token", "topic", "push_type", "priority", "collapse_id", "payload"]))
        guard let sender = hooks.testPushSender else {
            throw Refusal(
                status: .notImplemented,
                error: KKPushError(
                    code: .adminSendUnavailable,
                    message: "This mock has no test-push sender: POST /send needs one to send through a real client.",
                    fix:
                        "Run the mock from the command line (mockServeCommand), which sends with the push client, or set MockServerConfiguration.testPushSender."
                ))
        }
        guard let environment = APNsEnvironment(lenient: input.environment), let endpoint = hooks.endpoint(environment)
        else {
            throw KKPushError(
                code: .adminEnvironment, message: "environment '\(input.environment)' is unknown.",
                fix: "Use sandbox or production.")
        }
        let token = input.token.trimmingCharacters(in: .whitespacesAndNewlines)
        let topic = input.topic.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else {
            throw KKPushError(
                code: .adminToken, message: "token is empty.", fix: "Give a device token (mint one under Devices).")
        }
        guard !topic.isEmpty else {
            throw KKPushError(
                code: .adminTopic, message: "topic is empty.", fix: "Give the app's bundle id as topic.")
        }
        if let p = input.priority, !(1...10).contains(p) {
            throw KKPushError(
                code: .adminJson, message: "priority \(p) is not 1 to 10.", fix: "Use 10 (immediate), 5 or 1.")
        }
        let pushType = input.push_type.flatMap { $0.isEmpty ? nil : $0 }
        let collapseID = input.collapse_id.flatMap { $0.isEmpty ? nil : $0 }
        let answer = await sender(
            TestPushRequest(
                environment: environment, endpoint: endpoint, token: token, topic: topic, pushType: pushType,
                priority: input.priority, collapseID: collapseID, payload: Array(input.payload.utf8)))
        return json(TestPushOut(answer, environment: environment))
    }
}

/// `POST /send`'s answer (snake_case).
struct TestPushOut: Encodable {
    var status: String
    var environment: String
    var http_status: Int?
    var reason: String?
    var apns_id: String?
    var apns_unique_id: String?
    var timestamp_ms: Int64?
    var explanation: String?
    var fix: String?
    var error: String?
    var duration_ms: Double

    init(_ a: TestPushAnswer, environment: APNsEnvironment) {
        status = a.status
        self.environment = environment.rawValue
        http_status = a.httpStatus
        reason = a.reason
        apns_id = a.apnsID
        apns_unique_id = a.apnsUniqueID
        timestamp_ms = a.timestamp?.millisecondsSince1970
        error = a.error
        duration_ms = (a.durationMilliseconds * 10).rounded() / 10
        if a.status == "rejected", let reason = a.reason {
            let r = APNsReason(rawValue: reason)
            explanation = r.explanation
            fix = r.fix
        } else if a.status == "accepted" {
            explanation = "APNs accepted the notification; it is in the delivery log under its apns-id."
        }
    }
}
