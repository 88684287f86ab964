public import Foundation
public import KKPushCore
public import KantineKoningReceipts

// Rule 7, with the app's receipts (the receipt contract, ``PushReceipt``): the app posts a receipt only when its code
// ran for a push, so a receipt is the one evidence from the device itself. It outranks every inference of the device
// side: a push the app says it received did arrive, whatever the rules would have predicted; a push the device
// evidence says was delivered to code that posts receipts, without one, points at the receipt path, never at APNs or
// the environment.

extension DiagnosisFacts {
    /// The app's receipts, as its backend recorded them, and what identifies the push they are matched to.
    public struct ReceiptEvidence: Sendable, Hashable {
        /// One receipt.
        public struct Receipt: Sendable, Hashable {
            public var apnsID: String?
            public var pushID: String?
            public var receivedAt: Date?
            /// `refreshed`, `shown` or `dropped`.
            public var handled: PushReceiptHandling
            public var handledAt: Date?
            /// `service-extension`, `background-handler`, `will-present`, `on-open`, if the receipt says.
            public var handler: String?
            /// The device token the backend had for the posting enrollment, if the listing has it.
            public var deviceToken: String?
            /// The handling a receipt names (`refreshed`, `shown`, `dropped`), nil for another word.
            public static func handling(named text: String) -> PushReceiptHandling? {
                PushReceiptHandling(rawValue: text)
            }
            /// The handlings' names, for messages.
            public static let handlingNames = PushReceiptHandling.allCases.map(\.rawValue).joined(separator: ", ")
            public init(
                apnsID: String? = nil, pushID: String? = nil, receivedAt: Date? = nil, handled: PushReceiptHandling,
                handledAt: Date? = nil, handler: String? = nil, deviceToken: String? = nil
            ) {
                self.apnsID = apnsID?.lowercased()
                self.pushID = pushID
                self.receivedAt = receivedAt
                self.handled = handled
                self.handledAt = handledAt
                self.handler = handler
                self.deviceToken = deviceToken?.lowercased()
            }
        }

        /// Every receipt given.
        public var receipts: [Receipt]
        /// The push's apns-id, when told apart from its delivery record.
        public var apnsID: String?
        /// Where the receipts came from, for messages.
        public var source: String

        public init(receipts: [Receipt], apnsID: String? = nil, source: String) {
            self.receipts = receipts
            self.apnsID = apnsID?.lowercased()
            self.source = source
        }
    }

    /// The push's apns-id (as told, else its delivery record's) and its `kk_push_id` (from its payload): what its
    /// receipts are matched by.
    public var receiptKeys: (apnsID: String?, pushID: String?) {
        let apnsID = (receipts?.apnsID ?? delivery?.apnsID)?.lowercased()
        return (apnsID, payload.flatMap(PushReceipt.pushID(inPayload:)))
    }

    /// The receipts of this push: by apns-id, or by `kk_push_id` (a push id is the backend's, and one fan-out push may
    /// carry it to many devices: with a device token known on both sides, the tokens must match too).
    public var matchingReceipts: [ReceiptEvidence.Receipt] {
        guard let evidence = receipts else { return [] }
        let (apnsID, pushID) = receiptKeys
        let token = deviceToken?.value.lowercased()
        return evidence.receipts.filter { r in
            if let apnsID, r.apnsID == apnsID { return true }
            guard let pushID, r.pushID == pushID else { return false }
            if let token, let theirs = r.deviceToken { return token == theirs }
            return true
        }
    }
}

extension DiagnosisCode {
    /// Info: the app's receipt says the push arrived and what it did with it.
    public static let receiptReceived = Self(rawValue: "receipt-received")
    /// The app's receipt says it dropped the push.
    public static let receiptDropped = Self(rawValue: "receipt-dropped")
    /// Warning: the device evidence says the push was delivered to code that posts a receipt, and none came.
    public static let receiptMissing = Self(rawValue: "receipt-missing")
    /// Info: no receipt for the push, and nothing says it reached code that posts one.
    public static let receiptNone = Self(rawValue: "receipt-none")
}

extension Diagnoser {
    /// The verdicts that say the push never reached the phone: a receipt of it contradicts each.
    static let neverArrivedCodes: Set<DiagnosisCode> = [
        DiagnosisCode.expirationZeroOffline, DiagnosisCode.pushExpired, DiagnosisCode.replacedWhileOffline,
        DiagnosisCode.deviceOfflineStored,
    ]
    /// The verdicts that say the app's code did not run for it: a receipt from the app's code (not the extension's
    /// `shown`) contradicts each.
    static let codeNotRunCodes: Set<DiagnosisCode> = [
        DiagnosisCode.appForceQuit, DiagnosisCode.backgroundBudget, DiagnosisCode.backgroundNoContentAvailable,
        DiagnosisCode.alertNoBackgroundRefresh,
    ]
    /// The handlers that post a receipt when iOS runs them (PushKit is not a receipt handler of the contract).
    static let receiptHandlers: Set<String> = ["will-present", "background-handler", "service-extension"]

    /// The device-side findings (`inferred`, from the record or the state told) judged against the app's receipts.
    static func receiptFindings(_ f: DiagnosisFacts, inferred: [Finding]) -> [Finding] {
        guard let evidence = f.receipts else { return inferred }
        let matched = f.matchingReceipts
        let (apnsID, pushID) = f.receiptKeys
        let push = [apnsID.map { "apns-id \($0)" }, pushID.map { "kk_push_id \($0)" }].compactMap { $0 }
            .joined(separator: ", ")
        guard matched.isEmpty else {
            let ranCode = matched.contains { $0.handled != .shown }
            var out = inferred.filter {
                !neverArrivedCodes.contains($0.code) && !(ranCode && codeNotRunCodes.contains($0.code))
            }
            for r in matched {
                let said = describe(r)
                if r.handled == .dropped {
                    out.append(
                        Finding(
                            .error, DiagnosisCode.receiptDropped,
                            message:
                                "\(evidence.source): the app's receipt for the push (\(push)) says \(said): it arrived and the app's \(r.handler ?? "handler (not named in the receipt)") dropped it.",
                            why:
                                "The app posts 'dropped' when its code received the push and did not act on it (a payload it cannot read, a stale or foreign push). APNs and the device delivered it; the app decided.",
                            fix:
                                "Look at \(r.handler.map { "the app's \($0)" } ?? "the app's push handler") for why it drops the push: compare the payload as sent with what the handler reads (its keys, the tenant and enrollment it expects)."
                        ))
                } else {
                    out.append(
                        Finding(
                            .info, DiagnosisCode.receiptReceived,
                            message: "\(evidence.source): the app's receipt for the push (\(push)) says \(said).",
                            why:
                                "The app posts a receipt only when its code ran for the push: it arrived\(r.handled == .shown ? " and was shown (the Notification Service Extension ran; the app's own code did not)" : " and the app refreshed"), so no 'never arrived' verdict applies.",
                            fix:
                                r.handled == .shown
                                ? "Nothing kept it from the phone. For a refresh without the person, the app's own code must run: see the device-side findings, if any."
                                : "Nothing kept it from the app. If the data still looks stale, look at what the refresh fetched."
                        ))
                }
            }
            return out
        }
        if let record = f.delivery, record.state == "delivered", !record.onOpen,
            let ran = record.runs.first(where: receiptHandlers.contains)
        {
            return inferred + [
                Finding(
                    .warning, DiagnosisCode.receiptMissing,
                    message:
                        "\(record.source) says push \(record.apnsID) was delivered and ran the app's \(ran), but \(evidence.source) has no receipt for it (\(push); \(evidence.receipts.count) receipt(s) given).",
                    why:
                        "\(ran) posts a receipt when it runs, under the receipt contract. APNs and the device delivered the push; the receipt path is what failed: the post (network, the device JWT, the backend's route) or the app's code that makes it.",
                    fix:
                        "Check the app's receipt post from \(ran) (the PushReceiptPoster error in the app's log), the enrollment's device JWT, and the backend's POST /api/mobile/v1/push-receipts; a background handler must find kk_push_id in the payload, so send it."
                )
            ]
        }
        return inferred + [
            Finding(
                .info, DiagnosisCode.receiptNone,
                message:
                    "\(evidence.source) has no receipt for the push (\(push.isEmpty ? "no apns-id or kk_push_id known" : push); \(evidence.receipts.count) receipt(s) given).",
                why:
                    "A missing receipt is not proof of a lost push: only code that runs posts one (an alert waiting to be opened, a deferred or force-quit background push post nothing), the phone may be offline, or the post may have failed.",
                fix:
                    "Judge the push by the device-side findings; give the push's delivery record or the app's state for more."
            )
        ]
    }

    /// `refreshed by background-handler, received 2027-…, handled 2027-…`.
    static func describe(_ r: DiagnosisFacts.ReceiptEvidence.Receipt) -> String {
        var text = "'\(r.handled.rawValue)'\(r.handler.map { " by \($0)" } ?? "")"
        if let at = r.receivedAt { text += ", received \(Enrollment.formatDate(at))" }
        if let at = r.handledAt { text += ", handled \(Enrollment.formatDate(at))" }
        return text
    }
}
