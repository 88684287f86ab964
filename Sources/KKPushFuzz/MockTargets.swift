import Foundation
import KKPushCore
import KKPushMock

/// Targets of KKPushMock: the admin API, the `--config` file and an APNs connection's bytes.
enum MockTargets {
    static let all: [FuzzTarget] = [mockAdmin, mockConfig, mockH2]

    /// The configuration every admin exchange starts from: a fixed clock, one registered sandbox
    /// device (so `DELETE /devices/<token>` and the notification polls find it), one fault.
    static func adminConfiguration() -> MockServerConfiguration {
        var configuration = MockServerConfiguration()
        configuration.clock = ManualWallClock(FuzzFixtures.now)
        configuration.registerDefaultKeys = false
        configuration.devices = [
            MockDeviceRegistration(token: FuzzFixtures.deviceToken, environment: .sandbox, topic: FuzzFixtures.bundleID)
        ]
        return configuration
    }

    /// One admin request, through NIO's HTTP/1.1 codec and the admin handler, on a fresh state. Input:
    /// `METHOD URI` on the first line, the body after it (sent with its content-length). The URI is
    /// taken as given, so the codec sees whatever the fuzzer makes of it.
    static let mockAdmin = FuzzTarget(
        name: "mock-admin", maxLength: 2048,
        summary:
            "the mock's admin API (MockAdminExchange: HTTP codec + the admin routes): routes, query strings, JSON bodies"
    ) { bytes in
        let (line, body) = splitFirstLine(bytes)
        let requestLine = text(line)
        let space = requestLine.firstIndex(of: " ") ?? requestLine.endIndex
        let method = String(requestLine[..<space])
        let uri = space < requestLine.endIndex ? String(requestLine[requestLine.index(after: space)...]) : "/"
        guard let exchange = try? MockAdminExchange(configuration: adminConfiguration()) else {
            fuzzFailure("the admin exchange does not start")
        }
        let (status, _) = runBlocking { await exchange.respond(method: method, uri: uri, body: body) }
        fuzzCheck(status == 0 || (200..<600).contains(status), "the admin API answered status \(status)")
    }

    /// A folder of its own for the config files the target writes, holding a copy of the test key so
    /// that `"file": "AuthKey_KKTEST0001.p8"` entries resolve.
    static let configDirectory: String = {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("kkpush-fuzz-config-\(ProcessInfo.processInfo.processIdentifier)").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try? FuzzFixtures.keyKKTEST0001.write(
            toFile: directory + "/AuthKey_KKTEST0001.p8", atomically: true, encoding: .utf8)
        return directory
    }()

    /// `kkpush mock serve --config FILE`: the file is written to disk and applied exactly as the command
    /// applies it (`MockServerConfiguration.apply(configFile:)`, which reads a path), then its keys,
    /// devices and faults are registered in a mock state as the server does at start.
    static let mockConfig = FuzzTarget(
        name: "mock-config", maxLength: 4096,
        summary:
            "MockServerConfiguration.apply(configBytes:path:) (what apply(configFile:) runs on the file's bytes), then registered in a state"
    ) { bytes in
        // The bytes entry point: no file written per input (that was most of this target's time).
        let path = configDirectory + "/config.json"
        var configuration = MockServerConfiguration()
        configuration.clock = FuzzFixtures.clock
        configuration.registerDefaultKeys = false
        do {
            try configuration.apply(configBytes: bytes, path: path)
        } catch {
            return
        }
        for fault in configuration.faults { _ = try? fault.validate() }
        _ = try? MockAdminExchange(configuration: configuration)
    }

    /// The connection every `mock-h2` input opens: the fixtures' clock and key (so a seed's provider token is valid)
    /// and device.
    static let h2Exchange: MockConnectionExchange? = {
        var configuration = adminConfiguration()
        configuration.keys = [
            MockKey(teamID: FuzzFixtures.teamID, keyID: FuzzFixtures.keyID, pem: FuzzFixtures.keyKKTEST0001)
        ]
        return try? MockConnectionExchange(configuration: configuration)
    }()

    static let clientPreface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// What a client writes to an APNs connection after the TLS handshake: the preface, then the input's frames, read
    /// in pieces of (first byte + 1) bytes, so the frame layer also meets frames cut anywhere. What the mock writes
    /// back must be whole frames, its SETTINGS first.
    static let mockH2 = FuzzTarget(
        name: "mock-h2", maxLength: 4096,
        summary:
            "an APNs connection's bytes (MockConnectionExchange): the frame layer (libnghttp2), the header-block rules, the connection handler, route and judge"
    ) { bytes in
        guard let exchange = h2Exchange else { fuzzFailure("the connection exchange does not start") }
        let readSize = bytes.first.map { Int($0) + 1 } ?? 16384
        let out = exchange.respond(to: clientPreface + bytes.dropFirst(), readSize: readSize)
        var offset = 0
        var first = true
        while offset + 9 <= out.count {
            let length = Int(out[offset]) << 16 | Int(out[offset + 1]) << 8 | Int(out[offset + 2])
            if first {
                fuzzCheck(out[offset + 3] == 0x4, "the mock's first frame is type \(out[offset + 3]), not SETTINGS")
                first = false
            }
            offset += 9 + length
        }
        fuzzCheck(offset == out.count, "the mock wrote a partial frame (\(out.count) bytes, frames end at \(offset))")
    }
}
