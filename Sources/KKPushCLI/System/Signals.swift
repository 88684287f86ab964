import Foundation

/// Signal dispositions and sending signals; catching them is ``SignalWatch`` (``TerminationSignals`` waits on one).
enum Signals {
    /// From here on `number` is ignored (SIGPIPE: a closed pipe is a write error, EPIPE, not death).
    static func ignore(_ number: Int32) { _ = signal(number, SIG_IGN) }

    /// Sends `number` to the process `pid` (SIGKILL for a child that would not stop).
    static func send(_ number: Int32, to pid: Int32) { _ = kill(pid, number) }
}

/// Ending the process at once.
enum ProcessExit {
    /// `_exit(status)`: no atexit handlers, no flushing, even with a thread blocked in a write.
    static func immediately(_ status: Int32) -> Never { _exit(status) }
}
