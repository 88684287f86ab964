package import KKPushClient
package import KKPushCore
import Synchronization

/// A ``QueueClientRouter`` whose router can be replaced while the worker runs (`kkpush worker`'s SIGHUP: the key
/// files read again). Claims after ``replace(with:retireAfter:)`` use the new clients; the old ones keep the pushes
/// already handed to them and are shut down `retireAfter` seconds later (or when the worker ends), so a reload
/// never interrupts a push in flight and never drops a row.
package final class ReloadableClientRouter: QueueClientRouter {
    private struct State {
        var current: any QueueClientRouter
        var retiring: [Int: any QueueClientRouter] = [:]
        var replaced = 0
        var shutDown = false
    }
    private let state: Mutex<State>

    package init(_ router: any QueueClientRouter) { state = Mutex(State(current: router)) }

    package func client(forCredential credential: String?, topic: String, environment: APNsEnvironment) throws
        -> APNsClient
    {
        let current = state.withLock { $0.current }
        return try current.client(forCredential: credential, topic: topic, environment: environment)
    }

    /// Sends later claims through `router`; the previous router is shut down after `retireAfter` seconds. After
    /// ``shutdown()``, `router` is shut down at once instead.
    package func replace(with router: any QueueClientRouter, retireAfter seconds: Double) {
        let number = state.withLock { s -> Int? in
            if s.shutDown { return nil }
            s.replaced += 1
            s.retiring[s.replaced] = s.current
            s.current = router
            return s.replaced
        }
        guard let number else {
            Task { await router.shutdown() }
            return
        }
        Task {
            try? await Task.sleep(for: .milliseconds(Int(max(0, seconds) * 1000)))
            // Nil when the worker's shutdown took it already.
            if let old = state.withLock({ $0.retiring.removeValue(forKey: number) }) { await old.shutdown() }
        }
    }

    package func shutdown() async {
        let all = state.withLock { s -> [any QueueClientRouter] in
            s.shutDown = true
            defer { s.retiring.removeAll() }
            return [s.current] + Array(s.retiring.values)
        }
        for router in all { await router.shutdown() }
    }
}
