import Foundation
import KKPushCore
import KantineKoningReceipts
import Testing

@testable import KantineKoning

/// The push receipt contract as the backend reads it: what it takes, and each refusal naming its field.
@Suite("The push receipt contract")
struct PushReceiptContractTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func parse(_ json: String) throws(KKPushError) -> PushReceipt.Parsed {
        try PushReceipt.parse(Array(json.utf8), now: now)
    }

    @Test("A full receipt is read field by field; an unknown field is a warning, not an error")
    func reads() throws {
        let parsed = try Self.parse(
            #"{"apns_id": "6F1E6B7A-2C44-4E0B-9C1D-0A3B5C7D9E11", "push_id": "d-1", "received_at": "2027-01-15T08:00:00Z", "handled": "refreshed", "handled_at": "2027-01-15T08:00:02Z", "handler": "background-handler", "app_version": "2.4.0", "build": "240", "battery": 80}"#
        )
        let receipt = parsed.receipt
        #expect(receipt.apnsID == "6f1e6b7a-2c44-4e0b-9c1d-0a3b5c7d9e11" && receipt.pushID == "d-1")
        #expect(receipt.handled == .refreshed && receipt.handler == "background-handler")
        #expect(receipt.handledAt?.timeIntervalSince(receipt.receivedAt) == 2)
        #expect(receipt.appVersion == "2.4.0" && receipt.build == "240")
        #expect(parsed.warnings.count == 1 && parsed.warnings[0].contains("battery"))
        // What the app posts reads back as the same receipt.
        let again = try PushReceipt.parse(receipt.jsonValue.encoded(), now: Self.now)
        #expect(again.receipt == receipt && again.warnings.isEmpty)
        #expect(PushReceipt.pushID(inPayload: Array(#"{"aps":{},"kk_push_id":17}"#.utf8)) == "17")
        #expect(PushReceipt.pushID(inPayload: Array(#"{"aps":{}}"#.utf8)) == nil)
    }

    @Test(
        "Each bad field is refused naming it",
        arguments: [
            (#"[1]"#, "a JSON array"),
            (#"{"received_at": "2027-01-15T08:00:00Z", "handled": "shown"}"#, "neither apns_id nor push_id"),
            (#"{"apns_id": "abc", "received_at": "2027-01-15T08:00:00Z", "handled": "shown"}"#, "apns_id 'abc'"),
            (#"{"push_id": 7, "received_at": "2027-01-15T08:00:00Z", "handled": "shown"}"#, "push_id is a JSON number"),
            (#"{"push_id": "p", "handled": "shown"}"#, "received_at is missing"),
            (#"{"push_id": "p", "received_at": "yesterday", "handled": "shown"}"#, "received_at 'yesterday'"),
            (
                #"{"push_id": "p", "received_at": "2027-01-16T08:00:00Z", "handled": "shown"}"#,
                "after the backend's time"
            ),
            (#"{"push_id": "p", "received_at": "2027-01-15T08:00:00Z"}"#, "handled is missing"),
            (#"{"push_id": "p", "received_at": "2027-01-15T08:00:00Z", "handled": "opened"}"#, "handled 'opened'"),
            (
                #"{"push_id": "p", "received_at": "2027-01-15T08:00:00Z", "handled": "shown", "handled_at": "2027-01-15T07:00:00Z"}"#,
                "handled_at 2027-01-15T07:00:00Z is before"
            ),
            (
                #"{"push_id": "p", "received_at": "2027-01-15T08:00:00Z", "handled": "shown", "handler": "widget"}"#,
                "handler 'widget'"
            ),
        ])
    func refuses(body: String, words: String) throws {
        let error = #expect(throws: KKPushError.self) { try Self.parse(body) }
        #expect(error?.code == .receiptInvalid && error?.code.kind == .input)
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "")")
        #expect(error?.fix?.isEmpty == false)
    }
}
