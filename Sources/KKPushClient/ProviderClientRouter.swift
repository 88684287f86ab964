public import Foundation
public import KKPushAuth
public import KKPushCore
import Synchronization

/// Several apps, keys and teams from one sender: one ``APNsClient`` per credential of a
/// ``ProviderCredentialSet``, made when first needed, so each (credential, environment) has its own connections.
///
/// APNs ties a connection to the team (and the key) of its first token: a second team's token on it is refused
/// (`InvalidProviderToken`), another key of the same team too (`UnrelatedKeyIdInToken`). A client per credential
/// never mixes them; the sandbox and production hosts are separate connections of that client. Every client shares
/// the configuration given here except its credential.
///
/// ```swift
/// let router = try ProviderClientRouter(credentials: set, configuration: base)
/// let (credential, client) = try router.client(credential: nil, topic: "com.example.app", environment: .production)
/// let outcome = await client.send(request, environment: .production)
/// await router.shutdown()
/// ```
public final class ProviderClientRouter: Sendable {
    /// The credentials routed over.
    public let credentials: ProviderCredentialSet
    private let base: APNsClientConfiguration
    private let variables: [String: String]
    private let clock: any WallClock
    private let clients = Mutex<[String: APNsClient]>([:])

    /// `configuration` is every client's, its credential replaced by each entry's; `environment` holds the variables
    /// certificate entries name in `password_env`.
    public init(
        credentials: ProviderCredentialSet, configuration: APNsClientConfiguration,
        environment: [String: String] = ProcessInfo.processInfo.environment, clock: any WallClock = SystemWallClock()
    ) {
        self.credentials = credentials
        self.base = configuration
        self.variables = environment
        self.clock = clock
    }

    /// The credential that serves `topic` in `environment` (the one named, or the first that may) and its client.
    /// Throws the scope problem (a ``KKPushError`` with the problem's code) when none may.
    public func client(credential name: String?, topic: String?, environment: APNsEnvironment) throws -> (
        credential: ProviderCredential, client: APNsClient
    ) {
        switch credentials.resolve(credential: name, topic: topic, environment: environment) {
        case .failure(let problem): throw problem.error
        case .success(let credential): return (credential, try client(for: credential))
        }
    }

    /// The client of `credential` (made on first use: its key or certificate is loaded then).
    public func client(for credential: ProviderCredential) throws -> APNsClient {
        try clients.withLock { clients in
            if let existing = clients[credential.name] { return existing }
            var configuration = base
            switch credential.kind {
            case .token:
                configuration.credential = .token(try credentials.tokenCache(for: credential, clock: clock))
            case .certificate:
                configuration.credential = try .certificate(
                    credentials.clientCertificate(for: credential, environment: variables))
            }
            let client = try APNsClient(configuration: configuration)
            clients[credential.name] = client
            return client
        }
    }

    /// The names of the credentials with a client so far.
    public var clientNames: [String] { clients.withLock { $0.keys.sorted() } }

    /// Shuts every client down.
    public func shutdown() async {
        let all = clients.withLock { Array($0.values) }
        for client in all { await client.shutdown() }
    }
}
