import CKKPushSystem
import Foundation
import KKPushMock
import Synchronization
import Testing

/// The admin API runs on threads of its own: a process that embeds the mock (a test suite) may hold every thread of
/// Swift's cooperative pool with synchronous work, and the admin port must still answer. (A parallel run of this
/// suite once saw a `/metrics` scrape accepted and not answered within 20 s.)
@Suite("The mock's admin API does not wait for the cooperative pool")
struct MockAdminOwnThreadsTests {
    @Test("GET /health is answered while every cooperative thread is held by synchronous work")
    func answersWhilePoolIsHeld() async throws {
        try await withMockServer(configuration: Fixtures.configuration()) { server in
            let port = try #require(server.adminURL.flatMap(URLComponents.init(string:))?.port)
            let cores = ProcessInfo.processInfo.activeProcessorCount
            let shared = Shared()
            // A plain thread (not a task) asks once holders run on every pool thread. In a parallel run the other tests'
            // tasks are ahead of them, so that may take a while: at most 60 s.
            let asker = Thread {
                let wait = ContinuousClock.now + .seconds(60)
                while shared.holding.load(ordering: .acquiring) < cores, ContinuousClock.now < wait { usleep(1000) }
                let held = shared.holding.load(ordering: .acquiring) >= cores
                let text = blockingGET(port: port, path: "/health", timeoutSeconds: 15)
                shared.answer.withLock { $0 = (text, held) }
                shared.answered.store(true, ordering: .releasing)
            }
            asker.start()
            // One holder per pool thread, and one more: each spins (never suspends) until the answer came, at most
            // 70 s from its start. A holder that stopped at its limit returns false.
            let stoppedByAnswer = await withTaskGroup(of: Bool.self) { group in
                for _ in 0...cores {
                    group.addTask {
                        shared.holding.add(1, ordering: .releasing)
                        let limit = ContinuousClock.now + .seconds(70)
                        while !shared.answered.load(ordering: .acquiring), ContinuousClock.now < limit {}
                        return shared.answered.load(ordering: .acquiring)
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            while !shared.answered.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(10)) }
            let (text, heldAtSend) = try #require(shared.answer.withLock { $0 })
            #expect(text.hasPrefix("HTTP/1.1 200"), "answer: \(text.prefix(200))")
            #expect(text.contains(#""status":"ok""#) || text.contains(#""status": "ok""#), "\(text.suffix(200))")
            #expect(heldAtSend, "holders did not run on every pool thread within 60 s; the request was sent anyway")
            #expect(stoppedByAnswer.allSatisfy { $0 }, "holders that reached their 70 s limit: \(stoppedByAnswer)")
        }
    }
}

/// What the asking thread and the holding tasks share.
private final class Shared: Sendable {
    /// Holders running.
    let holding = Atomic(0)
    /// Whether the answer came.
    let answered = Atomic(false)
    /// The answer, and whether every pool thread was held when the request was sent.
    let answer = Mutex<(text: String, heldAtSend: Bool)?>(nil)
}

/// `GET path` on 127.0.0.1:`port` with blocking sockets (no task, no event loop): the whole answer as text, or what
/// went wrong.
private func blockingGET(port: Int, path: String, timeoutSeconds: Int) -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return "socket() failed" }
    defer { close(fd) }
    _ = kk_set_receive_timeout(fd, Int32(timeoutSeconds))
    guard kk_connect_loopback(fd, UInt16(port)) == 0 else { return "connect() failed: errno \(errno)" }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else {
        return "send() failed: errno \(errno)"
    }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { return "recv() failed after \(received.count) bytes: errno \(errno)" }
        if n == 0 { break }
        received += buffer[0..<n]
    }
    return String(decoding: received, as: UTF8.self)
}
