import Foundation
package import KKPushClient
import KKPushCore
import KKPushStore
import Synchronization

/// What a worker's health and readiness endpoints read of it (`kkpush worker --http`): whether its loop runs,
/// whether a credential is loaded, and what its last contact with APNs said.
///
/// "Able to open an APNs connection" is judged from what the worker saw, not by a connection of its own per
/// question (a probe every few seconds from each orchestrator would be traffic APNs sees): able while a credential
/// is loaded and the last claim's pushes did not all fail to connect (a connection or TLS failure) or all come back
/// refused for the credential (403 InvalidProviderToken, …). A worker that has sent nothing yet is able once its
/// credential loaded.
package final class QueueWorkerHealth: Sendable {
    private struct State {
        var running = false
        var credentialLoaded = false
        var credentialProblem: String?
        var apnsProblem: String?
        var lastAnswer: Date?
    }
    private let state = Mutex(State())

    package init() {}

    /// The worker's loop started (true) or ended (false).
    package func setRunning(_ running: Bool) { state.withLock { $0.running = running } }

    /// Whether the worker's loop is running.
    package var isRunning: Bool { state.withLock { $0.running } }

    /// A credential was loaded (`problem` nil), or loading one failed (the problem's words).
    package func credential(loaded: Bool, problem: String? = nil) {
        state.withLock {
            $0.credentialLoaded = loaded
            $0.credentialProblem = problem
            // A new credential gets a fresh start: its first claim says whether APNs takes it.
            if loaded { $0.apnsProblem = nil }
        }
    }

    /// A claim's outcomes: any answer from APNs that is not about the credential clears the problem; a claim whose
    /// pushes all failed to connect, or were all refused for the credential, sets it.
    package func observe(_ outcomes: [PushOutcome]) {
        var answered = false
        var problem: String?
        for outcome in outcomes {
            switch outcome.result {
            case .accepted:
                answered = true
            case .rejected(let rejection):
                if QueueVerdict.isConfiguration(outcome) {
                    problem = "APNs refused the worker's credential: \(rejection.status) \(rejection.reason.rawValue)"
                } else {
                    answered = true
                }
            case .failed(let failure):
                if failure.kind == .connection || failure.kind == .tls {
                    problem = "no connection to APNs: \(failure.kind.rawValue): \(failure.message.prefix(200))"
                }
            }
        }
        state.withLock { s in
            if answered {
                s.apnsProblem = nil
                s.lastAnswer = Date()
            } else if let problem {
                s.apnsProblem = problem
            }
        }
    }

    /// Why the worker cannot send now as far as APNs goes (nil: it can).
    package var apnsProblem: String? {
        state.withLock { s in
            if !s.credentialLoaded { return s.credentialProblem ?? "no credential loaded" }
            return s.apnsProblem
        }
    }
}

extension PushQueueStore {
    /// `SELECT 1`: whether the database answers now (a readiness probe).
    package func ping() async throws {
        _ = try await exec("SELECT 1")
    }
}
