import CKKPushSystem
import Foundation

/// Runs a command found on `PATH` and collects its standard output (standard error goes to /dev/null).
///
/// Spawned with posix_spawn, an empty signal mask and SIGALRM at its default: threads of this process
/// (Dispatch, the cooperative pool) block signals, a mask a child started by Foundation's `Process`
/// would inherit (a child that times itself with SIGALRM, such as `openssl speed`, would never stop).
enum SpawnedCommand {
    enum Result {
        /// No pipe could be made (errno).
        case noPipe(Int32)
        /// posix_spawnp failed (its return code).
        case notStarted(Int32)
        /// The command ran: its wait status and its standard output (at most about 1 MiB).
        case finished(status: Int32, output: [UInt8])
    }

    static func run(_ arguments: [String]) -> Result {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { return .noPipe(errno) }
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
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
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
