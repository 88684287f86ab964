import Foundation

/// A process that runs beside a test (a server): started, its first output line awaited (bounded), and
/// stopped with SIGTERM, then SIGKILL, at the end. Its output is drained on threads of its own, so a chatty
/// server never blocks on a full pipe.
public final class BackgroundProcess: @unchecked Sendable {
    private let process = Process()
    private let lock = NSLock()
    private var stdout = Data()
    private var stderr = Data()
    /// Left by each drain when its pipe ends.
    private let drained = DispatchGroup()

    /// Holds the write end of standard input open (for a helper that exits when its standard input closes).
    private var input: Pipe?

    /// Starts `executable` with `arguments`. Standard input: nothing, or with `holdStandardInput` a pipe kept open
    /// until the process is stopped (a helper that exits when its standard input closes stays up until then).
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
        currentDirectory: URL? = nil, holdStandardInput: Bool = false
    ) throws {
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        if holdStandardInput {
            let pipe = Pipe()
            input = pipe
            process.standardInput = pipe
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        try process.run()
        for (pipe, isOut) in [(out, true), (err, false)] {
            drained.enter()
            Thread.detachNewThread { [self] in
                defer { drained.leave() }
                while true {
                    let chunk = PipeIO.readSome(pipe.fileHandleForReading.fileDescriptor)
                    if chunk.isEmpty { break }
                    lock.withLock { if isOut { stdout += chunk } else { stderr += chunk } }
                }
            }
        }
    }

    /// What it wrote to standard output and standard error so far.
    public var output: (stdout: String, stderr: String) {
        lock.withLock { (String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self)) }
    }

    /// Whether it is still running.
    public var isRunning: Bool { process.isRunning }

    /// Its exit status (once it ended).
    public var status: Int32 { process.terminationStatus }

    /// Whether it ended by exiting (not by a signal).
    public var exitedNormally: Bool { !process.isRunning && process.terminationReason == .exit }

    /// Waits (up to `timeout` seconds) for its first whole line on standard output; nil if it ended or the
    /// time ran out first.
    public func firstLine(timeout: TimeInterval = 20) async -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let text = output.stdout
            if let end = text.firstIndex(of: "\n") { return String(text[..<end]) }
            if !process.isRunning { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Waits (up to `timeout` seconds) for it to end, and then (up to 2 s more) for the rest of its output;
    /// true if it ended.
    public func waitForExit(timeout: TimeInterval) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        guard !process.isRunning else { return false }
        let outputDeadline = Date().addingTimeInterval(2)
        while drained.wait(timeout: .now()) == .timedOut, Date() < outputDeadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Sends it `signal` (SIGTERM, SIGINT…), if it is still running.
    public func send(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Sends it `signal` and waits (up to `timeout` seconds) for its exit status; nil (and SIGKILL) if it is still
    /// running then.
    public func exitStatus(after signal: Int32, timeout: TimeInterval = 20) async -> Int32? {
        send(signal)
        if await waitForExit(timeout: timeout) { return status }
        kill(process.processIdentifier, SIGKILL)
        _ = await waitForExit(timeout: 5)
        return nil
    }

    /// Stops it: SIGTERM, and SIGKILL if it is still running 5 seconds later.
    public func stop() async {
        guard process.isRunning else { return }
        process.terminate()
        if !(await waitForExit(timeout: 5)) {
            kill(process.processIdentifier, SIGKILL)
            _ = await waitForExit(timeout: 5)
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
