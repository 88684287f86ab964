public import Foundation

/// Bytes read on another thread (a pipe drained by a thread of its own), behind a lock.
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
    /// Whether it ended by exiting (not by a signal).
    public var exitedNormally: Bool
}

/// Runs `executable` with `arguments`, writes `stdin` (if any) and closes it, and drains stdout and
/// stderr on threads of its own (so a chatty child never blocks on a full pipe). After `timeout`
/// seconds the process is terminated and the output is marked `timedOut`.
///
/// The one way the tests run a process. It waits while a time-sensitive test runs (``LoadGate``), then for one of
/// ``ProcessSlots``. All the waiting happens on threads of its own (``offThread(_:)``), never
/// on one of Swift's cooperative threads nor on Dispatch's global queue (on Linux the same few threads): the
/// suite runs in parallel on a 2-core machine, and the server a test talks to (the mock's admin API, the
/// simulated backend) needs a pool thread to answer.
public func runProcess(
    _ executable: URL, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil,
    currentDirectory: URL? = nil, timeout: TimeInterval
) async throws -> ProcessOutput {
    try await LoadGate.shared.withProcess {
        try await ProcessSlots.shared.withSlot {
            try await offThread {
                try runProcessBlocking(
                    executable, arguments, stdin: stdin, environment: environment, currentDirectory: currentDirectory,
                    timeout: timeout)
            }
        }
    }
}

/// How many of ``runProcess(_:_:stdin:environment:currentDirectory:timeout:)``'s processes run at once: twice the
/// cores (at least 4), or `KKPUSH_TEST_PROCESSES`. With the suite in parallel, hundreds of tests may each start a
/// process; unbounded, a 2-core machine runs them all at once and every time limit is missed. A test waits for a
/// slot before its process starts, so its time limit counts from its own start.
public actor ProcessSlots {
    public static let shared = ProcessSlots(
        limit: ProcessInfo.processInfo.environment["KKPUSH_TEST_PROCESSES"].flatMap(Int.init)
            ?? max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))

    private let limit: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) { self.limit = max(1, limit) }

    /// Runs `body` once a slot is free.
    public func withSlot<T: Sendable>(_ body: @Sendable () async throws -> T) async rethrows -> T {
        if running < limit {
            running += 1
        } else {
            await withCheckedContinuation { waiting.append($0) }
        }
        defer {
            if waiting.isEmpty { running -= 1 } else { waiting.removeFirst().resume() }
        }
        return try await body()
    }
}

/// ``runProcess(_:_:stdin:environment:currentDirectory:timeout:)``'s work, blocking the calling thread: for code of
/// this module that already runs on a thread of its own.
///
/// The child is a ``ChildProcess`` (`posix_spawn`, not Foundation's `Process`, which crashed the test process now
/// and then: see there).
func runProcessBlocking(
    _ executable: URL, _ arguments: [String], stdin: Data?, environment: [String: String]?,
    currentDirectory: URL?, timeout: TimeInterval
) throws -> ProcessOutput {
    let child = try ChildProcess(
        executable.path, arguments, environment: environment, currentDirectory: currentDirectory?.path)
    guard let input = child.input, let output = child.output, let error = child.error else {
        throw SpawnError(description: "no pipes to \(executable.path)")
    }
    let outData = LockedData()
    let errData = LockedData()
    let group = DispatchGroup()
    for (fd, sink) in [(output, outData), (error, errData)] {
        group.enter()
        Thread.detachNewThread {
            sink.set(PipeIO.readToEnd(fd))
            close(fd)
            group.leave()
        }
    }
    // Written after the drains started: a child that writes before it reads never waits on a full pipe.
    if let stdin { PipeIO.write(stdin, to: input) }
    close(input)
    var timedOut = false
    if group.wait(timeout: .now() + timeout) == .timedOut {
        timedOut = true
        child.signal(SIGTERM)
        if group.wait(timeout: .now() + 5) == .timedOut { child.signal(SIGKILL) }
    }
    let end = child.waitBlocking()
    _ = group.wait(timeout: .now() + 5)
    return ProcessOutput(
        status: end.status, stdout: outData.get(), stderr: errData.get(), timedOut: timedOut,
        exitedNormally: end.exited)
}

/// Runs blocking `work` on a thread of its own and awaits it.
///
/// Not on `DispatchQueue.global()`: on Linux, Swift's tasks run on the same few Dispatch threads (about one per
/// core), so a dozen tests waiting there (for a server's start, a process's exit) hold up every task of the
/// process, the servers under test included.
public func offThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { c in
        let thread = Thread { c.resume(with: Result { try work() }) }
        thread.name = "kkpush.test.offThread"
        thread.start()
    }
}

/// Runs blocking `work` on a thread of its own and awaits it (work that cannot fail).
public func offThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { c in
        let thread = Thread { c.resume(returning: work()) }
        thread.name = "kkpush.test.offThread"
        thread.start()
    }
}

/// Reads and writes on pipes that a signal may interrupt.
///
/// Foundation's `FileHandle.availableData`, `readDataToEndOfFile()` and `write(_:)` stop the whole test process
/// (`fatalError`) when `read` or `write` fails with EINTR, which a signal arriving at the wrong moment causes (seen
/// with the suite in parallel: dozens of children exiting at once). These retry EINTR, as the POSIX calls ask.
public enum PipeIO {
    /// One read of at most 64 KiB: empty at end of file (or on an error other than EINTR).
    public static func readSome(_ fd: Int32) -> Data {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { return Data(buffer[..<n]) }
            if n < 0 && errno == EINTR { continue }
            return Data()
        }
    }

    /// Everything until end of file.
    public static func readToEnd(_ fd: Int32) -> Data {
        var data = Data()
        while true {
            let chunk = readSome(fd)
            if chunk.isEmpty { return data }
            data += chunk
        }
    }

    /// Writes all of `data` (stops early if the reader is gone: EPIPE, with SIGPIPE ignored in this process).
    public static func write(_ data: Data, to fd: Int32) {
        ignoreSIGPIPE
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }

    /// A child that exits before reading its standard input must not stop the test process with SIGPIPE.
    private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN) }()
}
