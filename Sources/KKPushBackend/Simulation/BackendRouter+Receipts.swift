public import Foundation
public import KKPushCore
public import KantineKoning
import KantineKoningReceipts
import Logging

/// One receipt the backend took: the app's receipt, the enrollment that posted it (its JWT) and its token then.
public struct RecordedPushReceipt: Sendable, Equatable {
    public var receipt: PushReceipt
    public var enrollment: EnrollmentKey
    /// The enrollment's APNs token when the receipt came (nil: it had sent none).
    public var deviceToken: String?
    /// The backend's time of the receipt.
    public var recordedAt: Date
    /// The push queue rows the ``PushReceiptBook/sink`` recorded it on (nil: no sink).
    public var queueRows: Int?

    /// The receipt as `GET /admin/receipts` lists it.
    public var jsonValue: JSONValue {
        guard case .object(var object) = receipt.jsonValue else { return receipt.jsonValue }
        object["tenant_slug"] = .string(enrollment.tenantSlug)
        object["device_id"] = .string(enrollment.deviceID)
        object["device_token"] = deviceToken.map(JSONValue.string) ?? .null
        object["recorded_at"] = .string(Enrollment.formatDate(recordedAt))
        object["queue_rows"] = queueRows.map(JSONValue.int) ?? .null
        return .object(object)
    }
}

/// The simulated backend's receipts, per push (by apns-id and by push id), newest last; at most ``capacity``
/// (the oldest dropped first: a simulation's memory stays bounded). A backend whose pushes go through kkpush's push
/// queue records each receipt on its queue row too: ``setSink(_:)`` (the CLI's `backend serve` with a queue
/// database), which returns how many rows it marked.
public actor PushReceiptBook {
    /// The most receipts kept.
    public static let capacity = 10_000
    private var receipts: [RecordedPushReceipt] = []
    /// Records a receipt elsewhere too (the push queue); returns the rows it marked.
    public typealias Sink = @Sendable (RecordedPushReceipt) async throws -> Int
    private var sink: Sink?

    public init() {}

    /// Sets (or with nil removes) where receipts are recorded besides this book.
    public func setSink(_ sink: Sink?) { self.sink = sink }

    /// Records a receipt (through the sink first, when there is one); what was recorded.
    func record(_ receipt: RecordedPushReceipt) async throws -> RecordedPushReceipt {
        var receipt = receipt
        if let sink { receipt.queueRows = try await sink(receipt) }
        receipts.append(receipt)
        if receipts.count > Self.capacity { receipts.removeFirst(receipts.count - Self.capacity) }
        return receipt
    }

    /// Every receipt kept, oldest first; only those of one apns-id or push id when given.
    public func all(apnsID: String? = nil, pushID: String? = nil) -> [RecordedPushReceipt] {
        receipts.filter { r in
            (apnsID.map { r.receipt.apnsID == $0.lowercased() } ?? true)
                && (pushID.map { r.receipt.pushID == $0 } ?? true)
        }
    }
}

extension BackendRouter {
    /// `POST /api/mobile/v1/push-receipts` (``PushReceipt``): the enrollment's bearer as for the token update, then
    /// the receipt checked field by field (400 `receipt-invalid` naming the field) and recorded.
    func pushReceipt(_ request: BackendRequest) async throws -> BackendResponse {
        let enrollment: Enrollment
        switch try await authenticate(request, tenant: nil) {
        case .failure(let e): return e.response
        case .success(let pair): enrollment = pair.1
        }
        let parsed: PushReceipt.Parsed
        do {
            parsed = try PushReceipt.parse(Array(request.body), now: clock.now())
        } catch {
            return .error(400, code: error.code.rawValue, message: error.message, fix: error.fix ?? "")
        }
        let recorded = try await receipts.record(
            RecordedPushReceipt(
                receipt: parsed.receipt, enrollment: enrollment.id, deviceToken: enrollment.apnsToken,
                recordedAt: clock.now()))
        logger.info(
            "push receipt",
            metadata: [
                "enrollment": "\(enrollment.id)", "apns_id": "\(parsed.receipt.apnsID ?? "-")",
                "push_id": "\(parsed.receipt.pushID ?? "-")", "handled": "\(parsed.receipt.handled.rawValue)",
            ])
        return .json(
            200,
            [
                "status": .string("recorded"), "apns_id": .optional(parsed.receipt.apnsID),
                "push_id": .optional(parsed.receipt.pushID), "handled": .string(parsed.receipt.handled.rawValue),
                "queue_rows": recorded.queueRows.map(JSONValue.int) ?? .null,
                "warnings": .strings(parsed.warnings),
            ])
    }

    /// `GET /admin/receipts[?apns_id=…][&push_id=…]`: the receipts kept, oldest first.
    func listReceipts(_ request: BackendRequest) async -> BackendResponse {
        let list = await receipts.all(apnsID: request.query["apns_id"], pushID: request.query["push_id"])
        return .json(200, ["receipts": .array(list.map(\.jsonValue))])
    }
}
