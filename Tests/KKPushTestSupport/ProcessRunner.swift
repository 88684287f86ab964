import Foundation

/// Bytes read on another thread (a pipe drained by a Dispatch thread), behind a lock.
public final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    public init() {}
    public func set(_ d: Data) { lock.withLock { data = d } }
    public func get() -> Data { lock.withLock { data } }
}

/// What a finished process left: its status, both outputs, and whether it was stopped at the time limit.
public struct ProcessOutput: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: Data
    public var timedOut: Bool
}

/// Runs `executable` with `arguments`, writes `stdin` (if any) and closes it, and drains stdout and
/// stderr on Dispatch threads (so a chatty child never blocks on a full pipe). After `timeout`
/// seconds the process is terminated and the output is marked `timedOut`. Blocks the calling
/// thread: call it from a Dispatch thread, not one of Swift's cooperative threads, when tests run
/// in parallel.
public func runProcess(
    _ executable: URL, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil,
    currentDirectory: URL? = nil, timeout: TimeInterval
) throws -> ProcessOutput {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let currentDirectory { process.currentDirectoryURL = currentDirectory }
    let out = Pipe()
    let err = Pipe()
    let input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try? input.fileHandleForWriting.close()
    let outData = LockedData()
    let errData = LockedData()
    let group = DispatchGroup()
    for (pipe, sink) in [(out, outData), (err, errData)] {
        group.enter()
        DispatchQueue.global().async {
            sink.set(pipe.fileHandleForReading.readDataToEndOfFile())
            group.leave()
        }
    }
    var timedOut = false
    if group.wait(timeout: .now() + timeout) == .timedOut {
        timedOut = true
        process.terminate()
        _ = group.wait(timeout: .now() + 5)
    }
    process.waitUntilExit()
    return ProcessOutput(
        status: process.terminationStatus, stdout: outData.get(), stderr: errData.get(), timedOut: timedOut)
}
