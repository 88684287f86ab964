package import Foundation
package import KKPushActivities
package import KKPushAuth
package import KKPushBackend
package import KKPushClient
package import KKPushCore
package import KKPushMock
package import KantineKoning
package import Logging
import Synchronization

/// What a simulation runs with; every field has a default.
package struct SimulationConfiguration: Sendable {
    /// The folder with the mock's TLS certificate (`server.crt`, `server.key`, `ca.crt`); nil: found
    /// as the mock finds it (`$KKPUSH_CERTIFICATES`, then `Certificates/` up from the working directory
    /// and from the executable).
    package var certificatesDirectory: String?
    /// The backend's `APNS_FORCE_ENV` / `APNS_ENV`.
    package var serverSettings: ServerAPNsSettings
    /// The app's bundle id (the push topic).
    package var bundleID: String
    /// How long the provider-token cache reuses a token (20…60 minutes).
    package var providerTokenReuse: TimeInterval
    /// How many enrollments and token updates run at once while setting up devices.
    package var setupConcurrency: Int
    /// The most the simulation waits for the apps to handle their pushes.
    package var timeout: Duration
    /// Where the simulation's parts log (silent by default).
    package var logger: Logger

    /// Creates a configuration.
    package init(
        certificatesDirectory: String? = nil, serverSettings: ServerAPNsSettings = ServerAPNsSettings(),
        bundleID: String = TokenUpdate.defaultBundleID, providerTokenReuse: TimeInterval = 50 * 60,
        setupConcurrency: Int = 32, timeout: Duration = .seconds(30),
        logger: Logger = Logger(label: "kkpush.simulator", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.certificatesDirectory = certificatesDirectory
        self.serverSettings = serverSettings
        self.bundleID = bundleID
        self.providerTokenReuse = providerTokenReuse
        self.setupConcurrency = setupConcurrency
        self.timeout = timeout
        self.logger = logger
    }
}

/// A running world for simulated apps: the mock APNs server (both environments, TLS on loopback), an
/// APNs client (libcurl, provider token from a fresh ES256 key registered with the mock), and the
/// simulated backend (plain HTTP on loopback) that pushes through that client.
package final class SimulationWorld: Sendable {
    /// The mock APNs server.
    package let mock: MockAPNsServer
    /// The APNs client the backend sends with.
    package let client: APNsClient
    /// The simulated backend.
    package let backend: SimulatedBackend
    /// An HTTP client for the backend.
    package let api: BackendAPI
    /// The provider-token cache (its counters show `ExpiredProviderToken` recoveries).
    package let tokenCache: ProviderTokenCache
    /// The provider's clock (the token cache's), which scenarios may move apart from the mock's.
    package let providerClock: OffsetWallClock
    /// The mock's clock, which the apps measure latency with.
    package let mockClock: MockServerClock
    /// Every push-handling result of every app made by ``makeApp(name:build:enrollments:handlers:)``.
    package let collector: HandledCollector
    /// The configuration.
    package let configuration: SimulationConfiguration

    /// The provider key's team id.
    package static let teamID = "KKSIMTEAM1"
    /// The provider key's key id.
    package static let keyID = "KKSIMKEY01"

    init(
        mock: MockAPNsServer, client: APNsClient, backend: SimulatedBackend, tokenCache: ProviderTokenCache,
        providerClock: OffsetWallClock, configuration: SimulationConfiguration
    ) throws {
        self.mock = mock
        self.client = client
        self.backend = backend
        self.api = try BackendAPI(baseURL: backend.baseURL)
        self.tokenCache = tokenCache
        self.providerClock = providerClock
        self.mockClock = MockServerClock(server: mock)
        self.collector = HandledCollector()
        self.configuration = configuration
    }

    /// Makes an app, enrolls it (each enrollment gets its own JWT), registers it with the mock for its
    /// build's environment, and sends its token updates. Its push results go to ``collector``. With
    /// `previous`, the new app (a new identifierForVendor) first takes over the data `previous` kept on the
    /// phone (its enrollments become superseded ones).
    package func makeApp(
        name: String, build: AppBuild, enrollments: [EnrollmentSpec],
        handlers: [any PushHandler] = SimulatedApp.defaultHandlers, carryingOver previous: SimulatedApp? = nil,
        postsReceipts: Bool = false
    ) async throws -> SimulatedApp {
        let collector = self.collector
        let app = SimulatedApp(
            name: name, build: build, bundleID: configuration.bundleID, api: api, clock: mockClock, handlers: handlers,
            onHandled: { collector.add($0) }, postsReceipts: postsReceipts, logger: configuration.logger)
        if let previous { await app.adoptPersistedData(of: previous) }
        for spec in enrollments { try await app.enroll(spec) }
        await app.registerForRemoteNotifications(with: mock)
        let attempts = await app.sendTokenUpdates()
        if let failed = attempts.first(where: { !$0.succeeded }) {
            throw KKPushError(
                code: .simulateTokenUpdateFailed,
                message:
                    "\(name): the token update for \(failed.enrollment) failed: HTTP \(failed.status) \(failed.error?.code.rawValue ?? "") \(failed.error?.message ?? "").",
                fix: failed.error?.fix ?? "See the backend's answer.")
        }
        return app
    }

    /// The next dienst (the soonest that has not started) of `team` in `tenant`.
    package func nextDienst(tenant: String, team: String) async throws -> Dienst {
        let now = Date()
        let candidates = try await api.allDiensten()
            .filter { $0.tenantSlug == tenant && $0.teamCode == team && $0.startTime > now }
            .sorted { $0.startTime < $1.startTime }
        guard let first = candidates.first else {
            throw KKPushError(
                code: .simulateNoDienst, message: "The backend has no upcoming dienst for \(tenant) \(team).",
                fix: "Use a team of the backend's seed: vvwilhelmus JO11-3, JO11-5, JO13-1; agovv JO10-5.")
        }
        return first
    }

    /// Changes the next dienst of `team` (adds a volunteer) through the backend's admin API, which
    /// pushes the dienst update to the team's devices; returns the fan-out.
    package func changeNextDienst(tenant: String, team: String, volunteer: String = "Sanne") async throws
        -> DienstChangeResult
    {
        let dienst = try await nextDienst(tenant: tenant, team: team)
        var volunteers = dienst.volunteers
        if !volunteers.contains(volunteer) {
            volunteers.append(volunteer)
        } else {
            volunteers.removeAll { $0 == volunteer }
        }
        return try await api.changeDienst(id: dienst.id, volunteers: volunteers)
    }
}

/// Starts the mock APNs server, an APNs client and the simulated backend, runs `body`, and shuts all
/// three down (also when `body` throws). `activities`: the activity registry the backend records the token updates'
/// `live_activity` tokens in (nil: none); `backendClock`: the backend's clock (the registry's times).
package func withSimulationWorld<T: Sendable>(
    configuration: SimulationConfiguration = SimulationConfiguration(),
    activities: (any ActivityRegistry)? = nil, backendClock: any WallClock = SystemWallClock(),
    _ body: (SimulationWorld) async throws -> T
) async throws -> T {
    let key = try ES256PrivateKey.generate()
    var mockConfiguration = MockServerConfiguration()
    mockConfiguration.certificatesDirectory =
        configuration.certificatesDirectory ?? MockServerConfiguration.findCertificatesDirectory()
    guard let certificates = mockConfiguration.certificatesDirectory else {
        throw KKPushError(
            code: .simulateCertificatesMissing,
            message: "No Certificates folder with server.crt was found for the mock APNs server's TLS.",
            fix:
                "Run from a checkout of kkpush (it has Certificates/), set KKPUSH_CERTIFICATES, or give the folder (certificates)."
        )
    }
    mockConfiguration.certificatesDirectory = certificates
    mockConfiguration.registerDefaultKeys = false
    mockConfiguration.adminPort = nil
    mockConfiguration.keys = [
        MockKey(teamID: SimulationWorld.teamID, keyID: SimulationWorld.keyID, pem: try key.pemRepresentation())
    ]
    mockConfiguration.strictDeviceTokens = true
    mockConfiguration.logger = configuration.logger
    let providerClock = OffsetWallClock()
    let cache = ProviderTokenCache(
        key: key, keyID: SimulationWorld.keyID, teamID: SimulationWorld.teamID, clock: providerClock,
        reuseFor: configuration.providerTokenReuse, logger: configuration.logger)
    let mock = try await MockAPNsServer.start(configuration: mockConfiguration)
    let client: APNsClient
    do {
        // The mock is on this machine: a slow answer means a busy machine, not a lost network, so the limits are
        // generous (a scenario's verdict must not turn on a loaded CI runner).
        client = try APNsClient(
            configuration: APNsClientConfiguration(
                credential: .token(cache), sandboxEndpoint: mock.sandboxEndpoint,
                productionEndpoint: mock.productionEndpoint,
                connectTimeout: .seconds(30), requestTimeout: .seconds(30),
                retry: APNsRetryPolicy(
                    maxAttempts: 3, initialDelay: .milliseconds(20), maxDelay: .milliseconds(200),
                    maxTotalTime: .seconds(60)),
                logger: configuration.logger))
    } catch {
        try? await mock.shutdown()
        throw error
    }
    // The client goes down first (closing its connections), then the mock. The mock's orderly TLS
    // close of whatever is still open is waited for at most one second; the rest completes in the
    // background.
    func shutdown() async {
        await client.shutdown()
        let stopping = Task { _ = try? await mock.shutdown() }
        await waitAtMost(.seconds(1), for: stopping)
    }
    do {
        var secret = ""
        for _ in 0..<32 { secret += String(format: "%02x", UInt8.random(in: 0...255)) }
        let backendConfiguration = SimulatedBackendConfiguration(
            secret: secret, settings: configuration.serverSettings, bundleID: configuration.bundleID,
            clock: backendClock, logger: configuration.logger)
        let result = try await withSimulatedBackend(
            configuration: backendConfiguration, sender: APNsClientPushSender(client: client), activities: activities
        ) { backend in
            let world = try SimulationWorld(
                mock: mock, client: client, backend: backend, tokenCache: cache, providerClock: providerClock,
                configuration: configuration)
            return try await body(world)
        }
        await shutdown()
        return result
    } catch {
        await shutdown()
        throw error
    }
}

/// Waits for `task` to finish, or `timeout` to pass, whichever comes first (the task goes on).
func waitAtMost(_ timeout: Duration, for task: Task<Void, Never>) async {
    let box = ResumeOnce()
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        box.set(c)
        let timer = Task {
            try? await Task.sleep(for: timeout)
            box.resume()
        }
        Task {
            await task.value
            timer.cancel()
            box.resume()
        }
    }
}

/// A continuation resumed at most once, from whichever task comes first.
final class ResumeOnce: Sendable {
    private let continuation = Mutex<CheckedContinuation<Void, Never>?>(nil)

    func set(_ c: CheckedContinuation<Void, Never>) { continuation.withLock { $0 = c } }

    func resume() {
        let c = continuation.withLock { c -> CheckedContinuation<Void, Never>? in
            defer { c = nil }
            return c
        }
        c?.resume()
    }
}
