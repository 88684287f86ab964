import CSQLite
import Foundation

/// One connection to an SQLite database file (the system's libsqlite3), used from its own thread only
/// (``BlockingThread``): a statement may wait up to the busy timeout for another process's lock, and that wait must
/// not hold one of Swift's cooperative threads. Callers await ``query(_:_:)``; statements run one after another, in
/// the order given.
///
/// The connection is opened with `SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE` (the file is created if missing)
/// and extended result codes; a read-only one (``open(path:readOnly:)``) with `SQLITE_OPEN_READONLY` through the URI
/// `file:PATH?mode=ro`, which never creates, changes or locks the file for writing. ``close()`` closes it after the statements already given; a statement after it throws
/// ``SQLiteFailure/closed``, and a second ``close()`` does nothing.
package final class SQLiteConnection: @unchecked Sendable {
    private let thread: BlockingThread
    /// Read and written on `thread` only.
    private var handle: OpaquePointer?
    /// The file, for messages.
    package let path: String

    private init(handle: OpaquePointer, thread: BlockingThread, path: String, readMode: ReadMode) {
        self.handle = handle
        self.thread = thread
        self.path = path
        self.readMode = readMode
    }

    /// Opens (creating if needed) the database at `path`, on a thread of its own.
    ///
    /// `readOnly`: opens the existing file with the URI `file:PATH?mode=ro` (SQLite writes nothing, creates nothing,
    /// and a file this user cannot write is read all the same). Where SQLite cannot read that way because the
    /// `-shm` file of a WAL database cannot be created (the file's folder, or the medium, is read-only), it opens it
    /// again with `immutable=1` (read as it is on disk, without locks); if a `-wal` file holds changes not yet in
    /// the database file, immutable would not see them, so the file and its `-wal` are copied to a private
    /// temporary folder and the copy is read instead (removed on ``close()``). ``readMode`` says which.
    package static func open(path: String, readOnly: Bool = false) async throws -> SQLiteConnection {
        let thread = BlockingThread(name: "kkpush.sqlite")
        do {
            return try await thread.run {
                guard readOnly else {
                    let handle = try openBlocking(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
                    return SQLiteConnection(handle: handle, thread: thread, path: path, readMode: .direct)
                }
                let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
                let handle = try openBlocking(uri(path, "mode=ro"), flags)
                // A writer's checkpoint may hold the file a moment: wait for it as every connection does.
                sqlite3_busy_timeout(handle, Int32(SQLiteEnrollmentStore.busyTimeoutMilliseconds))
                // The open succeeds lazily: the first read is what meets a -shm file that cannot be created.
                let code = sqlite3_exec(handle, "SELECT count(*) FROM sqlite_master", nil, nil, nil)
                if code == SQLITE_OK {
                    return SQLiteConnection(handle: handle, thread: thread, path: path, readMode: .direct)
                }
                // Read without locks (or from a copy) only where locks cannot be had: a folder this user cannot
                // write (no -shm can be created). Elsewhere a failure is the file's own (a writer, corruption).
                let parent = URL(fileURLWithPath: path).deletingLastPathComponent().path
                let primary = code & 0xFF
                guard access(parent, W_OK) != 0,
                    primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_IOERR
                else {
                    let failure = SQLiteFailure.statement(code: code, message: String(cString: sqlite3_errmsg(handle)))
                    sqlite3_close_v2(handle)
                    throw failure
                }
                sqlite3_close_v2(handle)
                let wal = path + "-wal"
                let walSize = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
                guard walSize > 0 else {
                    let immutable = try openBlocking(uri(path, "immutable=1"), flags)
                    return SQLiteConnection(handle: immutable, thread: thread, path: path, readMode: .immutable)
                }
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-sqlite-\(UUID())")
                do {
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
                    let copy = folder.appendingPathComponent("enrollments.sqlite").path
                    try FileManager.default.copyItem(atPath: path, toPath: copy)
                    try FileManager.default.copyItem(atPath: wal, toPath: copy + "-wal")
                    let copied = try openBlocking(uri(copy, "mode=ro"), flags)
                    return SQLiteConnection(
                        handle: copied, thread: thread, path: path, readMode: .copied(folder: folder.path))
                } catch {
                    try? FileManager.default.removeItem(at: folder)
                    throw error
                }
            }
        } catch {
            thread.stop()
            throw error
        }
    }

    /// How a connection reads its file.
    enum ReadMode: Sendable, Equatable {
        /// The file itself, with SQLite's locks (read-write, or `mode=ro`).
        case direct
        /// The file as it is on disk, without locks (`immutable=1`: its folder or medium is read-only, and it has
        /// no `-wal` changes).
        case immutable
        /// A copy of the file and its `-wal` in this private folder (its folder is read-only and its `-wal`
        /// holds changes), removed on close.
        case copied(folder: String)
    }

    /// How this connection reads its file.
    let readMode: ReadMode

    /// `sqlite3_open_v2` with extended result codes, or the failure.
    private static func openBlocking(_ name: String, _ flags: Int32) throws -> OpaquePointer {
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(name, &handle, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else {
            let failure = SQLiteFailure.statement(
                code: code, message: handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory")
            sqlite3_close_v2(handle)
            throw failure
        }
        sqlite3_extended_result_codes(handle, 1)
        return handle
    }

    /// `path` as an SQLite URI filename with `query`: every byte but letters, digits and `/._-~` percent-encoded
    /// (a `?`, `#` or `%` in the name stays part of it).
    static func uri(_ path: String, _ query: String) -> String {
        var out = "file:"
        if path.hasPrefix("/") { out += "//" }
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "/"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "-"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out + "?" + query
    }

    /// Runs one statement with `binds` (`?` parameters, in order) and returns its rows.
    package func query(_ sql: String, _ binds: [SQLiteValue] = []) async throws -> [SQLiteRow] {
        try await thread.run { [self] in try queryBlocking(sql, binds) }
    }

    /// Runs `work` on the connection's thread, after the statements already given, and awaits it: `work` runs its
    /// statements with ``queryOnThread(_:_:)``, one after another with no other caller's between them (a
    /// transaction of several statements, as one job).
    package func run<T: Sendable>(_ work: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await thread.run { [self] in try work(self) }
    }

    /// Runs one statement, from ``run(_:)`` only (on the connection's thread).
    package func queryOnThread(_ sql: String, _ binds: [SQLiteValue] = []) throws -> [SQLiteRow] {
        try queryBlocking(sql, binds)
    }

    /// Closes the connection after the statements already given (a second call does nothing).
    package func close() async {
        _ = try? await thread.run { [self] in
            if let handle {
                sqlite3_close_v2(handle)
                self.handle = nil
                if case .copied(let folder) = readMode { try? FileManager.default.removeItem(atPath: folder) }
            }
        }
        thread.stop()
    }

    // MARK: On the thread

    private func queryBlocking(_ sql: String, _ binds: [SQLiteValue]) throws -> [SQLiteRow] {
        guard let handle else { throw SQLiteFailure.closed }
        var statement: OpaquePointer?
        var code = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else { throw failure(code, handle) }
        defer { sqlite3_finalize(statement) }
        guard Int(sqlite3_bind_parameter_count(statement)) == binds.count else {
            throw SQLiteFailure.statement(
                code: SQLITE_RANGE,
                message: "the statement has \(sqlite3_bind_parameter_count(statement)) parameters, given \(binds.count)"
            )
        }
        for (offset, value) in binds.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .integer(let v): code = sqlite3_bind_int64(statement, index, Int64(v))
            case .real(let v): code = sqlite3_bind_double(statement, index, v)
            case .text(let v): code = kkpush_sqlite3_bind_text_copy(statement, index, v, Int32(v.utf8.count))
            case .blob(let v):
                code = v.withUnsafeBytes {
                    kkpush_sqlite3_bind_blob_copy(statement, index, $0.baseAddress, Int32(v.count))
                }
            case .null: code = sqlite3_bind_null(statement, index)
            }
            guard code == SQLITE_OK else { throw failure(code, handle) }
        }
        let count = Int(sqlite3_column_count(statement))
        let names = SQLiteRow.Names((0..<count).map { String(cString: sqlite3_column_name(statement, Int32($0))) })
        var rows: [SQLiteRow] = []
        while true {
            code = sqlite3_step(statement)
            if code == SQLITE_DONE { return rows }
            guard code == SQLITE_ROW else { throw failure(code, handle) }
            var values: [SQLiteValue] = []
            values.reserveCapacity(count)
            for column in 0..<Int32(count) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: values.append(.integer(Int(sqlite3_column_int64(statement, column))))
                case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT:
                    let bytes = Int(sqlite3_column_bytes(statement, column))
                    let text = sqlite3_column_text(statement, column).map {
                        String(decoding: UnsafeBufferPointer(start: $0, count: bytes), as: UTF8.self)
                    }
                    values.append(.text(text ?? ""))
                case SQLITE_BLOB:
                    let bytes = Int(sqlite3_column_bytes(statement, column))
                    let blob = sqlite3_column_blob(statement, column).map {
                        Array(UnsafeRawBufferPointer(start: $0, count: bytes))
                    }
                    values.append(.blob(blob ?? []))
                default: values.append(.null)
                }
            }
            rows.append(SQLiteRow(names: names, values: values))
        }
    }

    private func failure(_ code: Int32, _ handle: OpaquePointer) -> SQLiteFailure {
        .statement(code: code, message: String(cString: sqlite3_errmsg(handle)))
    }
}

/// A value bound to a statement or read from a row.
package enum SQLiteValue: Sendable, Equatable {
    case integer(Int)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case null

    /// The text; an integer or real as its decimal text; nil for a blob or NULL.
    package var string: String? {
        switch self {
        case .text(let v): v
        case .integer(let v): String(v)
        case .real(let v): String(v)
        case .blob, .null: nil
        }
    }

    /// The integer; a real truncated, a text that is a whole number read; nil otherwise.
    var integer: Int? {
        switch self {
        case .integer(let v): v
        case .real(let v): v.isFinite && abs(v) < 9.2e18 ? Int(v) : nil
        case .text(let v): Int(v)
        case .blob, .null: nil
        }
    }

    /// An integer other than 0 (how SQLite stores booleans).
    var bool: Bool? { integer.map { $0 != 0 } }

    /// Whether it is NULL.
    var isNull: Bool { self == .null }
}

/// One row of a result: its values by column, found by name.
package struct SQLiteRow: Sendable {
    /// The column names of a result, shared by its rows.
    package final class Names: Sendable {
        let names: [String]
        init(_ names: [String]) { self.names = names }
    }

    let names: Names
    package let values: [SQLiteValue]

    /// The value of the first column called `name`, if the result has one.
    package func column(_ name: String) -> SQLiteValue? {
        names.names.firstIndex(of: name).map { values[$0] }
    }
}

/// What went wrong in SQLite (the store turns it into a KKPushError with the file and a fix).
package enum SQLiteFailure: Error, CustomStringConvertible {
    /// A statement (or the open) failed: SQLite's extended result code and message.
    case statement(code: Int32, message: String)
    /// The connection was closed before the statement.
    case closed

    package var description: String {
        switch self {
        case .statement(let code, let message):
            "\(message) (SQLite \(String(cString: sqlite3_errstr(code))), code \(code))"
        case .closed: "the connection is closed"
        }
    }
}
