import Foundation
import KKPushCore

/// A push held by APNs (stored while the device is offline, held for power) or by the device (deferred by the
/// background budget), with what is needed to hand it on later.
struct HeldPush {
    var entry: DeliveredNotification
    var traits: PushTraits
    /// When APNs stops keeping it: its `apns-expiration`, else the storage limit (nil: never, a deferred push the
    /// device holds).
    var until: Date?
    /// When a push held for power is due.
    var due: Date?
}

/// What the mock keeps per device beyond its registration: the pushes held for it, its background runs (the budget)
/// and the notifications it shows per collapse id.
struct DeviceSideData {
    /// Stored while offline, one per app (bundle id).
    var stored: [String: HeldPush] = [:]
    /// Held for power (priority 5 or 1 with ``MockDeviceRules/lowPriorityHold``), oldest first.
    var power: [HeldPush] = []
    /// Deferred by the background budget, one per app.
    var deferred: [String: HeldPush] = [:]
    /// When background pushes ran within the budget (pruned to the window).
    var backgroundRuns: [Date] = []
    /// The sequence of the notification shown per `<bundle id>\n<collapse id>`.
    var displayed: [String: UInt64] = [:]
    /// When Live Activity starts were taken through this push-to-start token (pruned to the budget's window).
    var starts: [Date] = []
    /// The Live Activities its starts created, oldest first (`DeviceSideActivities.swift`).
    var activities: [MockActivity] = []
    /// For an activity's update token: the push-to-start token whose start created it.
    var activityOf: String? = nil

    var holdsAny: Bool { !stored.isEmpty || !power.isEmpty || !deferred.isEmpty }

    /// Every push held, for a reset.
    var allHeld: [HeldPush] { Array(stored.values) + power + Array(deferred.values) }
}

/// The device side's rules, applied to the mock's state under its lock. Every choice where Apple gives no number is a
/// ``MockDeviceRules`` setting; the sources are in `DeviceSide.swift` and the guide (`AfterAPNsAccepts`).
extension MockState.Inner {
    /// Moves `entry` to `state` with its reason, writes it to the log (if the log still holds it) and counts it.
    mutating func move(
        _ entry: inout DeliveredNotification, to state: DeliveryState, at now: Date, detail: String? = nil,
        metrics: MockMetrics
    ) {
        let old = entry.state
        entry.state = state
        entry.history.append(DeliveryTransition(time: now, state: state, detail: detail))
        log.replace(entry)
        metrics.countDeliveryState(entry: entry, from: old)
    }

    /// The date APNs stops keeping `entry`: its `apns-expiration` (when nonzero), else the storage limit from when it
    /// was received, whichever is sooner.
    func keptUntil(_ entry: DeliveredNotification) -> Date {
        let limit = entry.time.addingTimeInterval(rules.storageLimit)
        guard let expiration = entry.expiration, expiration > 0 else { return limit }
        return min(limit, Date(timeIntervalSince1970: TimeInterval(expiration)))
    }

    /// A newly accepted push: logged as `received`, then stored, held, discarded or handed to the device.
    mutating func accept(_ made: DeliveredNotification, traits: PushTraits, now: Date, metrics: MockMetrics) {
        var entry = made
        entry.state = .received
        entry.history = [DeliveryTransition(time: now, state: .received)]
        log.append(entry)
        metrics.countDeliveryState(entry: entry, from: nil)
        let token = entry.token
        if pending.contains(token) { settle(token: token, now: now, metrics: metrics) }
        let known = devices[token] != nil
        var device =
            devices[token]
            ?? MockState.DeviceEntry(
                registration: MockDeviceRegistration(token: token, environment: entry.environment), continuation: nil)
        defer { if known { devices[token] = device } }

        // A past expiration: APNs discards it ("Discarded - Expired"), whatever the device.
        if let expiration = entry.expiration, expiration > 0,
            TimeInterval(expiration) <= now.timeIntervalSince1970
        {
            move(
                &entry, to: .discardedExpired, at: now,
                detail:
                    "apns-expiration \(expiration) (\(Self.utc(Date(timeIntervalSince1970: TimeInterval(expiration))))) had passed when APNs received it",
                metrics: metrics)
            return
        }
        if discardOnStalePushToStart(&entry, traits: traits, device: device, now: now, metrics: metrics) { return }
        if device.registration.connectivity == .offline {
            // `apns-expiration: 0`: APNs tries once and does not store ("Sending notification requests to APNs").
            if entry.expiration == 0 {
                move(
                    &entry, to: .discardedExpired, at: now,
                    detail:
                        "apns-expiration 0: APNs delivers at once or not at all and does not store it; the device was offline",
                    metrics: metrics)
                return
            }
            store(&entry, traits: traits, device: &device, now: now, metrics: metrics)
            return
        }
        // A token the mock does not know (no strict mode) has no device to hold pushes for: delivered at once.
        if known, rules.lowPriorityHold > 0, entry.priority != 10, entry.expiration != 0 {
            let due = now.addingTimeInterval(rules.lowPriorityHold)
            move(
                &entry, to: .storedPowerConsiderations, at: now,
                detail:
                    "priority \(entry.priority): held \(InputNumbers.text(rules.lowPriorityHold)) s for the device's power (low_priority_hold_s), then delivered in one burst with the others held",
                metrics: metrics)
            device.side.power.append(HeldPush(entry: entry, traits: traits, until: keptUntil(entry), due: due))
            pending.insert(token)
            return
        }
        handOver(&entry, traits: traits, device: &device, now: now, from: nil, metrics: metrics)
    }

    /// Stores `entry` for an offline device: one per app, the newest replacing the older.
    mutating func store(
        _ entry: inout DeliveredNotification, traits: PushTraits, device: inout MockState.DeviceEntry, now: Date,
        metrics: MockMetrics
    ) {
        let bundle = SimulatorPushFile.bundleID(fromTopic: entry.topic)
        if var older = device.side.stored[bundle]?.entry {
            move(
                &older, to: .discardedReplaced, at: now,
                detail: "APNs stores one push per app for an offline device: \(entry.apnsID) replaced it",
                metrics: metrics)
        }
        let until = keptUntil(entry)
        move(
            &entry, to: .storedDeviceOffline, at: now,
            detail:
                "kept until \(Self.utc(until)) (apns-expiration or the storage limit) for the device to come online",
            metrics: metrics)
        device.side.stored[bundle] = HeldPush(entry: entry, traits: traits, until: until, due: nil)
        pending.insert(entry.token)
    }

    /// Whether a background push may run now within the budget (without taking it).
    func budgetAllows(_ device: MockState.DeviceEntry, now: Date) -> Bool {
        let start = now.addingTimeInterval(-rules.backgroundBudgetWindow)
        return device.side.backgroundRuns.count(where: { $0 > start }) < rules.backgroundBudget
    }

    /// Takes one background run from the budget if it allows one; false when it is spent.
    mutating func takeBackgroundRun(_ device: inout MockState.DeviceEntry, now: Date) -> Bool {
        let start = now.addingTimeInterval(-rules.backgroundBudgetWindow)
        device.side.backgroundRuns.removeAll { $0 <= start }
        guard device.side.backgroundRuns.count < rules.backgroundBudget else { return false }
        device.side.backgroundRuns.append(now)
        return true
    }

    /// A date in words for a history's detail (UTC, seconds).
    static func utc(_ date: Date) -> String {
        UTCTimestamp.format(date) ?? "\(Int64(date.timeIntervalSince1970.rounded(.down))) s since 1970"
    }

    var budgetWords: String {
        "\(rules.backgroundBudget) per \(InputNumbers.text(rules.backgroundBudgetWindow)) s (background_budget)"
    }

    /// Hands `entry` to the device (online): what it does there depends on its kind and the app's state; it reaches
    /// the device's stream unless the budget defers it. `from`: how it got here, for the history (nil: at once).
    mutating func handOver(
        _ entry: inout DeliveredNotification, traits: PushTraits, device: inout MockState.DeviceEntry, now: Date,
        from: String?, metrics: MockMetrics
    ) {
        let app = device.registration.app
        var state = DeliveryState.delivered
        switch traits.kind(pushType: entry.pushType) {
        case .liveActivity:
            if let warnings = entry.warnings, !warnings.isEmpty {
                state = .droppedDoesNotDecode
                entry.appCode = AppCodeRun(
                    appState: app, runs: [], onOpen: false,
                    note:
                        "The content does not decode into the app's ActivityAttributes: the device drops it and the Live Activity is not updated (\(warnings.joined(separator: "; ")))."
                )
            } else if let activity = traits.activity,
                let dropped = takeActivityPush(&entry, activity: activity, device: &device, now: now)
            {
                entry.appCode = nil
                move(&entry, to: dropped.state, at: now, detail: dropped.why, metrics: metrics)
                return
            } else {
                entry.appCode = AppCodeRun(
                    appState: app, runs: [], onOpen: false,
                    note: entry.activityUpdateToken == nil
                        ? "ActivityKit updates the Live Activity; the app's code does not run."
                        : "ActivityKit starts the Live Activity with its own update token (input-push-token); the app's code does not run until it is launched."
                )
            }
        case .voip:
            entry.appCode = AppCodeRun(
                appState: app, runs: [.pushKit], onOpen: false,
                note: "PushKit hands a VoIP push to the app, launching it if it is not running.")
        case .system:
            entry.appCode = AppCodeRun(
                appState: app, runs: [], onOpen: false,
                note:
                    "The system handles push type \(entry.pushType ?? "none") (or the app's extension for it); the app's own push handlers do not run."
            )
        case .background:
            switch app {
            case .foreground:
                entry.appCode = AppCodeRun(
                    appState: app, runs: [.backgroundHandler], onOpen: false,
                    note:
                        "The app is in the foreground: application(_:didReceiveRemoteNotification:fetchCompletionHandler:) runs at once, outside the background budget."
                )
            case .forceQuit:
                state = .notRunForceQuit
                entry.appCode = AppCodeRun(
                    appState: app, runs: [], onOpen: false,
                    note:
                        "The person force-quit the app: the system does not launch it for a background push until the person opens it again."
                )
            case .background, .suspended:
                guard takeBackgroundRun(&device, now: now) else {
                    deferPush(&entry, traits: traits, device: &device, now: now, metrics: metrics)
                    return
                }
                entry.appCode = AppCodeRun(
                    appState: app, runs: [.backgroundHandler], onOpen: false,
                    note:
                        "Woken in the background: application(_:didReceiveRemoteNotification:fetchCompletionHandler:) runs (budget \(budgetWords))."
                )
            }
        case .alert:
            replaceCollapsed(by: entry, device: &device, now: now, metrics: metrics)
            var runs: [AppCodeRun.Handler] = traits.mutableContent ? [.serviceExtension] : []
            var note =
                traits.mutableContent ? "mutable-content: the Notification Service Extension runs before display. " : ""
            var onOpen = false
            if app == .foreground {
                runs.append(.willPresent)
                note +=
                    "The app is in the foreground: userNotificationCenter(_:willPresent:withCompletionHandler:) runs."
            } else {
                onOpen = true
                note +=
                    "Shown; the app's code runs only when the person opens it (userNotificationCenter(_:didReceive:withCompletionHandler:))."
                if traits.contentAvailable {
                    if app == .forceQuit {
                        note += " content-available does not launch an app the person force-quit."
                    } else if takeBackgroundRun(&device, now: now) {
                        runs.append(.backgroundHandler)
                        note += " content-available woke the app in the background (budget \(budgetWords))."
                    } else {
                        note +=
                            " content-available did not wake the app: its background budget is spent (\(budgetWords))."
                    }
                }
            }
            entry.appCode = AppCodeRun(appState: app, runs: runs, onOpen: onOpen, note: note)
        }
        move(&entry, to: state, at: now, detail: from, metrics: metrics)
        device.continuation?.yield(entry)
    }

    /// A background push over the budget: the device holds the newest per app.
    mutating func deferPush(
        _ entry: inout DeliveredNotification, traits: PushTraits, device: inout MockState.DeviceEntry, now: Date,
        metrics: MockMetrics
    ) {
        let bundle = SimulatorPushFile.bundleID(fromTopic: entry.topic)
        if var older = device.side.deferred[bundle]?.entry {
            move(
                &older, to: .discardedReplaced, at: now,
                detail: "the device keeps the newest deferred background push per app: \(entry.apnsID) replaced it",
                metrics: metrics)
        }
        entry.appCode = nil
        move(
            &entry, to: .deferredBackgroundBudget, at: now,
            detail:
                "the app's background budget is spent (\(budgetWords)); run once it frees or the app comes to the foreground",
            metrics: metrics)
        device.side.deferred[bundle] = HeldPush(entry: entry, traits: traits, until: nil, due: nil)
        pending.insert(entry.token)
    }

    /// An alert with an `apns-collapse-id` replaces the one the device shows with the same collapse id.
    mutating func replaceCollapsed(
        by entry: DeliveredNotification, device: inout MockState.DeviceEntry, now: Date, metrics: MockMetrics
    ) {
        guard let collapseID = entry.collapseID, !collapseID.isEmpty else { return }
        let key = SimulatorPushFile.bundleID(fromTopic: entry.topic) + "\n" + collapseID
        if let shown = device.side.displayed[key], shown != entry.sequence, var older = log.entry(sequence: shown),
            older.state == .delivered
        {
            move(
                &older, to: .replacedCollapseID, at: now,
                detail:
                    "\(entry.apnsID) has the same apns-collapse-id '\(collapseID)': the device shows only the newest",
                metrics: metrics)
        }
        // Bounded: a device showing more than 1,024 collapse ids forgets the older ones.
        if device.side.displayed.count >= 1024 { device.side.displayed.removeAll() }
        device.side.displayed[key] = entry.sequence
    }

    /// Applies time and the device's state to what is held for `token`: stored pushes expire or are delivered once it
    /// is online, pushes held for power are delivered in one burst when the oldest is due, a deferred background push
    /// runs once the budget frees or the app is in the foreground.
    mutating func settle(token: String, now: Date, metrics: MockMetrics) {
        guard var device = devices[token] else {
            pending.remove(token)
            return
        }
        let online = device.registration.connectivity == .online
        for (bundle, held) in device.side.stored.sorted(by: { $0.value.entry.sequence < $1.value.entry.sequence }) {
            var entry = held.entry
            if let until = held.until, until <= now {
                device.side.stored[bundle] = nil
                move(
                    &entry, to: .discardedExpired, at: now,
                    detail: "kept until \(Self.utc(until)); the device was still offline", metrics: metrics)
            } else if online {
                device.side.stored[bundle] = nil
                handOver(
                    &entry, traits: held.traits, device: &device, now: now,
                    from: "from storage: the device came online", metrics: metrics)
            }
        }
        if let oldest = device.side.power.first?.due, oldest <= now {
            let burst = device.side.power
            device.side.power = []
            for held in burst {
                var entry = held.entry
                if let until = held.until, until <= now {
                    move(
                        &entry, to: .discardedExpired, at: now, detail: "apns-expiration passed while held for power",
                        metrics: metrics)
                } else if online {
                    handOver(
                        &entry, traits: held.traits, device: &device, now: now,
                        from: "after the hold for power, in one burst", metrics: metrics)
                } else {
                    store(&entry, traits: held.traits, device: &device, now: now, metrics: metrics)
                }
            }
        }
        for (bundle, held) in device.side.deferred.sorted(by: { $0.value.entry.sequence < $1.value.entry.sequence }) {
            let app = device.registration.app
            let ready = app == .foreground || app == .forceQuit || budgetAllows(device, now: now)
            guard ready else { continue }
            device.side.deferred[bundle] = nil
            var entry = held.entry
            handOver(
                &entry, traits: held.traits, device: &device, now: now,
                from: app == .foreground ? "the app came to the foreground" : "the background budget freed",
                metrics: metrics)
        }
        if !device.side.holdsAny { pending.remove(token) }
        devices[token] = device
    }

    /// ``settle(token:now:metrics:)`` for every device holding a push.
    mutating func settleAll(now: Date, metrics: MockMetrics) {
        guard !pending.isEmpty else { return }
        for token in pending.sorted() { settle(token: token, now: now, metrics: metrics) }
    }

    /// The token was unregistered: what APNs or the device held for it is discarded.
    mutating func discardHeld(token: String, now: Date, metrics: MockMetrics) {
        guard var device = devices[token], device.side.holdsAny else { return }
        for held in device.side.allHeld.sorted(by: { $0.entry.sequence < $1.entry.sequence }) {
            var entry = held.entry
            move(
                &entry, to: .discardedTokenUnregistered, at: now, detail: "the token was unregistered",
                metrics: metrics)
        }
        device.side.stored = [:]
        device.side.power = []
        device.side.deferred = [:]
        devices[token] = device
        pending.remove(token)
    }

    /// The device's state and what is held for it.
    func deviceState(_ token: String, now: Date) -> MockDeviceState? {
        guard let device = devices[token] else { return nil }
        let start = now.addingTimeInterval(-rules.backgroundBudgetWindow)
        return MockDeviceState(
            token: token, connectivity: device.registration.connectivity, app: device.registration.app,
            stored: device.side.stored.count, heldForPower: device.side.power.count,
            deferred: device.side.deferred.count,
            backgroundRunsInWindow: device.side.backgroundRuns.count(where: { $0 > start }),
            backgroundBudget: rules.backgroundBudget, startsInWindow: startsInWindow(device, now: now),
            pushToStartBudget: rules.pushToStartBudget, pushToStartStale: device.registration.pushToStartStale,
            activities: device.side.activities, activityOf: device.side.activityOf)
    }
}
