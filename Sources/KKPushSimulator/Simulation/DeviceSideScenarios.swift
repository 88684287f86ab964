import Foundation
import KKPushBackend
import KKPushClient
import KKPushCore
import KKPushMock
import KantineKoning
import KantineKoningReceipts

/// The scenarios after APNs answers 200: the phone's connectivity and its app's state decide what a push does, as
/// Apple documents it and the mock's device side applies it (see the guide "After APNs accepts a push"). Each runs
/// one phone (a Release build, VV Wilhelmus member JO11-3) against the real mock, client and backend; the dienst
/// changes go through the backend (its background push), the other pushes (an alert, an expiration, a collapse id)
/// through the same APNs client the backend sends with. Each says what the backend should have sent instead.
enum DeviceSideScenarios {
    static let sendingPage =
        "Apple, \"Sending notification requests to APNs\" (developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns)"
    static let backgroundPage =
        "Apple, \"Pushing background updates to your App\" (developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app)"

    static let phone = EnrollmentSpec(tenant: "vvwilhelmus", teams: ["JO11-3"], role: .member)

    static func makePhone(_ world: SimulationWorld) async throws -> SimulatedApp {
        try await world.makeApp(
            name: "Ouder JO11-3", build: AppBuild(scheme: .release), enrollments: [phone], postsReceipts: true)
    }

    /// Sends `payload` to `app` through the backend's APNs client; returns the apns-id (lowercase).
    static func send(
        _ world: SimulationWorld, to app: SimulatedApp, _ payload: Payload, type: PushType, priority: Int,
        expiration: Int? = nil, collapseID: String? = nil
    ) async throws -> String {
        let token = await app.deviceToken ?? ""
        let request = NotificationRequest(
            deviceToken: token, topic: app.bundleID, pushType: type, priority: priority, expiration: expiration,
            collapseID: collapseID, payload: payload.encoded())
        let outcome = await world.client.send(request, environment: app.build.tokenEnvironment)
        guard case .accepted(let id?, _) = outcome.result else {
            throw KKPushError(
                code: .simulateRequestFailed, message: "The mock did not accept the \(type) push: \(outcome.result).",
                fix: "See the mock's rejection log.")
        }
        return id.lowercased()
    }

    /// The next two diensten of JO11-3.
    static func diensten(_ world: SimulationWorld) async throws -> [Dienst] {
        let now = Date()
        return try await world.api.allDiensten()
            .filter { $0.tenantSlug == phone.tenant && $0.teamCode == "JO11-3" && $0.startTime > now }
            .sorted { $0.startTime < $1.startTime }
    }

    /// What the phone got, one line per push APNs accepted: its headers, its delivery state (the mock's) and what
    /// the app did (what ran the refresh, or why nothing did), then the receipts the backend got for it (the app posts
    /// one only when its code ran); and the same as `facts` (`receipts`: `handled` and `handler` of each, as the
    /// backend recorded them).
    static func phoneReport(_ world: SimulationWorld, _ app: SimulatedApp) async -> (lines: [String], facts: JSONValue)
    {
        let token = await app.deviceToken ?? ""
        let entries = world.mock.deliveries(token: token)
        let onPhone = await app.deliveries
        let recorded = await world.backend.router.receipts.all()
        var lines = ["\(app.name): \(entries.count) push(es) accepted by APNs"]
        var facts: [JSONValue] = []
        for e in entries {
            let d = onPhone.last { $0.apnsID == e.apnsID }
            var head = "\(e.pushType ?? "none")/\(e.priority)"
            if let x = e.expiration { head += " expiration \(x)" }
            if let c = e.collapseID { head += " collapse-id \(c)" }
            let detail = e.history.last?.detail.map { " (\($0))" } ?? ""
            lines.append(
                "  \(e.apnsID.prefix(8)) \(head): \(e.state.rawValue)\(detail) → \(d?.outcome ?? (e.state.isHeld ? "not on the phone yet" : "never on the phone"))"
            )
            let pushID = PushReceipt.pushID(inPayload: Array(e.payload.utf8))
            let got = recorded.filter {
                $0.receipt.apnsID == e.apnsID.lowercased() || (pushID != nil && $0.receipt.pushID == pushID)
            }
            let said = got.map { "\($0.receipt.handled.rawValue) (\($0.receipt.handler ?? "no handler"))" }
            let failed = (d?.receipts ?? []).compactMap { r in r.error.map { "\(r.handler): \($0)" } }
            lines.append(
                "    receipts the backend got: \(said.isEmpty ? "none (no app code ran for it)" : said.joined(separator: ", "))\(failed.isEmpty ? "" : "; not recorded: \(failed.joined(separator: "; "))")"
            )
            facts.append([
                "apns_id": .string(e.apnsID), "push_type": JSONValue(e.pushType), "priority": .int(e.priority),
                "state": .string(e.state.rawValue), "ran_by": JSONValue(d?.ranBy),
                "refreshed": .bool(d?.refreshed == true), "waits_for_open": .bool(d?.waitsForOpen == true),
                "receipts": .array(
                    got.map {
                        ["handled": .string($0.receipt.handled.rawValue), "handler": JSONValue($0.receipt.handler)]
                    }
                ),
            ])
        }
        return (lines, .array(facts))
    }

    static func state(_ world: SimulationWorld, _ apnsID: String) -> DeliveryState? {
        world.mock.delivery(apnsID: apnsID)?.state
    }

    // MARK: The scenarios

    /// Four dienst changes in a row to a phone whose app is in the background: the backend's background pushes
    /// (content-available, priority 5) run three times, the fourth waits for the budget, and runs when the app opens.
    static func silentPushThrottled(_ c: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: c) { world in
            let app = try await makePhone(world)
            try await app.setDeviceState(app: .background)
            var accepted = 0
            for volunteer in ["Sanne", "Ahmed", "Noor", "Daan"] {
                accepted += try await world.changeNextDienst(
                    tenant: "vvwilhelmus", team: "JO11-3", volunteer: volunteer
                )
                .accepted
            }
            let budget = world.mock.deviceRules.backgroundBudget
            _ = await app.waitForDeliveries(budget, timeout: c.timeout)
            let token = await app.deviceToken ?? ""
            let deferred = world.mock.deliveries(token: token).filter { $0.state == .deferredBackgroundBudget }
            let inBackground = await app.deliveries.filter { $0.ranBy == "background-handler" && $0.refreshed }.count
            let before = await phoneReport(world, app)
            try await app.open()
            let ranOnOpen = await app.waitForDeliveries(budget + 1, timeout: c.timeout)
            let after = await phoneReport(world, app)
            let lastRefreshed = await app.deliveries.last?.refreshed == true
            let reproduced =
                accepted == 4 && inBackground == budget && deferred.count == 1 && ranOnOpen && lastRefreshed
            return ScenarioOutcome(
                scenario: .silentPushThrottled, reproduced: reproduced,
                expected:
                    "4 background pushes in a row to an app in the background: \(budget) run the refresh, the 4th is 'deferred: background budget' and runs only when the app comes to the foreground",
                observed:
                    "\(accepted)/4 accepted by APNs; \(inBackground) refreshed in the background; \(deferred.count) deferred: background budget; after opening the app: \(ranOnOpen && lastRefreshed ? "the deferred push ran and refreshed" : "the deferred push did not run")",
                why:
                    "APNs accepts every push, but the device throttles background pushes: \"don't try to send more than two or three per hour\" (\(backgroundPage)). The mock's budget is \(budget) per hour (a choice: Apple gives no exact number).",
                fix:
                    "Send fewer silent pushes: at most two or three background pushes (content-available: 1, apns-push-type background, apns-priority 5) per device per hour, one for several dienst changes; send an alert for a change the person must see at once.",
                details: ["phone: app in the background, online"] + before.lines + ["after the person opens the app:"]
                    + Array(after.lines.dropFirst()),
                facts: ["pushes": after.facts, "background_budget": .int(budget)])
        }
    }

    /// A dienst update sent as an alert to a phone whose app is in the background: shown, no app code runs, the
    /// refresh happens only when the person opens the app; the same alert with content-available refreshes at once.
    static func alertRefreshOnOpen(_ c: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: c) { world in
            let app = try await makePhone(world)
            try await app.setDeviceState(app: .background)
            let dienst = try await world.nextDienst(tenant: "vvwilhelmus", team: "JO11-3")
            let alert = try KantineKoningPush.dienstUpdateAlert(tenant: dienst.tenantSlug, dienstID: dienst.id)
            let sent = try await send(world, to: app, alert, type: .alert, priority: 10)
            _ = await app.waitForDeliveries(1, timeout: c.timeout)
            let waited = await app.deliveries.first?.waitsForOpen == true
            let handledBefore = await app.handled.count
            let shown = await phoneReport(world, app)
            let opened = try await app.open()
            let refreshedOnOpen = opened?.refresh?.isComplete == true
            // The fix: content-available on the alert wakes the app in the background (within the budget).
            try await app.setDeviceState(app: .background)
            var fixedPayload = alert
            fixedPayload.aps?.contentAvailable = true
            let fixed = try await send(world, to: app, fixedPayload, type: .alert, priority: 10)
            _ = await app.waitForDeliveries(2, timeout: c.timeout)
            let fixedRan = await app.deliveries.last.map { $0.apnsID == fixed && $0.ranBy == "background-handler" }
            let after = await phoneReport(world, app)
            let reproduced =
                state(world, sent) == .delivered && waited && handledBefore == 0 && refreshedOnOpen
                && fixedRan == true
            return ScenarioOutcome(
                scenario: .alertRefreshOnOpen, reproduced: reproduced,
                expected:
                    "an alert (no content-available) to an app in the background is delivered and shown, runs no app code, and the diensten refresh only when the person opens it; with content-available: 1 the background handler refreshes at once",
                observed:
                    "alert \(sent.prefix(8)): \(state(world, sent)?.rawValue ?? "?"), \(waited ? "no app code ran" : "app code ran"), \(handledBefore) refresh(es) before opening, \(refreshedOnOpen ? "refreshed when opened" : "not refreshed when opened"); with content-available: \(fixedRan == true ? "refreshed by the background handler" : "not refreshed")",
                why:
                    "An alert runs the app's code only in the foreground (userNotificationCenter(_:willPresent:withCompletionHandler:)) or when the person opens it (userNotificationCenter(_:didReceive:withCompletionHandler:)); in the background it is only shown. Only content-available: 1 wakes the app (\(backgroundPage)).",
                fix:
                    "For the refresh, send a background push (apns-push-type background, apns-priority 5, {\"aps\":{\"content-available\":1}} with the dienst in custom keys), or add content-available: 1 to the alert (within the background budget); an alert alone refreshes only when opened.",
                details: ["phone: app in the background, online"] + shown.lines + [
                    "after opening, and the alert again with content-available:"
                ]
                    + Array(after.lines.dropFirst()),
                facts: ["pushes": after.facts])
        }
    }

    /// Three dienst changes while the phone is offline: APNs keeps only the newest for the app, the older two are
    /// discarded; on coming online the one push arrives and its refresh brings all three changes.
    static func offlineCoalescing(_ c: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: c) { world in
            let app = try await makePhone(world)
            try await app.setDeviceState(connectivity: .offline, app: .background)
            var accepted = 0
            let names = ["Sanne", "Ahmed", "Noor"]
            var dienstID = ""
            for volunteer in names {
                let change = try await world.changeNextDienst(
                    tenant: "vvwilhelmus", team: "JO11-3", volunteer: volunteer)
                accepted += change.accepted
                dienstID = change.dienst.id
            }
            let token = await app.deviceToken ?? ""
            let states = world.mock.deliveries(token: token).map(\.state)
            let whileOffline = await phoneReport(world, app)
            try await app.setDeviceState(connectivity: .online)
            _ = await app.waitForDeliveries(1, timeout: c.timeout)
            let onPhone = await app.deliveries
            let last = world.mock.deliveries(token: token).last
            let volunteers = await app.upcoming.first { $0.id == dienstID }?.volunteers ?? []
            let after = await phoneReport(world, app)
            let reproduced =
                accepted == 3
                && states == [.discardedReplaced, .discardedReplaced, .storedDeviceOffline]
                && onPhone.count == 1 && onPhone.first?.apnsID == last?.apnsID && onPhone.first?.refreshed == true
                && names.allSatisfy { volunteers.contains($0) }
            return ScenarioOutcome(
                scenario: .offlineCoalescing, reproduced: reproduced,
                expected:
                    "3 pushes to an offline phone: the first two 'discarded: replaced by a newer push', the third 'stored: device offline' and delivered when the phone comes online; its refresh brings all three changes",
                observed:
                    "\(accepted)/3 accepted by APNs; while offline: \(states.map(\.rawValue).joined(separator: ", ")); online: \(onPhone.count) push(es) on the phone, \(onPhone.first?.refreshed == true ? "refreshed" : "not refreshed"); dienst \(dienstID) volunteers after the refresh: \(volunteers.joined(separator: ", "))",
                why:
                    "APNs stores one push per app for an offline device; each newer one discards the older (coalescing; \(sendingPage)). Only the last reaches the phone.",
                fix:
                    "Nothing the backend sends makes APNs keep more: send pushes that say 'refresh' (as this backend's dienst_update does, content-available: 1, priority 5) rather than carry one change, and fetch every change on refresh; a push that carried only its own change would lose the first two.",
                details: ["phone: offline, app in the background"] + whileOffline.lines + [
                    "after the phone comes online:"
                ]
                    + Array(after.lines.dropFirst()),
                facts: ["pushes": after.facts])
        }
    }

    /// A dienst update with `apns-expiration: 0` to an offline phone: never stored, never delivered; the same push
    /// with an expiration an hour ahead is stored and arrives when the phone comes online.
    static func expirationZeroOffline(_ c: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: c) { world in
            let app = try await makePhone(world)
            try await app.setDeviceState(connectivity: .offline, app: .background)
            let dienst = try await world.nextDienst(tenant: "vvwilhelmus", team: "JO11-3")
            let update = try KantineKoningPush.dienstUpdate(tenant: dienst.tenantSlug, dienstID: dienst.id)
            let zero = try await send(world, to: app, update, type: .background, priority: 5, expiration: 0)
            let hourAhead = Int(world.mockClock.now().timeIntervalSince1970) + 3600
            let fixed = try await send(world, to: app, update, type: .background, priority: 5, expiration: hourAhead)
            let zeroState = state(world, zero)
            let fixedStored = state(world, fixed)
            let whileOffline = await phoneReport(world, app)
            try await app.setDeviceState(connectivity: .online)
            _ = await app.waitForDeliveries(1, timeout: c.timeout)
            let onPhone = await app.deliveries
            let after = await phoneReport(world, app)
            let reproduced =
                zeroState == .discardedExpired && fixedStored == .storedDeviceOffline
                && onPhone.map(\.apnsID) == [fixed] && onPhone.first?.refreshed == true
            return ScenarioOutcome(
                scenario: .expirationZeroOffline, reproduced: reproduced,
                expected:
                    "apns-expiration 0 to an offline phone: 'discarded: expired', never delivered; with an expiration an hour ahead: stored, delivered when the phone comes online, refreshed",
                observed:
                    "expiration 0: \(zeroState?.rawValue ?? "?"); expiration +1 h: \(fixedStored?.rawValue ?? "?"), then \(onPhone.map(\.apnsID) == [fixed] ? "delivered alone" : "\(onPhone.count) push(es) on the phone") and \(onPhone.first?.refreshed == true ? "refreshed" : "not refreshed")",
                why:
                    "apns-expiration 0 means deliver at once or not at all: APNs does not store it for an offline device (\(sendingPage)). APNs accepted it (200) and then discarded it.",
                fix:
                    "Send a nonzero apns-expiration: a UNIX time as long as the update stays useful (now + 3600, or the dienst's start), so APNs stores it until the phone is online.",
                details: ["phone: offline, app in the background"] + whileOffline.lines + [
                    "after the phone comes online:"
                ]
                    + Array(after.lines.dropFirst()),
                facts: ["pushes": after.facts])
        }
    }

    /// Two alerts about two diensten with one shared `apns-collapse-id`: the second replaces the first on the device;
    /// with a collapse id per dienst both stay.
    static func collapseIDUpdate(_ c: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: c) { world in
            let app = try await makePhone(world)
            try await app.setDeviceState(app: .background)
            let list = try await diensten(world)
            guard list.count >= 2 else {
                throw KKPushError(
                    code: .simulateNoDienst, message: "The backend has fewer than two upcoming diensten of JO11-3.",
                    fix: "Use the backend's seed.")
            }
            let (a, b) = (list[0], list[1])
            func alert(_ d: Dienst) throws -> Payload {
                try KantineKoningPush.dienstUpdateAlert(
                    tenant: d.tenantSlug, dienstID: d.id, body: "Dienst \(Enrollment.formatDate(d.startTime)) gewijzigd"
                )
            }
            let shared = "dienst-update"
            let first = try await send(world, to: app, try alert(a), type: .alert, priority: 10, collapseID: shared)
            let second = try await send(world, to: app, try alert(b), type: .alert, priority: 10, collapseID: shared)
            let ownA = try await send(
                world, to: app, try alert(a), type: .alert, priority: 10, collapseID: "dienst-\(a.id)")
            let ownB = try await send(
                world, to: app, try alert(b), type: .alert, priority: 10, collapseID: "dienst-\(b.id)")
            _ = await app.waitForDeliveries(4, timeout: c.timeout)
            let report = await phoneReport(world, app)
            let states = [first, second, ownA, ownB].map { state(world, $0) }
            let reproduced = states == [.replacedCollapseID, .delivered, .delivered, .delivered]
            return ScenarioOutcome(
                scenario: .collapseIDUpdate, reproduced: reproduced,
                expected:
                    "two alerts about two diensten with the same apns-collapse-id: the first 'replaced: same collapse id' on the device; with a collapse id per dienst both stay 'delivered'",
                observed:
                    "shared collapse id: \(states[0]?.rawValue ?? "?"), \(states[1]?.rawValue ?? "?"); per dienst: \(states[2]?.rawValue ?? "?"), \(states[3]?.rawValue ?? "?")",
                why:
                    "The device shows one notification per apns-collapse-id, the newest replacing the older (\(sendingPage)): the update about \(a.id) disappears before the person reads it. APNs delivered both.",
                fix:
                    "Give each dienst its own apns-collapse-id (dienst-<id>), so an update replaces only the older notification of the same dienst; one collapse id for every update hides the others.",
                details: ["phone: app in the background, online"] + report.lines, facts: ["pushes": report.facts])
        }
    }

    /// A dienst change to a phone whose app the person force-quit: the background push is not run; an alert is
    /// shown, and the refresh comes when the person opens the app.
    static func forceQuitApp(_ c: SimulationConfiguration) async throws -> ScenarioOutcome {
        try await withSimulationWorld(configuration: c) { world in
            let app = try await makePhone(world)
            try await app.setDeviceState(app: .forceQuit)
            let change = try await world.changeNextDienst(tenant: "vvwilhelmus", team: "JO11-3")
            _ = await app.waitForDeliveries(1, timeout: c.timeout)
            let token = await app.deviceToken ?? ""
            let background = world.mock.deliveries(token: token).last
            let alert = try KantineKoningPush.dienstUpdateAlert(tenant: change.tenant, dienstID: change.dienst.id)
            let sent = try await send(world, to: app, alert, type: .alert, priority: 10)
            _ = await app.waitForDeliveries(2, timeout: c.timeout)
            let handledBefore = await app.handled.count
            let shown = await phoneReport(world, app)
            let opened = try await app.open()
            let after = await phoneReport(world, app)
            let reproduced =
                change.accepted == 1 && background?.state == .notRunForceQuit && state(world, sent) == .delivered
                && handledBefore == 0 && opened?.refresh?.isComplete == true
            return ScenarioOutcome(
                scenario: .forceQuitApp, reproduced: reproduced,
                expected:
                    "the backend's background push to a force-quit app: 'not run: app force-quit', no refresh; an alert is shown; the refresh comes only when the person opens the app",
                observed:
                    "background push: \(background?.state.rawValue ?? "?"); alert: \(state(world, sent)?.rawValue ?? "?"); \(handledBefore) refresh(es) before opening; \(opened?.refresh?.isComplete == true ? "refreshed when opened" : "not refreshed when opened")",
                why:
                    "\"The system does not automatically launch your app if the user has force-quit it\" (Apple, application(_:didReceiveRemoteNotification:fetchCompletionHandler:)): no background push runs until the person opens the app. APNs delivered it; the device decided.",
                fix:
                    "No push launches a force-quit app in the background: send a change the person must see as an alert (apns-push-type alert, apns-priority 10), and refresh the diensten when the app opens.",
                details: ["phone: app force-quit, online"] + shown.lines + ["after the person opens the app:"]
                    + Array(after.lines.dropFirst()),
                facts: ["pushes": after.facts])
        }
    }
}
