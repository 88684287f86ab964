public import Foundation
public import KKPushCore

/// Why a push failed without an answer from APNs.
public struct PushFailure: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The kind of failure.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// No answer within the request timeout (or the connect timeout).
        case timeout
        /// The connection could not be opened, or dropped.
        case connection
        /// The TLS handshake failed (untrusted server, bad client certificate).
        case tls
        /// An HTTP/2 protocol error, or an answer kkpush cannot read.
        case `protocol`
        /// The server speaks HTTP/1.1 only: APNs is HTTP/2 only, so this is never the real APNs.
        case http1
        /// Pre-flight rules found an error: the request never left the machine.
        case preflight
        /// The client is shutting down, or was misconfigured (no credential, bad proxy URL).
        case client
        /// The TLS handshake refused the client's credential (an expired, revoked or wrong-environment
        /// client certificate): nothing was sent, and retrying cannot help until the credential changes.
        case credential
        /// The sender stopped (SIGINT/SIGTERM, or a shutdown) before an answer came. `possiblyDuplicated`
        /// says whether the request had already been sent.
        case interrupted
        /// A batch input line kkpush could not use (invalid JSON, a missing or mistyped field, an unknown
        /// key, an invalid environment): never sent. `send-batch` reports it with the line number.
        case badInput = "bad-input"
    }

    /// The kind of failure.
    public var kind: Kind
    /// What happened, naming the cause.
    public var message: String
    /// libcurl's error code, if the failure came from libcurl.
    public var curlCode: Int?

    /// Creates a failure.
    public init(kind: Kind, message: String, curlCode: Int? = nil) {
        self.kind = kind
        self.message = message
        self.curlCode = curlCode
    }

    /// `kind: message`.
    public var description: String { "\(kind.rawValue): \(message)" }
}

/// An APNs rejection: the status, the typed reason and, for 410, when the token stopped being valid.
public struct PushRejection: Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status (400, 403, 404, 405, 410, 413, 429, 500, 503).
    public var status: Int
    /// The reason APNs gave, with its explanation and fix.
    public var reason: APNsReason
    /// For 410: the time APNs last confirmed the token was valid for the topic.
    public var timestamp: Date?
    /// The `apns-id` APNs echoed or generated.
    public var apnsID: String?

    /// Creates a rejection.
    public init(status: Int, reason: APNsReason, timestamp: Date? = nil, apnsID: String? = nil) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
    }

    /// `400 BadDeviceToken`.
    public var description: String { "\(status) \(reason.rawValue)" }
}

/// The one final outcome of one notification.
public struct PushOutcome: Sendable, CustomStringConvertible {
    /// What happened.
    public enum Result: Sendable {
        /// APNs accepted the notification (HTTP 200).
        case accepted(apnsID: String?, apnsUniqueID: String?)
        /// APNs answered with an error status.
        case rejected(PushRejection)
        /// There was no usable answer from APNs (or the request never left the machine).
        case failed(PushFailure)
    }

    /// What happened.
    public var result: Result
    /// Time from the first attempt to the final answer.
    public var duration: Duration
    /// How many times the request was sent (0 if pre-flight stopped it).
    public var attempts: Int
    /// True if an earlier attempt may have reached APNs (the connection dropped after the request
    /// was sent), so the device may show the notification twice.
    public var possiblyDuplicated: Bool
    /// The endpoint the notification went to.
    public var endpoint: APNsEndpoint
    /// Pre-flight warnings (and, when pre-flight stopped the request, its errors).
    public var problems: [Problem]
    /// The connection the last request sent went on: connections are numbered from 1 in the order this process
    /// opened them, over all its clients (every socket counted, so numbers may skip). Nil when no request was sent
    /// (pre-flight stopped it, no connection could be made, the client stopped first). A push the client stopped
    /// while a retry waited keeps the number of the connection its last request went on. Pushes with one number
    /// shared a connection: a burst of failures on one number is that connection's, not the pushes'.
    public var connection: Int?

    /// Creates an outcome.
    public init(
        result: Result, duration: Duration, attempts: Int, possiblyDuplicated: Bool = false,
        endpoint: APNsEndpoint, problems: [Problem] = [], connection: Int? = nil
    ) {
        self.connection = connection
        self.result = result
        self.duration = duration
        self.attempts = attempts
        self.possiblyDuplicated = possiblyDuplicated
        self.endpoint = endpoint
        self.problems = problems
    }

    /// True if APNs accepted the notification.
    public var isAccepted: Bool {
        if case .accepted = result { return true }
        return false
    }

    /// The rejection, if APNs rejected the notification.
    public var rejection: PushRejection? {
        if case .rejected(let r) = result { return r }
        return nil
    }

    /// The failure, if there was no usable answer.
    public var failure: PushFailure? {
        if case .failed(let f) = result { return f }
        return nil
    }

    /// The `apns-id` of the answer, if any.
    public var apnsID: String? {
        switch result {
        case .accepted(let id, _): id
        case .rejected(let r): r.apnsID
        case .failed: nil
        }
    }

    /// `accepted`, `rejected` or `failed`.
    public var status: String {
        switch result {
        case .accepted: "accepted"
        case .rejected: "rejected"
        case .failed: "failed"
        }
    }

    /// APNs' answer as an HTTP status: 200 when it accepted the notification, the rejection's status, nil when
    /// there was no answer (a failure). What a result line's `http_status` and an activity registry's answer say.
    public var httpStatus: Int? {
        switch result {
        case .accepted: 200
        case .rejected(let r): r.status
        case .failed: nil
        }
    }

    /// The duration in milliseconds.
    public var durationMilliseconds: Double {
        let c = duration.components
        return Double(c.seconds) * 1000 + Double(c.attoseconds) / 1e15
    }

    /// One line: the status, the reason or failure, and the time taken.
    public var description: String {
        let detail: String
        switch result {
        case .accepted(let id, _): detail = "apns-id \(id ?? "-")"
        case .rejected(let r): detail = r.description
        case .failed(let f): detail = f.description
        }
        return "\(status) \(detail) in \(String(format: "%.1f", durationMilliseconds)) ms, \(attempts) attempt(s)"
            + (possiblyDuplicated ? ", possibly delivered twice" : "")
    }
}

/// The outcome of one notification of a batch.
public struct PushResult: Sendable {
    /// The position of the notification in the batch, from 0.
    public var index: Int
    /// The device token the notification went to.
    public var deviceToken: String
    /// The final outcome.
    public var outcome: PushOutcome

    /// Creates a result.
    public init(index: Int, deviceToken: String, outcome: PushOutcome) {
        self.index = index
        self.deviceToken = deviceToken
        self.outcome = outcome
    }
}
