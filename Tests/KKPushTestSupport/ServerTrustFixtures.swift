import Foundation
import KKPushAuth
import KKPushCore
import KKPushMock
import KKPushSystem
package import KKPushTrust

/// Server trust against the mock over real TLS on 127.0.0.1, as the trust engine's tests (KKPushTrustTests) and
/// `kkpush tls check`'s tests (KKPushCLITests) both set it up: the mock serving a chain, the check run on it, the
/// openssl command line for chains made by hand.
package enum ServerTrustFixtures {
    /// The repository's test CA (`Certificates/ca.crt`), which signs the mock's own certificate.
    package static let testCA = Repository.certificates.appendingPathComponent("ca.crt").path

    /// A stand-in chain's files in `folder`, as `kkpush mock certs --chain usertrust` writes them.
    package struct StandIn: Sendable {
        package var folder: String
        package init(folder: String) { self.folder = folder }
        package var chain: String { folder + "/server.crt" }
        package var key: String { folder + "/server.key" }
        package var leaf: String { folder + "/leaf.crt" }
        package var intermediate: String { folder + "/intermediate.crt" }
        package var root: String { folder + "/root.crt" }
    }

    /// The engine's stand-in chain's folder, once made (removed at exit).
    nonisolated(unsafe) static var madeFolder: String?

    /// The one making of the USERTrust stand-in through the engine (`StandInChainReport.write`, with the names
    /// `mock certs --chain usertrust` gives it: loopback), shared by every test of the run that needs it (an RSA
    /// 4096 key takes a while: made once, not by each test at once).
    static let making = Task { () async throws -> StandIn in
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-trust-\(UUID().uuidString)")
            .path
        let (names, ips) = ServerCertificateIssuer.subjectNames(hostNames: [], addresses: [], loopback: true)
        _ = try StandInChainReport.write(
            shape: StandInChain.appleUSERTrust, hostNames: names.map(ServerCertificateIssuer.checkedHostName),
            addresses: ips.map(ServerCertificateIssuer.checkedAddress), days: 365, out: OutputFolder(folder),
            replace: false)
        // Removed when the test process exits (shared by every test of the run, so not before).
        madeFolder = folder
        atexit {
            if let folder = ServerTrustFixtures.madeFolder { try? FileManager.default.removeItem(atPath: folder) }
        }
        return StandIn(folder: folder)
    }

    /// The USERTrust stand-in made by the engine into a temporary folder, once per run.
    package static func standIn() async throws -> StandIn { try await making.value }

    /// A chain a test needs could not be made.
    package struct StandInFailure: Error, CustomStringConvertible {
        package var detail: String
        package init(detail: String) { self.detail = detail }
        package var description: String { "the stand-in chain was not made: \(detail)" }
    }

    /// The mock serving `chain` with `key` (nil: its own test certificate), its sandbox port given to `body`.
    package static func withMock<R: Sendable>(
        chain: String? = nil, key: String? = nil, _ body: @Sendable (Int) async throws -> R
    ) async throws -> R {
        var configuration = MockServerConfiguration.forTests()
        configuration.certificateFile = chain
        configuration.privateKeyFile = key
        return try await withMockServer(configuration: configuration) { server in
            try await body(server.sandboxEndpoint.port)
        }
    }

    /// The trust check on 127.0.0.1:`port` with `anchors` (`bundle`: the system bundle's stand-in).
    package static func check(_ port: Int, _ anchors: ServerTrustCheck.Anchors, bundle: String? = nil) async throws
        -> ServerTrustReport
    {
        try await ServerTrustCheck.runOffThread(
            host: "127.0.0.1", port: port, anchors: anchors, timeout: 30, systemBundle: bundle)
    }

    /// `openssl arguments...` in `folder`; a failure throws what openssl said.
    package static func openssl(_ arguments: [String], in folder: String) async throws {
        let r = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/openssl"), arguments, currentDirectory: URL(fileURLWithPath: folder),
            timeout: 60)
        guard r.status == 0 else {
            throw StandInFailure(
                detail: "openssl \(arguments.joined(separator: " ")): \(String(decoding: r.stderr, as: UTF8.self))")
        }
    }
}
