import KKPushBackend
import KKPushCore
import KantineKoning

/// Reading an existing enrollment store a user named (`diagnose --store`, `token verify --db`): the file is
/// checked first (``EnrollmentStoreFile/checkExisting(_:flag:)``), and a file that SQLite cannot open as an
/// enrollment database (corrupt, locked too long, not kkpush's) is an input error (exit 2) naming the flag,
/// without the database library's nested text.
enum EnrollmentStoreReading {
    static func with<T: Sendable>(_ path: String, flag: String, _ body: (SQLiteEnrollmentStore) async throws -> T)
        async throws -> T
    {
        try EnrollmentStoreFile.checkExisting(path, flag: flag)
        do {
            return try await SQLiteEnrollmentStore.withStore(path: path, body)
        } catch let e as KKPushError where e.code == "store-open-failed" {
            throw KKPushError(
                code: .storeMalformed,
                message:
                    "The enrollment database \(flag) \(path) cannot be opened as an enrollment database (it is corrupt, locked by another process for more than 5 s, or not kkpush's).",
                fix:
                    "Give the enrollment database the backend writes (kkpush backend serve --db FILE); `kkpush backend export --db \(path)` shows whether it can be read."
            )
        }
    }
}
