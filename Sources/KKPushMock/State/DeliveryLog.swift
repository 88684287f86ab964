/// An entry of a ``RingLog``: numbered from 1, increasing.
protocol Sequenced {
    var sequence: UInt64 { get }
}

extension DeliveredNotification: Sequenced {}
extension RejectedRequest: Sequenced {}

/// The notifications the mock accepted, oldest first.
typealias DeliveryLog = RingLog<DeliveredNotification>
/// The requests the mock rejected, oldest first.
typealias RejectionLog = RingLog<RejectedRequest>

/// A bounded ring buffer, oldest first.
///
/// Holds at most `capacity` entries; a long benchmark overwrites the oldest instead of growing.
struct RingLog<Entry: Sequenced & Sendable> {
    private var storage: [Entry] = []
    private var start = 0
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        storage.reserveCapacity(min(self.capacity, 1024))
    }

    /// The number of entries held.
    var count: Int { storage.count }

    mutating func append(_ entry: Entry) {
        if storage.count < capacity {
            storage.append(entry)
        } else {
            storage[start] = entry
            start = (start + 1) % capacity
        }
    }

    mutating func removeAll() {
        storage.removeAll(keepingCapacity: false)
        start = 0
    }

    /// Entries matching `predicate`, oldest first, at most `limit` (the newest ones if more match).
    func entries(limit: Int, where predicate: (Entry) -> Bool) -> [Entry] {
        guard limit > 0 else { return [] }
        var out: [Entry] = []
        // Walk newest to oldest so the limit keeps the newest.
        let n = storage.count
        var i = 0
        while i < n && out.count < limit {
            let index = (start + n - 1 - i) % n
            let entry = storage[index]
            if predicate(entry) { out.append(entry) }
            i += 1
        }
        return out.reversed()
    }

    /// Entries after sequence `after` matching `predicate`, oldest first, at most `limit`.
    func entries(after: UInt64, limit: Int, where predicate: (Entry) -> Bool)
        -> [Entry]
    {
        guard limit > 0 else { return [] }
        var out: [Entry] = []
        let n = storage.count
        var i = 0
        while i < n && out.count < limit {
            let entry = storage[(start + i) % n]
            if entry.sequence > after && predicate(entry) { out.append(entry) }
            i += 1
        }
        return out
    }
}
