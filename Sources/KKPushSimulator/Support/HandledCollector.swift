import Foundation
import Synchronization

/// Collects the apps' push-handling results (from any task) and lets the simulation wait, with a
/// deadline, until a number of them have arrived.
package final class HandledCollector: Sendable {
    private struct Waiter {
        var id: Int
        var count: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var results: [PushHandlingResult] = []
        var waiters: [Waiter] = []
        var expired: Set<Int> = []
        var nextID = 0
    }

    private let state = Mutex(State())

    /// Creates an empty collector.
    package init() {}

    /// Adds a result (pass this as the apps' `onHandled`).
    package func add(_ result: PushHandlingResult) {
        let ready: [CheckedContinuation<Void, Never>] = state.withLock { s in
            s.results.append(result)
            let n = s.results.count
            let ready = s.waiters.filter { $0.count <= n }.map(\.continuation)
            s.waiters.removeAll { $0.count <= n }
            return ready
        }
        for c in ready { c.resume() }
    }

    /// Every result so far, in arrival order.
    package var results: [PushHandlingResult] { state.withLock { $0.results } }

    /// How many results have arrived.
    package var count: Int { state.withLock { $0.results.count } }

    /// Waits until at least `count` results have arrived or `timeout` has passed; true if they arrived.
    package func wait(forAtLeast count: Int, timeout: Duration) async -> Bool {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let resumeNow = self.state.withLock { s -> Bool in
                        if s.results.count >= count || s.expired.contains(id) { return true }
                        s.waiters.append(Waiter(id: id, count: count, continuation: c))
                        return false
                    }
                    if resumeNow { c.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                let waiting = self.state.withLock { s -> CheckedContinuation<Void, Never>? in
                    s.expired.insert(id)
                    guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return s.waiters.remove(at: i).continuation
                }
                waiting?.resume()
            }
            await group.next()
            group.cancelAll()
        }
        return self.count >= count
    }
}
