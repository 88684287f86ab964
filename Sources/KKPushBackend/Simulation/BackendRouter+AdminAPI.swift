import Foundation
import KKPushAuth
import KKPushCore
import KKPushHTTP
import KKPushStore
import KantineKoning
import Logging
import NIOHTTP1

/// The admin API: enrollments made over HTTP and dienst changes that fan out as pushes.
extension BackendRouter {
    // MARK: - Admin

    func enroll(_ request: BackendRequest) async throws -> BackendResponse {
        let example =
            "{\"tenant_slug\": \"vvwilhelmus\", \"team_codes\": [\"JO11-3\"], \"role\": \"member\", \"hardware_identifier\": \"<UUID>\"}"
        var body: JSONBody
        switch JSONBody.parse(request.body, what: "The enrollment body", example: example) {
        case .failure(let e): return e.response
        case .success(let b): body = b
        }
        body.checkKnown([
            "tenant_slug", "team_codes", "role", "hardware_identifier", "device_id", "is_test_user",
            "team_manager_email", "replace",
        ])
        let tenant = body.string("tenant_slug", required: true, example: "\"vvwilhelmus\"")
        if let tenant, let problem = EnrollmentIdentifiers.problem(tenant, field: "tenant_slug") {
            body.problems.append(problem)
        }
        let hardware = body.string("hardware_identifier", required: true, example: "identifierForVendor's UUID string")
        let roleText = body.string("role", required: true, example: "\"manager\" or \"member\"")
        let teams = body.stringArray("team_codes", required: true, example: "[\"JO11-3\"]")
        if let teams, let problem = EnrollmentIdentifiers.teamCodesProblem(teams, field: "team_codes") {
            body.problems.append(problem)
        }
        let deviceIDGiven = body.string(
            "device_id", required: false, example: "\"dev-1234\", or leave it out for a new one")
        if let deviceIDGiven, let problem = EnrollmentIdentifiers.problem(deviceIDGiven, field: "device_id") {
            body.problems.append(problem)
        }
        let isTestUser = body.bool("is_test_user") ?? false
        let replace = body.bool("replace") ?? false
        let email = body.string("team_manager_email", required: false, example: "\"jan@example.nl\" (managers only)")
        var problems = body.problems
        let role = roleText.flatMap(EnrollmentRole.init(rawValue:))
        if let roleText, role == nil {
            problems.append(
                Problem(
                    .error, code: .invalidRole, message: "role \"\(roleText)\" is not one of: manager, member.",
                    fix: "Send role \"manager\" or \"member\"."))
        }
        if let hardware, UUID(uuidString: hardware) == nil {
            problems.append(
                Problem(
                    .error, code: .hardwareIdentifierNotUuid,
                    message: "hardware_identifier \"\(hardware)\" is not a UUID.",
                    fix: "Send identifierForVendor's UUID string, nothing concatenated."))
        }
        if let email,
            let problem = EnrollmentEmail.problem(
                email, role: role, field: "team_manager_email", roleField: "role \"manager\"")
        {
            problems.append(problem)
        }
        if role == .manager && (email ?? "").isEmpty {
            problems.append(
                Problem(
                    .warning, code: .managerWithoutEmail,
                    message: "A manager enrollment without team_manager_email.",
                    fix: "Send the manager's verified e-mail."))
        }
        guard !problems.hasErrors, let tenant, let hardware, let role, let teams else {
            return .error(
                problems.errors.first?.code == .wrongType ? 400 : 422,
                code: problems.errors.first?.code.rawValue ?? "invalid", message: problems.errors.first?.message ?? "",
                fix: problems.errors.first?.fix ?? "", problems: problems)
        }
        let deviceID = deviceIDGiven ?? "dev-" + UUID().uuidString.lowercased().prefix(12)
        let requested = Enrollment(
            deviceID: deviceID, tenantSlug: tenant, teamCodes: teams, role: role, hardwareIdentifier: hardware,
            isTestUser: isTestUser, status: .active, teamManagerEmail: email, updatedAt: clock.now())
        // One change: replacing an existing device_id (only with "replace": true) bumps its generation (its
        // older JWTs are refused from then on), and the JWT is signed with it before the write commits.
        let jwt = self.jwt
        let outcome: EnrollOutcome
        do {
            let store = self.store
            outcome = try await metrics.timed("enroll") {
                try await store.enroll(requested, replacing: replace) { try jwt.issue(for: $0) }
            }
        } catch let exists as EnrollmentExistsError {
            return .error(
                409, code: "enrollment-exists",
                message: "Enrollment \(exists.existing.id) already exists (\(exists.held)); nothing was changed.",
                fix:
                    "Send \"replace\": true to replace it (its apns_token, build_environment and app_version are cleared until the app's next token update, and its older JWTs are refused), or leave out device_id for a new enrollment."
            )
        }
        let enrollment = outcome.enrollment
        logger.info(
            "enrolled",
            metadata: [
                "enrollment": "\(enrollment.id)", "jwt": "\(DeviceJWT.redacted(outcome.token))",
                "replaced": "\(outcome.replaced != nil)",
            ])
        var answer: [String: JSONValue] = [
            "enrollment": JSONWriter.value(enrollment), "signed_device_token": .string(outcome.token),
            "problems": .array(problems.map(problemValue)), "replaced": outcome.replaced.map(JSONWriter.value) ?? .null,
        ]
        if outcome.replaced != nil {
            answer["note"] = .string("Replaced the enrollment \(enrollment.id) that had the same device_id.")
        }
        return .json(201, answer)
    }

    func changeDienst(id: String, _ request: BackendRequest) async throws -> BackendResponse {
        guard var dienst = await diensten.dienst(id: id) else {
            return .error(
                404, code: "dienst-not-found", message: "No dienst '\(id)'.", fix: "GET /admin/diensten lists them.")
        }
        var body = JSONBody(object: [:])
        if !request.body.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            let example =
                "{\"volunteers\": [\"Jan\"], \"start_time\": \"2027-03-01T09:00:00Z\", \"end_time\": ..., \"location\": ..., \"title\": ...}"
            switch JSONBody.parse(request.body, what: "The dienst change", example: example) {
            case .failure(let e): return e.response
            case .success(let b): body = b
            }
        }
        body.checkKnown(["volunteers", "start_time", "end_time", "location", "title"])
        if let names = body.stringArray(
            "volunteers", required: false, example: "[\"Jan\", \"Piet\"] ([] for none)", allowEmpty: true)
        {
            body.problems += Dienst.volunteerProblems(names)
            dienst.volunteers = names.map { $0.trimmingWhitespace() }
        }
        for (key, path, code) in [
            ("start_time", \Dienst.startTime, Problem.Code.invalidStartTime),
            ("end_time", \Dienst.endTime, .invalidEndTime),
        ] {
            guard let text = body.string(key, required: false, example: "\"2027-03-01T09:00:00Z\"") else { continue }
            if let date = Enrollment.parseDate(text) {
                dienst[keyPath: path] = date
            } else {
                body.problems.append(
                    Problem(
                        .error, code: code,
                        message: "\(key) \"\(text)\" is not an ISO 8601 date.",
                        fix: "Send, for example, \"2027-03-01T09:00:00Z\"."))
            }
        }
        if let location = body.string("location", required: false, example: "\"Sportpark\"") {
            dienst.location = location
        }
        if let title = body.string("title", required: false, example: "\"Kantinedienst\"") { dienst.title = title }
        var problems = body.problems
        if !problems.hasErrors, dienst.endTime <= dienst.startTime {
            problems.append(
                Problem(
                    .error, code: .dienstEndsBeforeStart, message: "end_time is not after start_time.",
                    fix: "Give an end after the start."))
        }
        if problems.hasErrors {
            return .error(
                problems.errors[0].code == .wrongType ? 400 : 422, code: problems.errors[0].code.rawValue,
                message: problems.errors[0].message, fix: problems.errors[0].fix, problems: problems)
        }
        await diensten.put(dienst)
        guard let sender else {
            return .json(
                200,
                [
                    "dienst": dienst.jsonValue, "fan_out": .null,
                    "note": .string("No push sender configured: no pushes were sent."),
                ])
        }
        let fanOut = TeamFanOut(
            store: store, sender: sender, settings: settings, clock: clock, logger: logger, metrics: metrics)
        let bundleID = self.bundleID
        let tenant = dienst.tenantSlug
        let dienstID = dienst.id
        let report = try await fanOut.send(tenant: tenant, team: dienst.teamCode) { token in
            // Validated above (seed and stored ids); a failure here falls back to an empty payload that
            // the client's pre-flight rejects, which is reported per device.
            (try? KantineKoningPush.dienstUpdateRequest(
                deviceToken: token, bundleID: bundleID, tenant: tenant, dienstID: dienstID))
                ?? NotificationRequest(deviceToken: token, topic: bundleID, payload: [])
        }
        return .json(200, ["dienst": dienst.jsonValue, "fan_out": fanOutValue(report)])
    }
}

func fanOutValue(_ report: FanOutReport) -> JSONValue {
    .object([
        "tenant": .string(report.tenant), "team_code": .string(report.team),
        "enrollments": .int(report.enrollmentCount),
        "pushes": .int(report.deliveries.count), "accepted": .int(report.accepted), "rejected": .int(report.rejected),
        "failed": .int(report.failed),
        "deliveries": .array(
            report.deliveries.map { d -> JSONValue in
                var o: [String: JSONValue] = [
                    "token": .string(d.token), "environment": .string(d.environment.rawValue),
                    "device_ids": .strings(d.deviceIDs),
                    "result": .string(d.delivery.label), "cleared_enrollments": .int(d.clearedEnrollments),
                    "problems": .array(d.problems.map(problemValue)),
                ]
                switch d.delivery {
                case .accepted(let id): o["apns_id"] = .optional(id)
                case .rejected(let status, let reason, let timestamp):
                    o["status"] = .int(status)
                    o["reason"] = .string(reason.rawValue)
                    o["timestamp"] = .optional(timestamp.map(Enrollment.formatDate))
                case .failed(let message): o["message"] = .string(message)
                }
                return .object(o)
            }),
    ])
}
