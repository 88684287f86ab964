import CKKPushSystem
public import Foundation

/// A child process started with `posix_spawn`: how every process of the test support starts, never with
/// Foundation's `Process`.
///
/// `Process.run()` on this toolchain lists `/proc/self/fd` and copies each entry's whole 256-byte name, reading past
/// the end of glibc's buffer when a short entry ends it at the end of a mapped page (swift-corelibs-foundation pull
/// request 5472, merged 2026-05). With the thousands of descriptors the suite holds in parallel, it crashed the test
/// process now and then. Here every descriptor above 2 is closed in the child
/// (`posix_spawn_file_actions_addclosefrom_np`), as `Process` does; the pipes are made with `O_CLOEXEC`; the child
/// starts with default signal dispositions (the suite ignores SIGPIPE) and an empty signal mask.
///
/// Its end is polled (`waitpid` with `WNOHANG`, under a lock, the status kept once read), so a signal is never sent
/// to a pid the system has given to another process. Dropped while still running, it is killed (SIGKILL) and
/// reaped, unless ``detach()`` was called.
public final class ChildProcess: @unchecked Sendable {
    /// Where its standard input comes from.
    public enum Input: Sendable {
        /// `/dev/null`.
        case null
        /// A pipe whose write end is ``input``.
        case pipe
    }

    /// Where its standard output and error go.
    public enum Output: Sendable {
        /// Two pipes, whose read ends are ``output`` and ``error``.
        case pipes
        /// Both to this file (created or truncated): for a child that leaves a server running which inherits them
        /// (`pg_ctl start`), so no reader waits for that server to end.
        case file(String)
        /// `/dev/null`.
        case null
    }

    /// How it ended: its exit status, or the signal that ended it, and whether it exited (as `Process` reported).
    public struct End: Sendable, Equatable {
        public var status: Int32
        public var exited: Bool
    }

    public let pid: Int32
    /// The write end of its standard input (``Input/pipe``); the caller closes it.
    public let input: Int32?
    /// The read ends of its standard output and error (``Output/pipes``); the caller closes them.
    public let output: Int32?
    public let error: Int32?

    private let lock = NSLock()
    private var end: End?
    private var detached = false

    /// Starts `executable` (a path) with `arguments`, in `environment` (nil: this process's) and
    /// `currentDirectory` (nil: this process's).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        currentDirectory: String? = nil, input: Input = .pipe, output: Output = .pipes
    ) throws {
        var made: [Int32] = []
        func pipe() throws -> (read: Int32, write: Int32) {
            var ends: [Int32] = [-1, -1]
            guard glibcPipe2(&ends, O_CLOEXEC) == 0 else {
                let reason = errno
                for fd in made { close(fd) }
                throw SpawnError(description: "pipe2 failed: \(String(cString: strerror(reason)))")
            }
            made += ends
            return (ends[0], ends[1])
        }
        let inputPipe = input == .pipe ? try pipe() : nil
        let outputPipes: (out: (read: Int32, write: Int32), err: (read: Int32, write: Int32))?
        if case .pipes = output { outputPipes = (try pipe(), try pipe()) } else { outputPipes = nil }

        var actions = kk_spawn_file_actions_zeroed()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let inputPipe {
            posix_spawn_file_actions_adddup2(&actions, inputPipe.read, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        switch output {
        case .pipes:
            posix_spawn_file_actions_adddup2(&actions, outputPipes!.out.write, 1)
            posix_spawn_file_actions_adddup2(&actions, outputPipes!.err.write, 2)
        case .file(let path):
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        case .null:
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        _ = glibcAddCloseFrom(&actions, 3)
        if let currentDirectory { _ = glibcAddChdir(&actions, currentDirectory) }
        var attributes = kk_spawnattr_zeroed()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = kk_sigset_zeroed()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        var empty = kk_sigset_zeroed()
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc: Int32
        if let environment {
            var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { for pointer in envp { free(pointer) } }
            rc = posix_spawn(&pid, executable, &actions, &attributes, &argv, &envp)
        } else {
            rc = posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
        }
        // The parent keeps the write end of the child's input and the read ends of its output and error.
        if let inputPipe { close(inputPipe.read) }
        if let outputPipes {
            close(outputPipes.out.write)
            close(outputPipes.err.write)
        }
        guard rc == 0 else {
            if let inputPipe { close(inputPipe.write) }
            if let outputPipes {
                close(outputPipes.out.read)
                close(outputPipes.err.read)
            }
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
        self.input = inputPipe?.write
        self.output = outputPipes?.out.read
        self.error = outputPipes?.err.read
    }

    /// How it ended, if it has (without waiting).
    public func poll() -> End? {
        lock.withLock {
            if let end { return end }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &status, WNOHANG) } while result < 0 && errno == EINTR
            if result == pid {
                // WIFEXITED / WEXITSTATUS / WTERMSIG (macros Swift cannot call).
                end =
                    (status & 0x7f) == 0
                    ? End(status: (status >> 8) & 0xff, exited: true)
                    : End(
                        status: status & 0x7f, exited: false)
            } else if result < 0 {
                end = End(status: -1, exited: false)  // not our child any more: nothing to wait for
            }
            return end
        }
    }

    /// Whether it is still running.
    public var isRunning: Bool { poll() == nil }

    /// Sends it `signal`, unless it has ended and been reaped.
    public func signal(_ signal: Int32) {
        lock.withLock {
            if end == nil { kill(pid, signal) }
        }
    }

    /// Waits for its end, blocking this thread (polling every 2 ms; never on Swift's cooperative threads).
    public func waitBlocking() -> End {
        while true {
            if let end = poll() { return end }
            usleep(2_000)
        }
    }

    /// Waits at most `timeout` seconds for its end, blocking this thread; then kills it (SIGKILL).
    public func wait(timeout: TimeInterval) -> (end: End, timedOut: Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let end = poll() { return (end, false) }
            usleep(10_000)
        }
        signal(SIGKILL)
        return (waitBlocking(), true)
    }

    /// Waits at most `timeout` seconds for its end, without blocking a thread; nil if it still runs then.
    public func end(within timeout: TimeInterval) async -> End? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let end = poll() { return end }
            if Date() >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Lets it outlive this object (a watchdog that must run until the test process is gone).
    public func detach() {
        lock.withLock { detached = true }
    }

    deinit {
        if !detached, poll() == nil {
            kill(pid, SIGKILL)
            _ = waitBlocking()
        }
    }
}

// glibc's GNU extensions (glibc 2.34+; Debian 12 has 2.36), which the Glibc module does not show (they need
// _GNU_SOURCE). Plain C functions of pointers and ints, called as the fuzz binary calls libFuzzer's driver.
@_silgen_name("pipe2")
private func glibcPipe2(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func glibcAddCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
@_silgen_name("posix_spawn_file_actions_addchdir_np")
private func glibcAddChdir(
    _ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: UnsafePointer<CChar>
) -> Int32

/// A child that could not be started.
public struct SpawnError: Error, CustomStringConvertible {
    public let description: String
}
