import KKPushBackend
import KKPushCLISupport
import KKPushCore
import KKPushDiagnosis
import KKPushStore
import KantineKoning

extension EnrollmentStoreReading {
    /// ``reading(_:label:schemaMap:note:_:)`` with its refusals in the command line's words (naming `flag` and
    /// `--schema-map`), and with `notes` the store's notes on standard error.
    static func with<T: Sendable>(
        _ value: String, flag: String, schemaMap: String? = nil, notes: Bool = false,
        _ read: (any EnrollmentStore) async throws -> T
    ) async throws -> T {
        do {
            return try await reading(
                value, label: flag, schemaMap: schemaMap, note: notes ? { Output.printError("note: \($0)") } : nil,
                read)
        } catch Refusal.schemaMapOnSQLite(let path) {
            throw CLIError.usage(
                .schemaMapSQLite, "--schema-map maps a PostgreSQL table, but \(flag) \(path) is an SQLite file.",
                fix: "Give a postgres:// URL, or leave out --schema-map.")
        } catch Refusal.notAnEnrollmentDatabase(let path, let cause) {
            throw KKPushError(
                code: .storeMalformed,
                message:
                    "The enrollment database \(flag) \(path) cannot be opened as an enrollment database: \(cause).",
                fix:
                    "Give the enrollment database the backend writes (kkpush backend serve --db FILE), readable by this user; check that it is not corrupt, nor locked by another process for more than 5 s."
            )
        }
    }
}

extension EnrollmentStoreLocation {
    /// The flag's value, else `$DATABASE_URL` when set and not blank; and which of the two it is (for messages).
    static func flagOrEnvironment(_ value: String?, flag: String) -> (value: String, flag: String)? {
        if let value { return (value, flag) }
        guard let url = CommandIO.current.environment[environmentVariable], !url.trimmingWhitespace().isEmpty else {
            return nil
        }
        return (url, environmentVariable)
    }
}
