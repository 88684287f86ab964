import Foundation
import NIOCore
import NIOPosix
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
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        let pending = Mutex<[ContinuousClock.Instant?]>(Array(repeating: nil, count: loops.count))
        let thread = Thread {
            var dumped = Array(repeating: false, count: loops.count)
            var dumps = 0
            while true {
                let now = ContinuousClock.now
                for (index, loop) in loops.enumerated() {
                    let waiting: Duration? = pending.withLock { slots in
                        if let start = slots[index] { return now - start }
                        slots[index] = now
                        return nil
                    }
                    guard let waiting else {
                        dumped[index] = false
                        loop.execute { pending.withLock { $0[index] = nil } }
                        continue
                    }
                    if waiting > .seconds(5), !dumped[index], dumps < 5 {
                        dumped[index] = true
                        dumps += 1
                        let file = "\(folder)/loop-stall-\(getpid())-\(dumps).txt"
                        FileHandle.standardError.write(
                            Data(
                                "kkpush tests: NIO shared loop \(index) has not run a task for \(waiting); backtraces in \(file)\n"
                                    .utf8))
                        if let gdb = try? ChildProcess(
                            "/usr/bin/gdb", ["-p", String(getpid()), "-batch", "-ex", "thread apply all bt 40"],
                            input: .null, output: .file(file))
                        {
                            _ = gdb.wait(timeout: 120)
                        }
                    }
                }
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        thread.name = "kkpush.test.stall-watch"
        thread.start()
        return true
    }()
}
