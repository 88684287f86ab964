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
/// Holds at most `capacity` entries; a long benchmark overwrites the oldest instead of growing, and the log counts
/// what it dropped, so a reader is told (``dropped``, ``removedThrough``) rather than handed a silently short log.
/// Entries are appended in increasing ``Sequenced/sequence`` order, so they are found by sequence with a binary
/// search, and paged through by it (``page(after:before:limit:where:)``).
struct RingLog<Entry: Sequenced & Sendable> {
    private var storage: [Entry] = []
    private var start = 0
    let capacity: Int
    /// Entries dropped to stay within ``capacity`` since the log was made or last emptied.
    private(set) var dropped = 0
    /// The highest sequence no longer held, dropped or emptied (0: none): entries up to it cannot be read again.
    private(set) var removedThrough: UInt64 = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        storage.reserveCapacity(min(self.capacity, 1024))
    }

    /// The number of entries held.
    var count: Int { storage.count }

    /// The oldest and newest sequence held (nil when empty).
    var oldestSequence: UInt64? { storage.isEmpty ? nil : self[0].sequence }
    var newestSequence: UInt64? { storage.isEmpty ? nil : self[storage.count - 1].sequence }

    /// The `index`-th entry held, oldest first.
    private subscript(index: Int) -> Entry { storage[(start + index) % storage.count] }

    mutating func append(_ entry: Entry) {
        if storage.count < capacity {
            storage.append(entry)
        } else {
            removedThrough = max(removedThrough, storage[start].sequence)
            dropped += 1
            storage[start] = entry
            start = (start + 1) % capacity
        }
    }

    mutating func removeAll() {
        if let newest = newestSequence { removedThrough = max(removedThrough, newest) }
        storage.removeAll(keepingCapacity: false)
        start = 0
        dropped = 0
    }

    /// The index (oldest first) of the first entry whose sequence is above `sequence` (``count`` if none).
    private func firstIndex(after sequence: UInt64) -> Int {
        var low = 0
        var high = storage.count
        while low < high {
            let middle = (low + high) / 2
            if self[middle].sequence <= sequence { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The entry numbered `sequence`, if it is still held.
    func entry(sequence: UInt64) -> Entry? {
        let index = firstIndex(after: sequence &- 1)
        guard sequence > 0, index < storage.count, self[index].sequence == sequence else { return nil }
        return self[index]
    }

    /// Replaces the entry with `entry`'s sequence, if it is still held (a delivery whose state changed); false if not.
    @discardableResult
    mutating func replace(_ entry: Entry) -> Bool {
        let index = firstIndex(after: entry.sequence &- 1)
        guard entry.sequence > 0, index < storage.count, self[index].sequence == entry.sequence else { return false }
        storage[(start + index) % storage.count] = entry
        return true
    }

    /// Entries matching `predicate`, oldest first, at most `limit` (the newest ones if more match).
    func entries(limit: Int, where predicate: (Entry) -> Bool) -> [Entry] {
        withoutActuallyEscaping(predicate) { page(after: nil, before: nil, limit: limit, where: $0).entries }
    }

    /// Entries after sequence `after` matching `predicate`, oldest first, at most `limit`.
    func entries(after: UInt64, limit: Int, where predicate: (Entry) -> Bool) -> [Entry] {
        withoutActuallyEscaping(predicate) { page(after: after, before: nil, limit: limit, where: $0).entries }
    }

    /// One page of the entries matching `predicate` (nil: every entry), oldest first, at most `limit`.
    ///
    /// - With `after`: the oldest matching entries whose sequence is above it (and below `before`, if given):
    ///   paging forward, and tailing the log.
    /// - Otherwise: the newest matching entries below `before` (every entry, without it): paging back.
    ///
    /// The cursor is an entry's sequence, fixed when it is logged: an entry that later changes in place under its
    /// sequence (a delivery's state and history, ``replace(_:)``) is neither skipped nor repeated by a reader paging
    /// through, and a filter on such a field is one more `predicate`.
    func page(after: UInt64?, before: UInt64?, limit: Int, where predicate: ((Entry) -> Bool)?) -> LogPage<Entry> {
        let n = storage.count
        let low = after.map { firstIndex(after: $0) } ?? 0
        let high = before.map { $0 == 0 ? 0 : firstIndex(after: $0 - 1) } ?? n
        var found: [Entry] = []
        var truncated = false
        if limit > 0, low < high {
            let matches = predicate ?? { _ in true }
            if after != nil {
                var index = low
                while index < high {
                    let entry = self[index]
                    index += 1
                    guard matches(entry) else { continue }
                    if found.count == limit {
                        truncated = true
                        break
                    }
                    found.append(entry)
                }
            } else {
                var index = high
                while index > low {
                    index -= 1
                    let entry = self[index]
                    guard matches(entry) else { continue }
                    if found.count == limit {
                        truncated = true
                        break
                    }
                    found.append(entry)
                }
                found.reverse()
            }
        }
        var total = n
        if let predicate {
            total = 0
            for index in 0..<n where predicate(self[index]) { total += 1 }
        }
        let missed = after.map { removedThrough > $0 ? Int(removedThrough - $0) : 0 } ?? 0
        return LogPage(
            entries: found, total: total, truncated: truncated, oldestSequence: oldestSequence,
            newestSequence: newestSequence, capacity: capacity, dropped: dropped, missed: missed)
    }
}

/// One page of a ``RingLog``: the entries and what the log holds beyond them.
struct LogPage<Entry: Sendable>: Sendable {
    /// The page's entries, oldest first.
    var entries: [Entry]
    /// The entries the log holds that match the filter, on every page.
    var total: Int
    /// More matching entries lie beyond this page, on the side it was read toward (newer with `after`, else older).
    var truncated: Bool
    var oldestSequence: UInt64?
    var newestSequence: UInt64?
    var capacity: Int
    /// Entries the log dropped to stay within its capacity since it was made or emptied.
    var dropped: Int
    /// With `after`: entries after the cursor that are no longer held (dropped, or emptied by a reset) and so were
    /// missed by a reader that fell behind.
    var missed: Int
}
