import Foundation
import Synchronization

/// Finds what holds one of NIO's shared event loops (where every in-process mock's APNs connections run): with
/// `KKPUSH_STALL_DUMP` set to a folder, a thread hands each loop a task every 200 ms, and when one has waited more
/// than 5 s it writes every thread's backtrace (`gdb -p`, this process) to `<folder>/loop-stall-<pid>-<n>.txt`,
/// once per stall, and says so on standard error. Off (nothing started) without the variable: gdb pauses the whole
/// process while it reads it.
public enum EventLoopStallWatch {
    /// Starts the watch once per process, when `KKPUSH_STALL_DUMP` names a folder; true if it runs.
    public static let started: Bool = {
        guard let folder = ProcessInfo.processInfo.environment["KKPUSH_STALL_DUMP"], !folder.isEmpty else {
            return false
        }
        let dumps = Atomic(0)
        // Never stopped: it watches for the whole run.
        _ = EventLoopLag(interval: .milliseconds(200), stallAfter: .seconds(5)) { index, waited in
            let dump = dumps.add(1, ordering: .relaxed).newValue
            guard dump <= 5 else { return }
            let file = "\(folder)/loop-stall-\(getpid())-\(dump).txt"
            FileHandle.standardError.write(
                Data(
                    "kkpush tests: NIO shared loop \(index) has not run a task for \(waited); backtraces in \(file)\n"
                        .utf8))
            if let gdb = try? ChildProcess(
                "/usr/bin/gdb", ["-p", String(getpid()), "-batch", "-ex", "thread apply all bt 40"], input: .null,
                output: .file(file))
            {
                _ = gdb.wait(timeout: 120)
            }
        }
        return true
    }()
}
