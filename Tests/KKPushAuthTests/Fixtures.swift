import Foundation
import KKPushAuth
import KKPushCore

/// Paths of the committed test material in `Certificates/`, found relative to this file.
enum Fixtures {
    static let certificates: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Certificates").path

    static func path(_ name: String) -> String { certificates + "/" + name }

    static func text(_ name: String) throws -> String {
        try String(contentsOfFile: path(name), encoding: .utf8)
    }

    /// The key registry `keys.json`.
    struct KeyEntry: Decodable, Sendable {
        var key_id: String
        var team_id: String
        var file: String
        var environments: [String]
    }

    static func keys() throws -> [KeyEntry] {
        try JSONDecoder().decode([KeyEntry].self, from: Data(contentsOf: URL(fileURLWithPath: path("keys.json"))))
    }
}

/// A fresh temporary directory, removed after `body`.
func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-auth-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    return try body(dir)
}

/// The result of running a real process.
struct ProcessResult {
    var status: Int32
    var stdout: Data
    var stderr: String
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

struct ProcessTimeout: Error {}

/// Runs `executable` with `arguments` (found on PATH through /usr/bin/env), waiting at most `timeout` seconds.
func run(_ arguments: [String], stdin: Data? = nil, timeout: TimeInterval = 30) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    let input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    let done = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in done.signal() }
    try process.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try input.fileHandleForWriting.close()
    // Read both pipes to the end (the process cannot block on a full pipe), then wait, bounded.
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    if done.wait(timeout: .now() + timeout) == .timedOut {
        process.terminate()
        throw ProcessTimeout()
    }
    return ProcessResult(status: process.terminationStatus, stdout: outData, stderr: String(decoding: errData, as: UTF8.self))
}
