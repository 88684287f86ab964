import Foundation
import KKPushCore

// Rule 7: after APNs accepts the push. What the device side decides, as Apple documents it:
// - "Sending notification requests to APNs" (developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns):
//   `apns-expiration` 0 is delivered at once or not at all (never stored); one stored push per app for an offline
//   device, the newest replacing the older (coalescing); `apns-collapse-id` replaces the notification shown.
// - "Pushing background updates to your App" (developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app):
//   `content-available: 1` wakes the app, priority 5, push type background; throttled, "don't try to send more than
//   two or three per hour".
// - `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`: "the system does not automatically launch
//   your app if the user has force-quit it".
// - `userNotificationCenter(_:willPresent:withCompletionHandler:)` (foreground) and
//   `userNotificationCenter(_:didReceive:withCompletionHandler:)` (opened): an alert runs the app's code only then.

extension DiagnosisFacts {
    /// The app's state on the device when the push came (the mock's words).
    public enum AppState: String, Sendable, Hashable, CaseIterable {
        case foreground, background, suspended
        case forceQuit = "force-quit"

        /// The accepted names, for messages.
        public static let acceptedNames = allCases.map(\.rawValue).joined(separator: ", ")

        /// The state in words: "in the background", "force-quit".
        public var words: String {
            switch self {
            case .foreground: "in the foreground"
            case .background: "in the background"
            case .suspended: "suspended"
            case .forceQuit: "force-quit"
            }
        }
    }

    /// What is known of the device when the push was sent: told by the caller, never guessed.
    public struct DeviceSide: Sendable, Hashable {
        /// The app's state, if known.
        public var appState: AppState?
        /// True when the device was offline (not connected to APNs); nil: not known.
        public var offline: Bool?
        /// How many background pushes the sender sends this device per hour, if known.
        public var backgroundPushesPerHour: Int?
        public init(appState: AppState? = nil, offline: Bool? = nil, backgroundPushesPerHour: Int? = nil) {
            self.appState = appState
            self.offline = offline
            self.backgroundPushesPerHour = backgroundPushesPerHour
        }
    }

    /// The push's delivery as the mock APNs server recorded it (its delivery log entry): the state, its history and
    /// the app code it ran.
    public struct DeliveryRecord: Sendable, Hashable {
        /// The `apns-id`.
        public var apnsID: String
        /// The delivery state now (`delivered`, `stored: device offline`, `discarded: expired`, …).
        public var state: String
        /// Each step: the state and its detail.
        public var history: [Step]
        /// The app's code that ran at delivery (`will-present`, `background-handler`, `service-extension`, `pushkit`).
        public var runs: [String]
        /// True when the app's code runs only once the person opens the notification.
        public var onOpen: Bool
        /// The app's state when it was delivered.
        public var appState: AppState?
        /// Where the record came from, for messages.
        public var source: String

        /// One step of the history.
        public struct Step: Sendable, Hashable {
            public var state: String
            public var detail: String?
            public init(state: String, detail: String? = nil) {
                self.state = state
                self.detail = detail
            }
        }

        public init(
            apnsID: String, state: String, history: [Step] = [], runs: [String] = [], onOpen: Bool = false,
            appState: AppState? = nil, source: String
        ) {
            self.apnsID = apnsID
            self.state = state
            self.history = history
            self.runs = runs
            self.onOpen = onOpen
            self.appState = appState
            self.source = source
        }

        /// Whether the app's own code ran for the push at delivery (a handler that can refresh its data).
        public var ranAppCode: Bool {
            runs.contains { ["will-present", "background-handler", "pushkit"].contains($0) }
        }

        /// Whether a step of the history was `state`.
        func passed(_ state: String) -> Bool { history.contains { $0.state == state } || self.state == state }
    }

    /// True when the device side is known well enough to judge what happened after APNs accepted the push: its
    /// state told, its delivery record, or the app's receipts.
    public var knowsDeviceSide: Bool { deviceSide != nil || delivery != nil || receipts != nil }
}

extension DiagnosisCode {
    /// `apns-expiration: 0` to an offline device: APNs does not store it (Discarded - Expired).
    public static let expirationZeroOffline = Self(rawValue: "expiration-zero-offline")
    /// The push's `apns-expiration` (or the storage time) passed before the device took it (Discarded - Expired).
    public static let pushExpired = Self(rawValue: "push-expired")
    /// A newer push to the same app replaced it while the device was offline (coalescing: one stored per app).
    public static let replacedWhileOffline = Self(rawValue: "replaced-while-offline")
    /// A background push to an app the person force-quit: the system does not launch it.
    public static let appForceQuit = Self(rawValue: "app-force-quit")
    /// A push that shows nothing and has no `content-available: 1`: nothing wakes the app.
    public static let backgroundNoContentAvailable = Self(rawValue: "background-no-content-available")
    /// A background push over the device's background budget ("two or three per hour"): throttled.
    public static let backgroundBudget = Self(rawValue: "background-budget")
    /// An alert (without `content-available`) to an app that is not in the foreground, expected to refresh it.
    public static let alertNoBackgroundRefresh = Self(rawValue: "alert-no-background-refresh")
    /// A newer notification with the same `apns-collapse-id` replaced it on the device.
    public static let collapseIDReplaced = Self(rawValue: "collapse-id-replaced")
    /// Warning: stored for an offline device that has not come online since.
    public static let deviceOfflineStored = Self(rawValue: "device-offline-stored")
    /// Info: delivered, and it ran the app's code.
    public static let deliveredRan = Self(rawValue: "delivered-ran")
}

extension Diagnoser {
    /// Apple's pages, cited in the findings' why.
    static let sendingPage =
        "Apple, \"Sending notification requests to APNs\" (developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns)"
    static let backgroundPage =
        "Apple, \"Pushing background updates to your App\" (developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app)"
    static let forceQuitPage =
        "Apple, application(_:didReceiveRemoteNotification:fetchCompletionHandler:) (developer.apple.com/documentation/uikit/uiapplicationdelegate/application(_:didreceiveremotenotification:fetchcompletionhandler:))"
    static let alertCodePage =
        "Apple, userNotificationCenter(_:willPresent:withCompletionHandler:) and userNotificationCenter(_:didReceive:withCompletionHandler:) (developer.apple.com/documentation/usernotifications/unusernotificationcenterdelegate)"

    /// The fix for a refresh that must happen without the person: a background push.
    static let backgroundFix =
        "For a refresh without the person, send a background push: apns-push-type background, apns-priority 5, {\"aps\":{\"content-available\":1}} with the data in custom keys, at most two or three per hour per device; keep the alert for what the person must see, and refresh when the app opens."

    /// How the device treats the push as sent: its kind, from the push type and the payload.
    enum SentKind {
        case alert(contentAvailable: Bool)
        case background(contentAvailable: Bool)
        case other
    }

    static func sentKind(_ f: DiagnosisFacts) -> SentKind? {
        let aps = f.payload.flatMap { try? Payload(parsing: $0) }?.aps
        let visible = aps.map { $0.alert != nil || $0.sound != nil || $0.badge != nil }
        let contentAvailable = aps?.contentAvailable ?? false
        switch f.pushType.map({ $0.lowercased() }) {
        case "background"?: return .background(contentAvailable: f.payload == nil ? true : contentAvailable)
        case "alert"?, ""?, nil:
            guard let visible else { return f.pushType == "alert" ? .alert(contentAvailable: false) : nil }
            if visible { return .alert(contentAvailable: contentAvailable) }
            return .background(contentAvailable: contentAvailable)
        default: return .other
        }
    }

    /// Rule 7: after APNs accepts the push, what the device decided (the mock's delivery record, or the device's
    /// state as told). Runs only when the device side is known: without it an accepted push is judged by the request
    /// rules alone. Never blames APNs or the environment: these findings are the device's decisions under Apple's
    /// documented rules. No finding of this kind for a push that was delivered and ran the app's code. The app's
    /// receipts, when given, outrank both (``receiptFindings(_:inferred:)``).
    static func deliveryFindings(_ f: DiagnosisFacts) -> [Finding] {
        guard f.knowsDeviceSide, f.channel == nil else { return [] }
        let inferred = f.delivery.map { recordFindings(f, $0) } ?? stateFindings(f)
        return receiptFindings(f, inferred: inferred)
    }

    /// From the device's state as told (no delivery record).
    static func stateFindings(_ f: DiagnosisFacts) -> [Finding] {
        guard let device = f.deviceSide else { return [] }
        var out: [Finding] = []
        let offline = device.offline == true
        if offline, f.expiration == 0 {
            out.append(expirationZero("The push is sent with apns-expiration 0 to a device that is offline."))
        } else if offline, let e = f.expiration, e > 0, TimeInterval(e) <= f.now.timeIntervalSince1970 {
            out.append(
                Finding(
                    .error, DiagnosisCode.pushExpired,
                    message:
                        "The push's apns-expiration \(e) (\(iso(Date(timeIntervalSince1970: TimeInterval(e))))) has passed.",
                    why: "APNs discards a push whose expiration has passed (Discarded - Expired). \(sendingPage).",
                    fix:
                        "Send apns-expiration as a UNIX time in the future, as long as the update stays useful (for a dienst update: until the dienst starts)."
                ))
        }
        let kind = sentKind(f)
        let state = device.appState
        switch kind {
        case .background(let contentAvailable)?:
            if !contentAvailable {
                out.append(noContentAvailable(f))
            } else if state == .forceQuit {
                out.append(forceQuit("The app was force-quit when the background push came."))
            } else if state == .background || state == .suspended, let n = device.backgroundPushesPerHour,
                n > backgroundPerHourApple
            {
                out.append(
                    overBudget(
                        "The sender sends this device \(n) background pushes an hour while its app is \(state!.words)."
                    ))
            }
        case .alert(let contentAvailable)?:
            guard let state, state != .foreground else { break }
            if contentAvailable, state == .forceQuit {
                out.append(forceQuit("The app was force-quit: content-available on the alert does not launch it."))
            } else if contentAvailable, let n = device.backgroundPushesPerHour, n > backgroundPerHourApple {
                out.append(
                    overBudget(
                        "The sender sends this device \(n) content-available pushes an hour while its app is \(state.words)."
                    ))
            } else if !contentAvailable {
                out.append(
                    alertNoRefresh("The push is an alert without content-available; the app was \(state.words)."))
            }
        case .other?, nil: break
        }
        return out
    }

    /// Apple: "don't try to send more than two or three per hour".
    static let backgroundPerHourApple = 3

    /// From the mock's delivery record.
    static func recordFindings(_ f: DiagnosisFacts, _ r: DiagnosisFacts.DeliveryRecord) -> [Finding] {
        let from = "\(r.source): push \(r.apnsID) is '\(r.state)'"
        switch r.state {
        case "delivered":
            if r.ranAppCode {
                return [
                    Finding(
                        .info, DiagnosisCode.deliveredRan,
                        message: "\(from) and ran the app's code (\(r.runs.joined(separator: ", "))).",
                        why: "It arrived and the app could act on it: nothing after APNs' answer kept it from the app.",
                        fix: "If the app did not refresh, look at what its handler does with the push.")
                ]
            }
            if r.onOpen {
                return [
                    alertNoRefresh(
                        "\(from) and shown, but no app code ran (the app was \(r.appState?.words ?? "not in the foreground")): it runs only when the person opens it."
                    )
                ]
            }
            if r.appState == .forceQuit {
                return [forceQuit("\(from), but the app was force-quit: nothing ran.")]
            }
            if case .background(false)? = sentKind(f) {
                return [noContentAvailable(f, prefix: "\(from), but no app code ran. ")]
            }
            return []
        case "not run: app force-quit":
            return [forceQuit("\(from): the app was force-quit, so the system did not launch it.")]
        case "deferred: background budget":
            return [overBudget("\(from): the device holds it until the app's background budget frees.")]
        case "replaced: same collapse id":
            let detail = r.history.last(where: { $0.state == r.state })?.detail.map { " (\($0))" } ?? ""
            return [
                Finding(
                    .error, DiagnosisCode.collapseIDReplaced,
                    message:
                        "\(from)\(detail): a newer notification with its apns-collapse-id replaced it on the device.",
                    why:
                        "The device shows one notification per apns-collapse-id, the newest replacing the older; \(sendingPage). APNs delivered it; the device replaced it.",
                    fix:
                        "Give each update that must stay visible its own collapse id (one per dienst, e.g. dienst-<id>), or none; use one collapse id only for updates where the newest supersedes the rest."
                )
            ]
        case "discarded: replaced by a newer push":
            if r.passed("deferred: background budget") {
                return [overBudget("\(from) while the device held it for the background budget.")]
            }
            return [
                Finding(
                    .error, DiagnosisCode.replacedWhileOffline,
                    message: "\(from) while the device was offline.",
                    why:
                        "APNs stores one push per app for an offline device: each newer one discards the older (coalescing). \(sendingPage). The device was offline; APNs kept the newest, as documented.",
                    fix:
                        "Send pushes that say 'refresh' rather than carry one change, so the newest stands for all; have the app fetch everything when it refreshes or opens, and never rely on each push arriving."
                )
            ]
        case "discarded: expired":
            let zero = f.expiration == 0 || r.history.contains { $0.detail?.contains("apns-expiration 0") == true }
            if zero {
                return [expirationZero("\(from): it was sent with apns-expiration 0 while the device was offline.")]
            }
            return [
                Finding(
                    .error, DiagnosisCode.pushExpired,
                    message:
                        "\(from)\(r.history.last?.detail.map { " (\($0))" } ?? ""): its expiration passed before the device could take it.",
                    why: "APNs discards a push whose apns-expiration (or storage time) has passed. \(sendingPage).",
                    fix:
                        "Send apns-expiration far enough ahead for the update to stay useful (for a dienst update: until the dienst starts)."
                )
            ]
        case "stored: device offline":
            return [
                Finding(
                    .warning, DiagnosisCode.deviceOfflineStored,
                    message: "\(from): the device has not come online since.",
                    why:
                        "APNs keeps it, as the only stored push of this app, until the device connects or it expires; a newer push to the app replaces it. \(sendingPage).",
                    fix:
                        "Nothing to change in the push if the device comes online; otherwise send a nonzero apns-expiration far enough ahead."
                )
            ]
        default:
            return []
        }
    }

    static func expirationZero(_ message: String) -> Finding {
        Finding(
            .error, DiagnosisCode.expirationZeroOffline, message: message,
            why:
                "apns-expiration 0 means deliver at once or not at all: APNs does not store it for an offline device, and discards it (Discarded - Expired). \(sendingPage). APNs did as asked; the device was offline.",
            fix:
                "Send a nonzero apns-expiration (a UNIX time as long as the update stays useful, e.g. now + 3600, or the dienst's start), so APNs stores it until the device is online."
        )
    }

    static func forceQuit(_ message: String) -> Finding {
        Finding(
            .error, DiagnosisCode.appForceQuit, message: message,
            why:
                "The system does not launch an app the person force-quit for a background push, until the person opens it again. \(forceQuitPage). APNs delivered it; the device decided.",
            fix:
                "No push launches a force-quit app in the background: send what the person must see as an alert (apns-push-type alert), and refresh the diensten when the app opens."
        )
    }

    static func overBudget(_ message: String) -> Finding {
        Finding(
            .error, DiagnosisCode.backgroundBudget, message: message,
            why:
                "Background pushes are low priority and the system throttles them when there are too many: \"don't try to send more than two or three per hour\". \(backgroundPage). The device held it; APNs delivered it.",
            fix:
                "Send fewer silent pushes: at most two or three background pushes per hour per device (coalesce changes into one), with apns-priority 5; send an alert for what must reach the person at once."
        )
    }

    static func alertNoRefresh(_ message: String) -> Finding {
        Finding(
            .error, DiagnosisCode.alertNoBackgroundRefresh, message: message,
            why:
                "An alert runs the app's code in the foreground, through willPresent, or when the person opens it, through didReceive; in the background it only shows: the app refreshes nothing until then. \(alertCodePage).",
            fix: backgroundFix)
    }

    static func noContentAvailable(_ f: DiagnosisFacts, prefix: String = "") -> Finding {
        Finding(
            .error, DiagnosisCode.backgroundNoContentAvailable,
            message:
                prefix
                + "The push (apns-push-type \(f.pushType.flatMap { $0.isEmpty ? nil : $0 } ?? "none")) shows nothing and has no aps.content-available: nothing wakes the app.",
            why:
                "Only content-available: 1 wakes the app for a push that shows nothing. \(backgroundPage).",
            fix:
                "Send {\"aps\":{\"content-available\":1}} with apns-push-type background and apns-priority 5 (data in custom keys)."
        )
    }
}
