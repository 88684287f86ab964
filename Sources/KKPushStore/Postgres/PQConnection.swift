import CKKPushSystem
import CLibPQ
import Foundation
import KKPushCore
import Synchronization

/// One libpq connection (`PGconn`), used from its own thread only (``BlockingThread``): libpq blocks, and neither
/// Swift's cooperative threads nor Dispatch's shared pool (which other blocking work may exhaust) must wait on the
/// network. Callers hand it synchronous work (``run(_:)``), which runs on the thread and is awaited.
///
/// It connects with `PQconnectdbParams`, the connection string expanded by libpq itself (so the `PG*`
/// variables, `~/.pgpass`, `pg_service.conf`, Unix sockets and every sslmode work as for psql), adding
/// `fallback_application_name=kkpush`, `client_encoding=UTF8`, `connect_timeout` (5 s unless set),
/// `gssencmode=disable` (unless set) and
/// `options` with `-c TimeZone=UTC` (and `-c default_transaction_read_only=on` for a read-only store, so the
/// server refuses every write of every session).
package final class PQConnection: Sendable {
    /// libpq's connection: a C pointer, so not `Sendable` to the compiler. Only the connection's own thread
    /// (``queue``) touches it, which is what makes sharing the object safe; the one unchecked property is this.
    nonisolated(unsafe) private let conn: OpaquePointer
    private let queue: BlockingThread
    /// Whether the pool may hand it out again (a connection opened past a full pool is not).
    package let pooled: Bool

    private init(conn: OpaquePointer, queue: BlockingThread, pooled: Bool) {
        self.conn = conn
        self.queue = queue
        self.pooled = pooled
    }

    /// Connects (on a queue of its own); ``PQFailure/connect`` with libpq's message if it cannot.
    package static func connect(url: PostgresURL, readOnly: Bool, pooled: Bool = true) async throws -> PQConnection {
        let queue = BlockingThread(name: "kkpush.postgres")
        return try await queue.run {
            do {
                return try PQConnection(conn: openBlocking(url: url, readOnly: readOnly), queue: queue, pooled: pooled)
            } catch {
                queue.stop()
                throw error
            }
        }
    }

    /// ``connect(url:readOnly:pooled:)`` of a connection of its own (not pooled), its failure said as a
    /// KKPushError naming the database.
    static func connectAlone(url: PostgresURL, readOnly: Bool) async throws -> PQConnection {
        do {
            return try await connect(url: url, readOnly: readOnly, pooled: false)
        } catch {
            throw PostgresErrors.map(error, url: url) ?? error
        }
    }

    /// The keywords and values given to `PQconnectdbParams` (later ones win; `dbname` is the connection string,
    /// expanded).
    static func connectParameters(url: PostgresURL, readOnly: Bool) -> [(String, String)] {
        var list: [(String, String)] = [("fallback_application_name", "kkpush")]
        let env = ProcessInfo.processInfo.environment
        if url.parameters["connect_timeout"] == nil && (env["PGCONNECT_TIMEOUT"] ?? "").isEmpty {
            list.append(("connect_timeout", "\(PostgresURL.defaultConnectTimeoutSeconds)"))
        }
        // libpq's default (prefer) first looks for Kerberos credentials, which took seconds per connection on a busy
        // machine; kkpush asks for GSSAPI encryption only when told to (gssencmode, PGGSSENCMODE).
        if url.parameters["gssencmode"] == nil && (env["PGGSSENCMODE"] ?? "").isEmpty {
            list.append(("gssencmode", "disable"))
        }
        list.append(("dbname", url.conninfo))
        var options = url.parameters["options"] ?? env["PGOPTIONS"] ?? ""
        options += " -c TimeZone=UTC"
        if readOnly { options += " -c default_transaction_read_only=on" }
        list.append(("options", options.trimmingCharacters(in: .whitespaces)))
        list.append(("client_encoding", "UTF8"))
        return list
    }

    private static func openBlocking(url: PostgresURL, readOnly: Bool) throws -> OpaquePointer {
        let parameters = connectParameters(url: url, readOnly: readOnly)
        let keys = parameters.map { strdup($0.0) } + [nil]
        let values = parameters.map { strdup($0.1) } + [nil]
        defer {
            for p in keys { free(p) }
            for p in values { free(p) }
        }
        let conn = keys.map { UnsafePointer($0) }.withUnsafeBufferPointer { k in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { v in
                PQconnectdbParams(k.baseAddress, v.baseAddress, 1)
            }
        }
        guard let conn else { throw PQFailure.connect(message: "libpq is out of memory") }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(conn)
            throw PQFailure.connect(message: message)
        }
        // NOTICEs (CREATE ... IF NOT EXISTS, skipping) are not ours to print.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
        return conn
    }

    /// Runs `work` on the connection's queue and awaits it.
    package func run<T: Sendable>(_ work: @escaping @Sendable (PQConnection) throws -> T) async throws -> T {
        try await queue.run {
            defer {
                let reusable =
                    PQstatus(self.conn) == CONNECTION_OK && PQtransactionStatus(self.conn) == PQTRANS_IDLE
                self.reusableNow.withLock { $0 = reusable }
            }
            return try work(self)
        }
    }

    private let reusableNow = Mutex(true)

    /// Whether the pool may hand it out again: the connection is up and no transaction is open (as of the end of
    /// the last ``run(_:)``).
    var isReusable: Bool { reusableNow.withLock { $0 } }

    /// Closes the connection (on its queue, after the work in it).
    package func close() {
        queue.async { PQfinish(self.conn) }
        queue.stop()
    }

    // MARK: On the queue

    /// Runs `sql` with `parameters` bound as text (nil: NULL), the types inferred by the server, and returns its
    /// rows as text. Only from ``run(_:)``.
    @discardableResult
    package func exec(_ sql: String, _ parameters: [String?] = []) throws -> PQRows {
        let values = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { for p in values { free(p) } }
        let result = values.map { UnsafePointer($0) }.withUnsafeBufferPointer { v in
            PQexecParams(conn, sql, Int32(values.count), nil, v.baseAddress, nil, nil, 0)
        }
        guard let result else {
            throw lost(String(cString: PQerrorMessage(conn)))
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            let rowCount = Int(PQntuples(result))
            let columnCount = Int(PQnfields(result))
            var rows: [[String?]] = []
            rows.reserveCapacity(rowCount)
            for r in 0..<rowCount {
                var row: [String?] = []
                row.reserveCapacity(columnCount)
                for c in 0..<columnCount {
                    if PQgetisnull(result, Int32(r), Int32(c)) == 1 {
                        row.append(nil)
                    } else {
                        row.append(String(cString: PQgetvalue(result, Int32(r), Int32(c))))
                    }
                }
                rows.append(row)
            }
            let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
            return PQRows(rows: rows, affected: affected)
        default:
            func field(_ code: UInt8) -> String? {
                PQresultErrorField(result, Int32(code)).map { String(cString: $0) }
            }
            let message =
                field(UInt8(ascii: "M"))
                ?? String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
            let state = field(UInt8(ascii: "C"))
            if PQstatus(conn) != CONNECTION_OK {
                throw PQFailure.lost(message: message, sqlState: state)
            }
            throw PQFailure.server(sqlState: state ?? "?", message: message, detail: field(UInt8(ascii: "D")))
        }
    }

    /// Runs `body` inside `BEGIN` … `COMMIT`, rolled back if it throws. Only from ``run(_:)``.
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        try exec("BEGIN")
        do {
            let result = try body()
            try exec("COMMIT")
            return result
        } catch {
            _ = try? exec("ROLLBACK")
            throw error
        }
    }

    /// Waits at most `timeoutMilliseconds` for a notification on a channel this connection listens to (after
    /// `LISTEN`), reading what the server sent (`PQconsumeInput`) and taking every notification it holds
    /// (`PQnotifies`): their channel names, empty after the timeout. Only from ``run(_:)``; a lost connection throws
    /// ``PQFailure/lost(message:sqlState:)``.
    package func waitForNotifications(timeoutMilliseconds: Int32) throws -> [String] {
        var channels = takeNotifications()
        if !channels.isEmpty { return channels }
        let socket = PQsocket(conn)
        guard socket >= 0 else { throw lost("the connection has no socket") }
        let ready = kk_wait_readable(socket, timeoutMilliseconds)
        if ready < 0 { return [] }  // EINTR: the caller waits again
        if ready > 0, PQconsumeInput(conn) == 0 {
            throw lost(String(cString: PQerrorMessage(conn)))
        }
        channels = takeNotifications()
        return channels
    }

    private func takeNotifications() -> [String] {
        var channels: [String] = []
        while let notice = PQnotifies(conn) {
            channels.append(String(cString: notice.pointee.relname))
            PQfreemem(notice)
        }
        return channels
    }

    private func lost(_ message: String) -> PQFailure {
        .lost(message: message.trimmingCharacters(in: .whitespacesAndNewlines), sqlState: nil)
    }
}

/// The rows of a statement, every value as text (nil: NULL).
package struct PQRows: Sendable {
    package var rows: [[String?]]
    /// How many rows an INSERT/UPDATE/DELETE changed.
    package var affected: Int
}

/// What went wrong at the libpq level (``PostgresErrors`` turns it into a KKPushError).
package enum PQFailure: Error {
    /// The connection could not be opened: libpq's message.
    case connect(message: String)
    /// The connection went away during a statement.
    case lost(message: String, sqlState: String?)
    /// The server refused a statement.
    case server(sqlState: String, message: String, detail: String?)
}
