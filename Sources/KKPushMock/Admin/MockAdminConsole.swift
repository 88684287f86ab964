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
        addSavedPushRoutes(to: &router)
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
        return try await send(
            SavedPush(
                name: "", topic: input.topic, push_type: input.push_type, priority: input.priority,
                collapse_id: input.collapse_id, payload: input.payload),
            environment: input.environment, token: input.token, channelID: nil, hooks: hooks)
    }

    /// Sends `push` through the hook to `token` (or, with `channelID`, as a broadcast to that channel) on the
    /// mock's `environment` listener; answers with APNs's (the mock's) answer.
    static func send(
        _ push: SavedPush, environment environmentName: String, token: String, channelID: String?, hooks: AdminHooks
    ) async throws -> HTTPResponse {
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
        guard let environment = APNsEnvironment(lenient: environmentName), let endpoint = hooks.endpoint(environment)
        else {
            throw KKPushError(
                code: .adminEnvironment, message: "environment '\(environmentName)' is unknown.",
                fix: "Use sandbox or production.")
        }
        let token = token.trimmingCharacters(in: .whitespacesAndNewlines)
        let topic = push.topic.trimmingCharacters(in: .whitespacesAndNewlines)
        let channel = channelID?.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty || !(channel ?? "").isEmpty else {
            throw KKPushError(
                code: .adminToken, message: "token is empty.",
                fix: "Give a device token (mint one under Devices), or a channel_id to broadcast to.")
        }
        guard !topic.isEmpty else {
            throw KKPushError(
                code: .adminTopic, message: "topic is empty.", fix: "Give the app's bundle id as topic.")
        }
        if let p = push.priority, !(1...10).contains(p) {
            throw KKPushError(
                code: .adminJson, message: "priority \(p) is not 1 to 10.", fix: "Use 10 (immediate), 5 or 1.")
        }
        let pushType = push.push_type.flatMap { $0.isEmpty ? nil : $0 }
        let collapseID = push.collapse_id.flatMap { $0.isEmpty ? nil : $0 }
        let answer = await sender(
            TestPushRequest(
                environment: environment, endpoint: endpoint, token: token, topic: topic, pushType: pushType,
                priority: push.priority, collapseID: collapseID, payload: Array(push.payload.utf8),
                channelID: (channel ?? "").isEmpty ? nil : channel))
        return json(TestPushOut(answer, environment: environment))
    }

    // MARK: Saved pushes

    func addSavedPushRoutes(to router: inout HTTPRouter) {
        let hooks = self.hooks
        let saved = hooks.savedPushes
        router.get("/saved-pushes") { _ in Self.json(["saved_pushes": saved.all]) }
        router.post("/saved-pushes") { request in
            let push = try Self.decode(SavedPush.self, request.body, shape: SavedPush.shape)
            try Self.checkName(push.name)
            guard !push.topic.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw KKPushError(code: .adminTopic, message: "topic is empty.", fix: "Give the app's bundle id.")
            }
            // A push APNs would refuse wherever it is replayed is not saved (it would only fail later).
            if let problem = push.errors.first {
                throw KKPushError(
                    code: .adminSavedPushInvalid,
                    message:
                        "The push '\(push.name)' is not saved: APNs would answer \(problem.code). \(problem.message)",
                    fix: problem.fix)
            }
            guard try Self.savingFile({ try saved.save(push) }) else {
                throw Refusal(
                    status: .conflict,
                    error: KKPushError(
                        code: .adminSavedPushesFull,
                        message: "The console holds \(SavedPush.capacity) saved pushes already.",
                        fix: "Delete some (DELETE /saved-pushes/<name>) or replace one by saving under its name."))
            }
            return Self.json(push, status: .created)
        }
        router.delete("/saved-pushes/:name") { request in
            let name = request[parameter: "name"]
            guard try Self.savingFile({ try saved.remove(name) }) else { throw Self.unknownSavedPush(name) }
            return Self.json(["saved_pushes": saved.all])
        }
        router.post("/saved-pushes/:name/send") { request in
            struct ReplayIn: Decodable {
                var environment: String
                var token: String?
                var channel_id: String?
            }
            let name = request[parameter: "name"]
            let input = try Self.decode(
                ReplayIn.self, request.body, shape: .fields(["environment", "token", "channel_id"]))
            guard let push = saved.named(name) else { throw Self.unknownSavedPush(name) }
            if input.token?.isEmpty == false && input.channel_id?.isEmpty == false {
                throw KKPushError(
                    code: .adminJson, message: "Give token (a device) or channel_id (a channel), not both.",
                    fix: "Replay to one device or one channel per request.")
            }
            return try await Self.send(
                push, environment: input.environment, token: input.token ?? "", channelID: input.channel_id,
                hooks: hooks)
        }
    }

    /// A change of the saved pushes; a file that cannot be written is the mock's failure, not the request's: 500,
    /// and nothing changed (``MockSavedPushes`` keeps a change only once the file holds it).
    static func savingFile(_ change: () throws -> Bool) throws -> Bool {
        do {
            return try change()
        } catch let error as KKPushError {
            throw Refusal(status: .internalServerError, error: error)
        }
    }

    /// A saved push's name: 1 to 64 letters, digits, `.`, `_` or `-` (it is a path segment).
    static func checkName(_ name: String) throws {
        let allowed = name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || "._-".unicodeScalars.contains($0)
        }
        guard !name.isEmpty, name.count <= SavedPush.maximumNameLength, allowed else {
            throw KKPushError(
                code: .adminJson, message: "name '\(name)' is not a saved push's name.",
                fix: "Use 1 to 64 letters, digits, '.', '_' or '-' (e.g. dienst-update).")
        }
    }

    static func unknownSavedPush(_ name: String) -> Refusal {
        Refusal(
            status: .notFound,
            error: KKPushError(
                code: .adminSavedPushUnknown, message: "No push is saved as '\(name)'.",
                fix: "GET /saved-pushes lists the saved pushes."))
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
