import CKKPushSystem
import Foundation
import KKPushCore
import KKPushSystem

/// Result lines on a file descriptor (stdout, or `--output` opened for appending), in the order the
/// outcomes come. Buffered for at most 64 KiB or about 100 ms (a timer flushes every 100 ms), so a
/// crash loses at most the last 100 ms of lines; a signal or the end flushes all.
package struct ResultWriter {
    package let descriptor: Int32
    /// "standard output" or the file's path, for messages.
    package let name: String
    private(set) var buffer: [UInt8] = []
    private var lastFlush = ContinuousClock.now
    /// The first write error (the system's words for errno), after which nothing more is written.
    private(set) var failure: String?
    private(set) var failureCode: Int32 = 0

    package init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.name = name
        buffer.reserveCapacity(64 * 1024)
    }

    /// Appends bytes; flushes when 64 KiB wait or the last flush is 100 ms ago. False when a write
    /// failed just now.
    package mutating func append(_ bytes: [UInt8]) -> Bool {
        guard failure == nil else { return true }
        buffer.append(contentsOf: bytes)
        if buffer.count >= 64 * 1024 || ContinuousClock.now - lastFlush >= .milliseconds(100) {
            return flush()
        }
        return true
    }

    /// Writes everything buffered. False when a write failed just now (EPIPE, ENOSPC, ...).
    package mutating func flush() -> Bool {
        lastFlush = ContinuousClock.now
        guard failure == nil else {
            buffer.removeAll(keepingCapacity: false)
            return true
        }
        guard !buffer.isEmpty else { return true }
        var failedCode: Int32 = 0
        buffer.withUnsafeBytes { raw in
            var offset = 0
            var stalls = 0
            while offset < raw.count {
                let n = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if n > 0 {
                    offset += n
                    continue
                }
                let code = n < 0 ? errno : EIO
                if code == EINTR { continue }
                if code == EAGAIN, stalls < 6000 {
                    // A non-blocking descriptor that is full: wait for room (bounded: 10 minutes).
                    stalls += 1
                    _ = kk_wait_writable(descriptor, 100)
                    continue
                }
                failedCode = code
                return
            }
        }
        buffer.removeAll(keepingCapacity: true)
        if failedCode != 0 {
            failureCode = failedCode
            failure = ErrorWords.systemText(errno: failedCode)
            return false
        }
        return true
    }
}
