import Foundation
import KKPushClient
import KKPushCore
import Synchronization

/// Reads a file (or stdin) line by line with a fixed buffer, never the whole file.
final class LineReader: @unchecked Sendable {
    private let file: UnsafeMutablePointer<FILE>
    private var buffer: UnsafeMutablePointer<CChar>? = nil
    private var capacity = 0
    /// The file's name in messages: the path, or "standard input".
    let name: String

    init(path: String, what: String = "token file") throws {
        if path == "-" {
            guard let f = fdopen(dup(0), "r") else {
                throw KKPushError(
                    code: "batch-stdin-unreadable", message: "Cannot read standard input: \(String(cString: strerror(errno))).")
            }
            file = f
            name = "standard input"
        } else {
            guard let f = fopen(path, "r") else {
                throw KKPushError(
                    code: "batch-input-unreadable",
                    message: "Cannot open the \(what) '\(path)': \(String(cString: strerror(errno))).",
                    fix: "Give a readable file with one token (or JSON object) per line, or - for stdin.")
            }
            file = f
            name = "'\(path)'"
        }
    }

    deinit {
        free(buffer)
        fclose(file)
    }

    /// The next line without its line break, or nil at the end of the file. A read error (an I/O
    /// error, a directory) throws: it is never taken for the end of the file.
    func next() throws(KKPushError) -> String? {
        while true {
            errno = 0
            let n = getline(&buffer, &capacity, file)
            if n >= 0, let buffer {
                var length = n
                while length > 0, buffer[length - 1] == 0x0A || buffer[length - 1] == 0x0D { length -= 1 }
                return buffer.withMemoryRebound(to: UInt8.self, capacity: length) {
                    String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
                }
            }
            let code = errno
            if ferror(file) == 0 { return nil }
            clearerr(file)
            if code == EINTR || code == EAGAIN { continue }
            throw KKPushError(
                code: "batch-input-read-error",
                message: "Cannot read \(name): \(String(cString: strerror(code == 0 ? EIO : code))).",
                fix: "Give a readable regular file (or - for stdin); the lines before the error were handled.")
        }
    }

    /// The underlying file descriptor.
    var descriptor: Int32 { fileno(file) }
}

/// The token file as an async sequence of batch items (JSON lines parsed, tokens normalised).
/// Lines that cannot be read become items whose token is left as given, so that pre-flight reports
/// them as an outcome of their own (BadDeviceToken); invalid JSON lines too.
///
/// Each item is admitted into the ``BatchLedger`` (with its line number) before it is handed to the
/// client; once the ledger is stopping (a signal, a write error), no line is taken any more. With a
/// ``BatchResume``, lines whose earlier result was final are skipped, and a line whose token is not
/// the one the earlier run had ends the sequence with an error.
struct BatchLines: AsyncSequence, Sendable {
    typealias Element = PushBatchItem
    let reader: LineReader
    let template: NotificationRequest
    let endpoints: [APNsEnvironment: APNsEndpoint]
    let defaultEnvironment: APNsEnvironment
    let environmentFromLine: Bool
    let ledger: BatchLedger
    let resume: BatchResume?

    struct AsyncIterator: AsyncIteratorProtocol {
        let lines: BatchLines
        /// The 1-based number of the last line read from the file (blank and comment lines count).
        var lineNumber = 0
        /// The position of the next item in the batch (the client's `PushResult.index`).
        var position = 0

        mutating func next() async throws -> PushBatchItem? {
            while !lines.ledger.isStopping {
                guard let line = try lines.reader.next() else { return nil }
                lineNumber += 1
                let trimmed = line.trimmingWhitespace()
                if trimmed.isEmpty || trimmed.hasPrefix("#") {
                    lines.ledger.countBlank(line: lineNumber)
                    continue
                }
                let item = lines.item(trimmed)
                if let resume = lines.resume {
                    let verdict = try resume.verdict(
                        line: lineNumber, token: item.request.deviceToken,
                        environment: item.endpoint.environment?.rawValue, input: lines.reader.name)
                    if let reason = verdict {
                        lines.ledger.countResumeSkip(reason, line: lineNumber)
                        continue
                    }
                }
                guard lines.ledger.admit(position: position, line: lineNumber, item: item) else { return nil }
                position += 1
                return item
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(lines: self) }

    func item(_ line: String) -> PushBatchItem {
        var request = template
        var environment = defaultEnvironment
        if line.hasPrefix("{") {
            if let object = try? JSONValue.parse(line), let members = object.objectValue {
                request.deviceToken = normalized(members["token"]?.stringValue ?? "")
                if let payload = members["payload"] {
                    request.payload = payload.encoded()
                }
                if environmentFromLine, let text = members["environment"]?.stringValue,
                    let e = APNsEnvironment(lenient: text)
                {
                    environment = e
                }
            } else {
                // Not JSON: sent as is, so pre-flight reports the token as malformed.
                request.deviceToken = line
            }
        } else {
            request.deviceToken = normalized(line)
        }
        return PushBatchItem(request: request, endpoint: endpoints[environment] ?? endpoints[.sandbox]!)
    }

    private func normalized(_ token: String) -> String {
        DeviceToken.normalize(token).token ?? token
    }
}
