public import Foundation

/// A process that runs beside a test (a server): started, its first output line awaited (bounded), and
/// stopped with SIGTERM, then SIGKILL, at the end. Its output is drained on threads of its own, so a chatty
/// server never blocks on a full pipe.
public final class BackgroundProcess: @unchecked Sendable {
    private let child: ChildProcess
    private let lock = NSLock()
    private var stdout = Data()
    private var stderr = Data()
    /// Left by each drain when its pipe ends.
    private let drained = DispatchGroup()

    /// Starts `executable` with `arguments`. Standard input: nothing, or with `holdStandardInput` a pipe kept open
    /// until the process is stopped (a helper that exits when its standard input closes stays up until then).
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
        currentDirectory: URL? = nil, holdStandardInput: Bool = false
    ) throws {
        child = try ChildProcess(
            executable.path, arguments, environment: environment, currentDirectory: currentDirectory?.path,
            input: holdStandardInput ? .pipe : .null, output: .pipes)
        for (fd, isOut) in [(child.output, true), (child.error, false)] {
            guard let fd else { continue }
            drained.enter()
            Thread.detachNewThread { [self] in
                defer { drained.leave() }
                while true {
                    let chunk = PipeIO.readSome(fd)
                    if chunk.isEmpty { break }
                    lock.withLock { if isOut { stdout += chunk } else { stderr += chunk } }
                }
                close(fd)
            }
        }
    }

    /// What it wrote to standard output and standard error so far.
    public var output: (stdout: String, stderr: String) {
        lock.withLock { (String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self)) }
    }

    /// Whether it is still running.
    public var isRunning: Bool { child.isRunning }

    /// Its exit status, or the signal that ended it (once it ended; -1 before).
    public var status: Int32 { child.poll()?.status ?? -1 }

    /// Whether it ended by exiting (not by a signal).
    public var exitedNormally: Bool { child.poll()?.exited ?? false }

    /// Waits (up to `timeout` seconds) for its first whole line on standard output; nil if it ended or the
    /// time ran out first.
    public func firstLine(timeout: TimeInterval = 20) async -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let text = output.stdout
            if let end = text.firstIndex(of: "\n") { return String(text[..<end]) }
            if !child.isRunning {
                // It may have written its line just before it ended.
                _ = drained.wait(timeout: .now() + 1)
                let last = output.stdout
                return last.firstIndex(of: "\n").map { String(last[..<$0]) }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Waits (up to `timeout` seconds) for it to end, and then (up to 2 s more) for the rest of its output;
    /// true if it ended.
    public func waitForExit(timeout: TimeInterval) async -> Bool {
        guard await child.end(within: timeout) != nil else { return false }
        let outputDeadline = Date().addingTimeInterval(2)
        while drained.wait(timeout: .now()) == .timedOut, Date() < outputDeadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Sends it `signal` (SIGTERM, SIGINT…), if it is still running.
    public func send(_ signal: Int32) {
        child.signal(signal)
    }

    /// Sends it `signal` and waits (up to `timeout` seconds) for its exit status; nil (and SIGKILL) if it is still
    /// running then.
    public func exitStatus(after signal: Int32, timeout: TimeInterval = 20) async -> Int32? {
        send(signal)
        if await waitForExit(timeout: timeout) { return status }
        child.signal(SIGKILL)
        _ = await waitForExit(timeout: 5)
        return nil
    }

    /// Stops it: SIGTERM, and SIGKILL if it is still running 5 seconds later.
    public func stop() async {
        defer { closeInput() }
        guard child.isRunning else { return }
        child.signal(SIGTERM)
        if !(await waitForExit(timeout: 5)) {
            child.signal(SIGKILL)
            _ = await waitForExit(timeout: 5)
        }
    }

    private var inputClosed = false

    private func closeInput() {
        lock.withLock {
            if let input = child.input, !inputClosed {
                close(input)
                inputClosed = true
            }
        }
    }

    deinit {
        closeInput()
        // The child (ChildProcess) is killed and reaped when it is dropped, if it still runs.
    }
}
