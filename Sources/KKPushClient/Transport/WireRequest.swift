import Foundation
import KKPushCore

/// A device push in transport form: what goes on the wire, nothing else. A class, so that moving a
/// job between the queue, the transfer and the retry list costs one reference count, not ten.
final class WireRequest: Sendable {
    let endpoint: APNsEndpoint
    /// The request as the notifications model has it; its `headerFields` are the `apns-*` headers sent.
    let request: NotificationRequest
    /// The token is ASCII letters and digits only (every token APNs can accept), so it can go into the
    /// path as it is. Worked out where the request is made, not on the loop thread.
    let plainToken: Bool

    init(endpoint: APNsEndpoint, request: NotificationRequest) {
        self.endpoint = endpoint
        self.request = request
        plainToken = Self.isPlain(request.deviceToken)
    }

    private static func isPlain(_ token: String) -> Bool {
        var any = false
        for byte in token.utf8 {
            guard (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) else { return false }
            any = true
        }
        return any
    }

    /// The device token, as it goes into the path.
    var deviceToken: String { request.deviceToken }
    /// The body.
    var payload: [UInt8] { request.payload }
}

/// Receives final outcomes; called on the client's loop thread, exactly once per job.
protocol ResultSink: AnyObject, Sendable {
    /// One job finished.
    func deliver(_ result: PushResult)
}

/// One notification on its way: the request, where its outcome goes, and its retry state.
struct Job: Sendable {
    let request: WireRequest
    let sink: any ResultSink
    /// The batch the job came from, if any.
    var feed: (any JobFeed)? = nil
    let index: Int
    var problems: [Problem] = []
    /// Set when the job ends before it is sent (pre-flight found an error).
    var immediate: PushOutcome.Result? = nil
    var attempts = 0
    var startNanos: UInt64 = 0
    var dueNanos: UInt64 = 0
    var possiblyDuplicated = false
    var freshConnect = false
    var refreshedToken = false
    /// The provider token the last attempt carried.
    var bearerValue: String? = nil
    /// The number of the connection the last attempt that was sent went on (``PushOutcome/connection``).
    var lastConnection: Int? = nil
}

/// A first-in first-out queue of jobs (a ring buffer), owned by the loop thread.
struct JobQueue {
    private var storage: [Job?] = []
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ job: Job) {
        if count == storage.count { grow() }
        storage[(head + count) % storage.count] = job
        count += 1
    }

    mutating func popFirst() -> Job? {
        guard count > 0 else { return nil }
        let job = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        count -= 1
        return job
    }

    private mutating func grow() {
        let newCapacity = max(16, storage.count * 2)
        var next = [Job?](repeating: nil, count: newCapacity)
        for i in 0..<count { next[i] = storage[(head + i) % storage.count] }
        storage = next
        head = 0
    }
}
