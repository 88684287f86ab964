import Foundation
import KKPushCore
import KKPushMock

/// Targets of KKPushMock: the admin API and the `--config` file.
enum MockTargets {
    static let all: [FuzzTarget] = [mockAdmin, mockConfig]

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
}
