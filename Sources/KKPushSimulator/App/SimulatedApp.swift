package import Foundation
package import KKPushBackend
package import KKPushCore
package import KKPushMock
package import KantineKoning
import KantineKoningReceipts
package import Logging

/// A simulated Kantine Koning app on one phone: its build, version and hardware identifier, its
/// enrollments across tenants (each with its own device JWT from the backend), the device token the
/// mock APNs server mints for its build's environment, the token update per enrollment, and the
/// push handlers that keep `upcoming` (the single source of truth) fresh.
///
/// Observable state: ``enrollments``, ``deviceToken``, ``upcoming``, ``pendingCTA``, ``log`` (the
/// README-style token-update lines) and ``handled`` (every push and what the handlers did).
package actor SimulatedApp {
    /// A display name (`Sanne's iPhone`).
    package nonisolated let name: String
    /// The build: its scheme decides the entitlement (so the token's environment) and what it reports.
    package nonisolated let build: AppBuild
    /// `CFBundleShortVersionString`.
    package nonisolated let appVersion: String
    /// `identifierForVendor`: links the phone's enrollments.
    package nonisolated let hardwareIdentifier: UUID
    /// The bundle id (the push topic).
    package nonisolated let bundleID: String
    /// The backend client.
    package nonisolated let api: BackendAPI
    /// The app's clock: the mock's, so push latencies are measured on the clock that stamped acceptance.
    package nonisolated let clock: any WallClock
    nonisolated let logger: Logger
    nonisolated let onHandled: (@Sendable (PushHandlingResult) -> Void)?
    /// Whether the app posts push receipts (the receipt contract, `PushReceipt`) to the backend when its code runs for
    /// a push. Off by default (a choice): the fleet scenarios measure the pushes alone, and a receipt per phone would
    /// add its own load to the backend; the device-side scenarios turn it on.
    package nonisolated let postsReceipts: Bool

    /// The enrollments, in the order they were made (the first is the deprecated "primary").
    package private(set) var enrollments: [AppEnrollment] = []
    /// Enrollments kept from the app's data of an earlier identifierForVendor (a TestFlight ↔ App Store
    /// switch keeps the app's data but changes the identifier): their JWTs go with the next sync as
    /// `superseded_device_tokens`, then they are forgotten.
    package private(set) var supersededEnrollments: [AppEnrollment] = []
    /// When the app last reconciled its enrollments with the backend (the one-hour throttle).
    package private(set) var lastSyncAt: Date?
    /// The APNs device token, once registered.
    package private(set) var deviceToken: String?
    /// The environment the token belongs to (the build's `aps-environment`).
    package private(set) var tokenEnvironment: APNsEnvironment?
    /// The diensten, merged over every enrollment: the single source of truth.
    package private(set) var upcoming: [Dienst] = []
    /// How many times `upcoming` was published.
    package private(set) var publishCount = 0
    /// The call to action waiting for the user, if any.
    package private(set) var pendingCTA: PendingCTA?
    /// The app's log lines (token updates in the README's style, pushes, refreshes).
    package private(set) var log: [String] = []
    /// Every push received and what the handlers did with it, in order.
    package private(set) var handled: [PushHandlingResult] = []
    /// The handlers run for each push, in order.
    package private(set) var handlers: [any PushHandler]
    /// Every push delivered to the phone, as iOS ran the app for it: what ran the refresh, or why nothing did.
    package private(set) var deliveries: [AppDelivery] = []
    /// Alerts shown while the app was not in the foreground: no app code ran; the refresh waits for ``open()``.
    package private(set) var awaitingOpen: [ReceivedPush] = []
    /// The mock the phone is registered with (its device's state is set there).
    private var mock: MockAPNsServer?
    /// When the app decides to send a token update.
    package let tokenPolicy: TokenUpdatePolicy
    private var listener: Task<Void, Never>?
    private var lastTokenUpdateAt: Date?

    /// The handlers the app has by default: refresh the diensten on every push, store CTAs.
    package static let defaultHandlers: [any PushHandler] = [DienstenRefreshHandler(), CTAHandler()]

    /// Creates an app with no enrollments and no token yet.
    ///
    /// - Parameters:
    ///   - clock: the mock's clock (``MockServerClock``) so latencies are measured against acceptance.
    ///   - onHandled: called after each push was handled (the simulation collects results with it).
    package init(
        name: String, build: AppBuild, appVersion: String = "2.4.1", hardwareIdentifier: UUID = UUID(),
        bundleID: String = TokenUpdate.defaultBundleID, api: BackendAPI, clock: any WallClock,
        handlers: [any PushHandler] = SimulatedApp.defaultHandlers,
        tokenPolicy: TokenUpdatePolicy = TokenUpdatePolicy(),
        onHandled: (@Sendable (PushHandlingResult) -> Void)? = nil, postsReceipts: Bool = false,
        logger: Logger = Logger(label: "kkpush.simulator", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.name = name
        self.build = build
        self.appVersion = appVersion
        self.hardwareIdentifier = hardwareIdentifier
        self.bundleID = bundleID
        self.api = api
        self.clock = clock
        self.handlers = handlers
        self.tokenPolicy = tokenPolicy
        self.onHandled = onHandled
        self.postsReceipts = postsReceipts
        self.logger = logger
    }

    // MARK: Enrollment and registration

    /// Enrolls with the backend (its admin API stands in for the QR/magic-link flow) and keeps the
    /// enrollment's signed device JWT. `email` is a manager's (default `manager@<tenant>.example`); a member
    /// enrollment is sent without one, as the app asks only managers for their e-mail.
    @discardableResult
    package func enroll(_ spec: EnrollmentSpec, email: String? = nil) async throws -> AppEnrollment {
        let mail = spec.role == .manager ? (email ?? "manager@\(spec.tenant).example") : nil
        let (enrollment, jwt) = try await api.enroll(
            tenant: spec.tenant, teams: spec.teams, role: spec.role, hardwareIdentifier: hardwareIdentifier,
            email: mail, isTestUser: spec.isTestUser)
        let entry = AppEnrollment(
            tenantSlug: enrollment.tenantSlug, deviceID: enrollment.deviceID, teamCodes: enrollment.teamCodes,
            role: enrollment.role, signedDeviceToken: jwt)
        enrollments.append(entry)
        append("🏷️ Enrolled \(entry.label) → device \(entry.deviceID), JWT \(Redaction.prefix(jwt))")
        return entry
    }

    /// Registers for remote notifications: the mock mints a device token in the environment of the
    /// build's entitlement, and the app starts listening for its pushes. Returns the token.
    @discardableResult
    package func registerForRemoteNotifications(with mock: MockAPNsServer) -> String {
        listener?.cancel()
        self.mock = mock
        // Apple sets aps-environment from the provisioning profile, so the distribution decides the token.
        let environment = build.tokenEnvironment
        let device = mock.mintDevice(environment: environment, topic: bundleID)
        deviceToken = device.token
        tokenEnvironment = environment
        append(
            "📲 Registered for remote notifications: token \(Redaction.prefix(device.token)) (\(environment), aps-environment \(environment.entitlementValue))"
        )
        let stream = device.notifications
        listener = Task { [weak self] in
            for await notification in stream {
                guard let self else { return }
                _ = await self.receive(notification)
            }
        }
        return device.token
    }

    /// Sends the token update to every enrollment that needs one (``TokenUpdatePolicy``), each with
    /// **that enrollment's own JWT**, and logs each in the README's style.
    @discardableResult
    package func sendTokenUpdates() async -> [TokenUpdateAttempt] {
        guard let token = deviceToken else {
            append("⚠️ No APNs token yet: register for remote notifications first")
            return []
        }
        let now = clock.now()
        let planned = tokenPolicy.updates(token: token, enrollments: enrollments.map(\.policyState), now: now)
        var attempts: [TokenUpdateAttempt] = []
        for plan in planned {
            guard let index = enrollments.firstIndex(where: { $0.key == plan.enrollment }) else { continue }
            let enrollment = enrollments[index]
            attempts.append(await sendTokenUpdate(token: token, enrollment: enrollment, isNew: plan.isNewToken))
            if attempts.last?.succeeded == true {
                enrollments[index].lastSentToken = token
                enrollments[index].lastSentAt = clock.now()
            }
        }
        return attempts
    }

    private func sendTokenUpdate(token: String, enrollment: AppEnrollment, isNew: Bool) async -> TokenUpdateAttempt {
        let buildEnvironment = build.buildEnvironment
        let apsEnvironment = build.apsEnvironment
        // The app's own guess, exactly as the README's troubleshooting snippet: development → sandbox, else production;
        // the fixed app knows instead, from the aps-environment of its embedded profile.
        let detected: APNsEnvironment =
            apsEnvironment.flatMap(APNsEnvironment.init(entitlementValue:))
            ?? (buildEnvironment == BuildEnvironment.development ? .sandbox : .production)
        let since = lastTokenUpdateAt.map { String(format: "%.1fs", clock.now().timeIntervalSince($0)) } ?? "never"
        append("🔄 APNS Token Update Request")
        append("  → Enrollment: \(enrollment.label) (device \(enrollment.deviceID))")
        append("  → Token: \(Redaction.prefix(token))")
        append("  → Build Environment: \(buildEnvironment)")
        if let apsEnvironment { append("  → APS Environment (embedded profile): \(apsEnvironment)") }
        append("  → Detected APNS Environment: \(detected)")
        append("  → Is New Token: \(isNew)")
        append("  → Time Since Last Update: \(since)")
        append("  → Has Auth: true")
        append("  → Using auth token: \(Redaction.prefix(enrollment.signedDeviceToken))")
        let update = TokenUpdate(
            token: token, buildEnvironment: buildEnvironment, appVersion: appVersion,
            hardwareIdentifier: hardwareIdentifier.uuidString, bundleID: bundleID, platform: "ios", isNewToken: isNew,
            apsEnvironment: apsEnvironment)
        let started = ContinuousClock.now
        var attempt = TokenUpdateAttempt(
            enrollment: enrollment.key, bearerPrefix: Redaction.prefix(enrollment.signedDeviceToken), status: 0,
            seconds: 0, finalEnvironment: nil, error: nil, problemCodes: [])
        do {
            let answer = try await api.updateToken(update, bearer: enrollment.signedDeviceToken)
            attempt.status = answer.status
            attempt.finalEnvironment = answer.apnsEnvironment
            attempt.error = answer.error
            attempt.problemCodes = answer.problemCodes
        } catch let error as KKPushError {
            attempt.error = error
        } catch {
            attempt.error = KKPushError(code: .simulateRequestFailed, message: ErrorWords.describe(error))
        }
        attempt.seconds = Self.seconds(ContinuousClock.now - started)
        let took = String(format: "%.2fs", attempt.seconds)
        if attempt.succeeded {
            lastTokenUpdateAt = clock.now()
            append("✅ APNS token update SUCCESS (took \(took))")
            append("  → Final Environment: \(attempt.finalEnvironment?.rawValue ?? "unknown")")
            if !attempt.problemCodes.isEmpty {
                append("  → Backend warnings: \(attempt.problemCodes.joined(separator: ", "))")
            }
            append("  → Token cached for future comparisons")
        } else {
            append("❌ APNS token update FAILED (took \(took))")
            append("  → HTTP \(attempt.status) \(attempt.error?.code.rawValue ?? ""): \(attempt.error?.message ?? "")")
        }
        return attempt
    }

    // MARK: Foreground: tenant info refresh, then enrollment reconciliation

    /// Takes over the data the app kept on the phone from `previous` (the same app before an update that
    /// changed identifierForVendor, such as TestFlight → App Store): its enrollments become superseded ones.
    package func adoptPersistedData(of previous: SimulatedApp) async {
        let kept = await previous.enrollments + previous.supersededEnrollments
        supersededEnrollments += kept
        append(
            "💾 App data kept from \(previous.name) (identifierForVendor \(previous.hardwareIdentifier.uuidString) → \(hardwareIdentifier.uuidString)): \(kept.count) enrollment(s) now superseded: \(kept.map(\.label).joined(separator: "; "))"
        )
    }

    /// What the app does on coming to the foreground (README "Enrollment Reconciliation"): refreshes each
    /// enrollment's tenant info with that enrollment's JWT, maps its team codes against the tenant's teams,
    /// and only if both succeed (and an hour passed since the last sync) sends the sync.
    @discardableResult
    package func foreground() async -> ForegroundSync {
        var result = ForegroundSync()
        guard let caller = enrollments.first else {
            result.abortedBecause = "the app has no enrollments (nothing to sync with)"
            append("⏭️ Sync skipped: \(result.abortedBecause!)")
            return result
        }
        let now = clock.now()
        if let last = lastSyncAt, now.timeIntervalSince(last) < SyncThrottle.interval {
            result.abortedBecause =
                "throttled: last sync \(Int(now.timeIntervalSince(last))) s ago (once an hour)"
            append("⏭️ Sync skipped: \(result.abortedBecause!)")
            return result
        }
        var infos: [String: TenantInfo] = [:]
        for e in enrollments where infos[e.tenantSlug] == nil {
            do {
                let answer = try await api.tenantInfo(tenant: e.tenantSlug, bearer: e.signedDeviceToken)
                guard let info = answer.info else {
                    result.abortedBecause =
                        "tenant info refresh for \(e.tenantSlug) failed (HTTP \(answer.status) \(answer.error?.code.rawValue ?? ""))"
                    break
                }
                infos[e.tenantSlug] = info
            } catch {
                result.abortedBecause = "tenant info refresh for \(e.tenantSlug) failed (\(error))"
                break
            }
        }
        result.tenants = infos.values.sorted { $0.slug < $1.slug }
        if result.abortedBecause == nil {
            append(
                "🏟️ Tenant info refreshed: "
                    + result.tenants.map {
                        "\($0.slug) (enrollment_open \($0.enrollmentOpen), season_ended \($0.seasonEnded))"
                    }.joined(separator: ", "))
            // Team code mapping MUST succeed: a team the tenant no longer lists aborts the sync.
            for e in enrollments {
                let known = Set(infos[e.tenantSlug]?.teams ?? [])
                let unmapped = e.teamCodes.filter { !known.contains($0) }
                if !unmapped.isEmpty {
                    result.abortedBecause =
                        "team code mapping failed for \(e.label): \(unmapped.joined(separator: ", ")) not among \(e.tenantSlug)'s teams"
                    break
                }
            }
        }
        if let why = result.abortedBecause {
            append("⛔️ Enrollment sync aborted: \(why)")
            return result
        }
        let entries = enrollments.map {
            SyncEntry(
                tenantSlug: $0.tenantSlug, role: $0.role, teamCodes: $0.teamCodes,
                hardwareIdentifier: hardwareIdentifier.uuidString)
        }
        let superseded = supersededEnrollments.map(\.signedDeviceToken)
        append(
            "🔄 Enrollment sync: \(entries.count) enrollment(s) on \(hardwareIdentifier.uuidString), \(superseded.count) superseded JWT(s), auth \(Redaction.prefix(caller.signedDeviceToken))"
        )
        do {
            let response = try await api.syncEnrollments(
                entries, supersededTokens: superseded, bearer: caller.signedDeviceToken)
            result.status = response.status
            let object = response.object
            if response.isSuccess, object["synced"]?.boolValue == true {
                result.synced = true
                let summary = object["cleanup_summary"]
                result.enrollmentsRevoked = summary?["enrollments_revoked"]?.intValue ?? 0
                result.teamsRemoved = summary?["teams_removed"]?.intValue ?? 0
                result.revoked = (object["revoked"]?.arrayValue ?? []).compactMap {
                    guard let t = $0["tenant_slug"]?.stringValue, let d = $0["device_id"]?.stringValue else {
                        return nil
                    }
                    return EnrollmentKey(tenantSlug: t, deviceID: d)
                }
                lastSyncAt = now
                supersededEnrollments = []
                append(
                    "✅ Enrollment sync: \(result.enrollmentsRevoked) enrollment(s) revoked, \(result.teamsRemoved) team(s) removed"
                )
            } else {
                result.error = response.error
                append(
                    "❌ Enrollment sync FAILED: HTTP \(response.status) \(response.error?.code.rawValue ?? ""): \(response.error?.message ?? "")"
                )
            }
        } catch let error as KKPushError {
            result.error = error
            append("❌ Enrollment sync FAILED: \(error.message)")
        } catch {
            result.error = KKPushError(code: .simulateRequestFailed, message: ErrorWords.describe(error))
            append("❌ Enrollment sync FAILED: \(ErrorWords.describe(error))")
        }
        return result
    }

    // MARK: Pushes

    /// Replaces the push handlers.
    package func setHandlers(_ handlers: [any PushHandler]) { self.handlers = handlers }

    /// The app code that can refresh the diensten when iOS runs it for a push (the mock's ``AppCodeRun``): the
    /// Notification Service Extension runs in its own process and cannot refresh the app's list, so it is not one.
    static let refreshingHandlers: Set<AppCodeRun.Handler> = [.willPresent, .backgroundHandler, .pushKit]

    /// Handles one delivered notification as iOS runs the app for it (the mock's ``DeliveredNotification/appCode``):
    /// when `willPresent` (foreground), the background handler (`content-available`, within the budget) or PushKit
    /// ran, every handler runs in order; an alert shown while the app is not in the foreground waits for ``open()``;
    /// a push that ran no app code (a force-quit app, a Live Activity, the system's) runs nothing. A notification
    /// without an app-code record (made by hand) runs the handlers. The listener calls this for each push the mock
    /// delivers; tests may call it directly.
    @discardableResult
    package func receive(_ notification: DeliveredNotification) async -> PushHandlingResult {
        let push = ReceivedPush(notification: notification, receivedAt: clock.now())
        append("🔔 Push received: \(push.summary) (apns-id \(notification.apnsID.prefix(8)))")
        let code = notification.appCode
        let ran = code?.runs.first { Self.refreshingHandlers.contains($0) }
        // The Notification Service Extension runs before the alert is shown, whatever the app's state: it posts
        // `shown` with the request identifier (the apns-id).
        var posted: [AppDelivery.Receipt] = []
        if code?.runs.contains(.serviceExtension) == true, let r = await postReceipt(push, .shown, "service-extension")
        {
            posted.append(r)
        }
        if let code, ran == nil {
            var delivery = AppDelivery(
                push: push, appState: code.appState, ranBy: nil, refreshed: false, why: code.note)
            delivery.receipts = posted
            if code.onOpen {
                awaitingOpen.append(push)
                delivery.waitsForOpen = true
                append("🔕 Shown; no app code ran (app \(code.appState.rawValue)): the refresh waits until it is opened")
            } else {
                append("⏭️ No app code ran (app \(code.appState.rawValue)): \(code.note)")
            }
            deliveries.append(delivery)
            return PushHandlingResult(app: name, push: push, outcomes: [("ios", .skipped(code.note))])
        }
        let result = await runHandlers(push)
        var delivery = AppDelivery(
            push: push, appState: code?.appState, ranBy: ran?.rawValue ?? "receive",
            refreshed: result.refresh?.isComplete == true, why: code?.note ?? "delivered; the handlers ran")
        // willPresent and the background handler post after the refresh; PushKit is not a receipt handler of the
        // contract, and a notification without an app-code record (made by hand) is not one iOS delivered.
        if let ran, ran == .willPresent || ran == .backgroundHandler,
            let r = await postReceipt(push, Self.handling(result), ran.rawValue)
        {
            posted.append(r)
        }
        delivery.receipts = posted
        deliveries.append(delivery)
        return result
    }

    /// The person opens the app (taps a notification or launches it): the app comes to the foreground on the mock's
    /// device (which runs a deferred background push), and the newest alert that waited runs the handlers
    /// (`userNotificationCenter(_:didReceive:withCompletionHandler:)`); one refresh serves every alert that waited.
    /// Returns that handling, nil when no alert waited.
    @discardableResult
    package func open() async throws -> PushHandlingResult? {
        try setDeviceState(app: .foreground)
        let waiting = awaitingOpen
        awaitingOpen = []
        guard let tapped = waiting.last else {
            append("📱 Opened: no alert was waiting")
            return nil
        }
        append(
            "📱 Opened: didReceive for \(tapped.summary) (apns-id \(tapped.notification.apnsID.prefix(8))); \(waiting.count) alert(s) waited"
        )
        let result = await runHandlers(tapped)
        // didReceive runs for the notification the person tapped: it alone posts a receipt (handler on-open).
        let receipt = await postReceipt(tapped, Self.handling(result), "on-open")
        let ids = Set(waiting.map(\.notification.apnsID))
        for i in deliveries.indices where ids.contains(deliveries[i].apnsID) && deliveries[i].waitsForOpen {
            deliveries[i].ranBy = "did-receive (opened)"
            deliveries[i].refreshed = result.refresh?.isComplete == true
            deliveries[i].waitsForOpen = false
            if let receipt, deliveries[i].apnsID == tapped.notification.apnsID {
                deliveries[i].receipts.append(receipt)
            }
        }
        return result
    }

    /// Sets the phone's connectivity and its app's state on the mock's device (nil: unchanged); the mock applies
    /// them at once (a stored push is delivered on coming online, a deferred one when the app comes to the
    /// foreground). Throws if the phone is not registered.
    package func setDeviceState(connectivity: MockConnectivity? = nil, app: MockAppState? = nil) throws {
        guard let mock, let token = deviceToken else {
            throw KKPushError(
                code: .simulateRequestFailed, message: "\(name) is not registered for remote notifications.",
                fix: "Register the phone with the mock first.")
        }
        try mock.setDeviceState(token: token, connectivity: connectivity, app: app)
        let words = [connectivity.map { "\($0.rawValue)" }, app.map { "app \($0.rawValue)" }].compactMap { $0 }
        append("📶 Device: \(words.joined(separator: ", "))")
    }

    /// Waits (bounded by `timeout`) until the phone has received at least `count` pushes; false if it has not.
    package func waitForDeliveries(_ count: Int, timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while deliveries.count < count {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// What a receipt says the app did: `refreshed` when the refresh completed, `dropped` when the handlers ran and
    /// did not refresh (an unreadable push, a failed refresh).
    static func handling(_ result: PushHandlingResult) -> ReceiptHandling {
        result.refresh?.isComplete == true ? .refreshed : .dropped
    }

    /// Posts the receipt of `push` (the receipt contract) with ``PushReceiptPoster`` to the backend, with the JWT of
    /// the enrollment the push is for (its tenant's; else the first). The ids are what the handler can read: the
    /// extension, willPresent and didReceive have the request identifier (the apns-id) and the payload; a background
    /// handler has the payload's `kk_push_id` only. A choice of the simulation: a background push without
    /// `kk_push_id` (the simulated backend's dienst updates carry none) is receipted by its apns-id, which the
    /// simulated phone knows and a real handler does not. Nil when receipts are off or the phone has no enrollment.
    private func postReceipt(_ push: ReceivedPush, _ handled: ReceiptHandling, _ handler: String) async
        -> AppDelivery.Receipt?
    {
        guard postsReceipts, !enrollments.isEmpty, let url = URL(string: api.baseURL) else { return nil }
        var tenant: String?
        if case .dienstUpdate(let t, _) = push.kind { tenant = t }
        let enrollment = enrollments.first { $0.tenantSlug == tenant } ?? enrollments[0]
        let pushID = PushReceipt.pushID(inPayload: Array(push.notification.payload.utf8))
        let apnsID = push.notification.apnsID.lowercased()
        let receipt = AppPushReceipt(
            apnsID: handler == "background-handler" && pushID != nil ? nil : apnsID, pushID: pushID,
            receivedAt: push.receivedAt, handled: handled, handledAt: max(clock.now(), push.receivedAt),
            handler: handler, appVersion: appVersion)
        var recorded = AppDelivery.Receipt(handled: handled.rawValue, handler: handler, error: nil)
        do {
            _ = try await PushReceiptPoster(backend: url, deviceJWT: enrollment.signedDeviceToken).post(receipt)
            append("🧾 Receipt posted: \(handled.rawValue) by \(handler) (apns-id \(apnsID.prefix(8)))")
        } catch {
            recorded.error = "\(error)"
            append("❌ Receipt FAILED: \(handled.rawValue) by \(handler): \(error)")
        }
        return recorded
    }

    /// Runs every handler for `push`, in order, and records the result.
    private func runHandlers(_ push: ReceivedPush) async -> PushHandlingResult {
        var outcomes: [(handler: String, outcome: HandlerOutcome)] = []
        for handler in handlers {
            let outcome = await handler.handle(push, in: self)
            outcomes.append((handler.name, outcome))
            switch outcome {
            case .refreshed(let r):
                let latency = r.latency.map { String(format: "%.1f ms", $0 * 1000) } ?? "-"
                let failed =
                    r.failedTenants.isEmpty
                    ? ""
                    : "; FAILED: \(r.requests.filter { !$0.succeeded }.map { "\($0.tenant) \($0.status) \($0.errorCode ?? "")" }.joined(separator: ", "))"
                append(
                    "🔄 \(handler.name): \(r.requests.count) request(s), tenants \(r.tenants.joined(separator: ", ")) → \(r.dienstenCount) diensten in \(latency)\(failed)"
                )
            case .storedCTA(let cta):
                append("📌 Pending CTA stored: kantinekoning://cta/shift-volunteer?token=\(Redaction.prefix(cta.token))")
            case .skipped:
                break
            }
        }
        let result = PushHandlingResult(app: name, push: push, outcomes: outcomes)
        handled.append(result)
        onHandled?(result)
        return result
    }

    /// Refreshes the diensten by hand (README: `refreshDiensten()`), with the correct per-enrollment JWTs.
    @discardableResult
    package func refreshDiensten() async -> RefreshResult {
        await DienstenRefreshHandler().refresh(app: self, push: nil)
    }

    /// Publishes a new `upcoming` list (handlers call this).
    package func publish(upcoming diensten: [Dienst]) {
        upcoming = diensten
        publishCount += 1
    }

    /// Stores a pending CTA (handlers call this).
    package func storePendingCTA(_ cta: PendingCTA) { pendingCTA = cta }

    /// Clears the pending CTA (the user acted on it).
    package func clearPendingCTA() { pendingCTA = nil }

    /// Stops listening for pushes.
    package func stop() {
        listener?.cancel()
        listener = nil
    }

    private func append(_ line: String) {
        log.append(line)
        logger.info("\(line)", metadata: ["app": "\(name)", "category": "push"])
    }

    static func seconds(_ d: Duration) -> TimeInterval { d.seconds }
}
