import CKKPushSystem
package import Foundation
import KKPushCore
import Synchronization

/// Child processes, the one way kkpush starts them: ``run(_:)`` runs a command found on `PATH` and collects its
/// standard output (standard error goes to /dev/null); ``start(_:_:environment:input:output:error:)`` starts a
/// program that runs beside this one (the bench harnesses' `mock serve` and `send-batch`).
///
/// Spawned with posix_spawn, an empty signal mask and SIGALRM at its default: threads of this process
/// (Dispatch, the cooperative pool) block signals, a mask a child started by Foundation's `Process`
/// would inherit (a child that times itself with SIGALRM, such as `openssl speed`, would never stop).
package enum SpawnedCommand {
    package enum Result {
        /// No pipe could be made (errno).
        case noPipe(Int32)
        /// posix_spawnp failed (its return code).
        case notStarted(Int32)
        /// The command ran: its wait status and its standard output (at most about 1 MiB).
        case finished(status: Int32, output: [UInt8])
    }

    package static func run(_ arguments: [String]) -> Result {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { return .noPipe(errno) }
        return spawning(newProcessGroup: false) { attributes, actions in
            posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
            posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
            defer { for pointer in argv { free(pointer) } }
            var pid: pid_t = 0
            let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, environ)
            close(pipeFDs[1])
            guard spawned == 0 else {
                close(pipeFDs[0])
                return .notStarted(spawned)
            }
            var data = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 4096)
            // Bounded: at most about 1 MiB is read.
            while data.count < 1 << 20 {
                let n = buffer.withUnsafeMutableBytes { read(pipeFDs[0], $0.baseAddress, $0.count) }
                if n > 0 {
                    data += buffer.prefix(n)
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            close(pipeFDs[0])
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return .finished(status: status, output: data)
        }
    }

    // MARK: Programs beside this one

    /// Where a started child's standard stream goes.
    package enum Stream: Sendable {
        /// /dev/null.
        case null
        /// A file, created (mode 0644) or emptied; for standard output and error.
        case file(String)
        /// A pipe to this process: ``Child/input`` for standard input, ``Child/output`` for standard output (not for
        /// standard error).
        case pipe
    }

    /// A program that could not be started: the `errno` value.
    package struct StartFailure: Error, CustomStringConvertible {
        package let code: Int32
        package var description: String { ErrorWords.systemText(errno: code) }
    }

    /// A started child process. It is reaped by ``isRunning`` or ``wait()``, whichever sees it end first.
    package final class Child: Sendable {
        package let pid: Int32
        /// This process's end of the child's standard input (`input: .pipe`).
        package let input: FileHandle?
        /// This process's end of the child's standard output (`output: .pipe`).
        package let output: FileHandle?
        /// The wait status, once reaped.
        private let status = Mutex<Int32?>(nil)

        init(pid: Int32, input: FileHandle?, output: FileHandle?) {
            self.pid = pid
            self.input = input
            self.output = output
        }

        /// False once the child has ended.
        package var isRunning: Bool {
            status.withLock { status in
                if status != nil { return false }
                var value: Int32 = 0
                let reaped = waitpid(pid, &value, WNOHANG)
                if reaped == pid { status = value }
                return reaped == 0
            }
        }

        /// Blocks the calling thread until the child has ended (run it on a thread of its own, never on the
        /// cooperative pool).
        package func wait() {
            while true {
                if status.withLock({ $0 != nil }) { return }
                var value: Int32 = 0
                let reaped = waitpid(pid, &value, 0)
                if reaped < 0, errno == EINTR { continue }
                // ECHILD: ``isRunning`` reaped it meanwhile (and kept its status), or it is gone.
                status.withLock { status in
                    if status == nil { status = reaped == pid ? value : 0 }
                }
                return
            }
        }

        /// Sends `signal` (SIGTERM, SIGKILL) to the child, unless it has been reaped (its pid may be reused).
        package func send(_ signal: Int32) {
            status.withLock { status in
                if status == nil { _ = kill(pid, signal) }
            }
        }

        /// As Foundation's `Process` says it: the exit status, or the signal that ended the child; 0 before it ended.
        package var terminationStatus: Int32 {
            guard let status = status.withLock({ $0 }) else { return 0 }
            return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
        }
    }

    /// Starts `executable` with `arguments` and exactly `environment`, in a process group of its own (a Ctrl-C at the
    /// terminal reaches this process, which ends its children), with no descriptor of this process but the three
    /// streams given.
    package static func start(
        _ executable: String, _ arguments: [String], environment: [String: String], input: Stream = .null,
        output: Stream = .null, error: Stream = .null
    ) throws(StartFailure) -> Child {
        try spawning(newProcessGroup: true) { (attributes, actions) throws(StartFailure) -> Child in

            // Our ends of the pipes, and the child's (closed here once it started).
            var ours: [Int32: Int32] = [:]
            var theirs: [Int32] = []
            func closeAll() {
                for fd in Array(ours.values) + theirs { close(fd) }
            }
            for (fd, stream) in [(Int32(0), input), (1, output), (2, error)] {
                switch stream {
                case .null:
                    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
                case .file(let path):
                    posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                case .pipe:
                    precondition(fd != 2, "standard error goes to /dev/null or a file")
                    var pair: [Int32] = [0, 0]
                    guard pipe(&pair) == 0 else {
                        let code = errno
                        closeAll()
                        throw StartFailure(code: code)
                    }
                    for end in pair { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
                    let (child, parent) = fd == 0 ? (pair[0], pair[1]) : (pair[1], pair[0])
                    posix_spawn_file_actions_adddup2(&actions, child, fd)
                    ours[fd] = parent
                    theirs.append(child)
                }
            }
            // What Foundation's `Process` does on Linux (POSIX_SPAWN_CLOEXEC_DEFAULT elsewhere): every other descriptor
            // open here is closed in the child (one that is closed by then is no error).
            let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int32($0) }
            for fd in open ?? [] where fd > 2 { posix_spawn_file_actions_addclose(&actions, fd) }

            var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
            var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { for pointer in argv + envp { free(pointer) } }
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, executable, &actions, &attributes, &argv, &envp)
            for fd in theirs { close(fd) }
            guard spawned == 0 else {
                for fd in ours.values { close(fd) }
                throw StartFailure(code: spawned)
            }
            return Child(
                pid: pid, input: ours[0].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) },
                output: ours[1].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) })
        }
    }

    /// Runs `body` with spawn attributes and file actions made for it (destroyed after): an empty signal mask and
    /// SIGALRM at its default for the child, and with `newProcessGroup` a process group of its own.
    private static func spawning<T, E: Error>(
        newProcessGroup: Bool,
        _ body: (inout posix_spawnattr_t, inout posix_spawn_file_actions_t) throws(E) -> T
    ) throws(E) -> T {
        var attributes = kk_spawnattr_zeroed()
        var actions = kk_spawn_file_actions_zeroed()
        posix_spawnattr_init(&attributes)
        posix_spawn_file_actions_init(&actions)
        defer {
            posix_spawnattr_destroy(&attributes)
            posix_spawn_file_actions_destroy(&actions)
        }
        var empty = kk_sigset_zeroed()
        sigemptyset(&empty)
        var defaults = kk_sigset_zeroed()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGALRM)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if newProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        return try body(&attributes, &actions)
    }
}
