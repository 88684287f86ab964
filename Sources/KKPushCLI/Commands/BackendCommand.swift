import ArgumentParser
import Foundation
import KKPushAuth
import KKPushBackend
import KKPushCLISupport
import KKPushClient
import KKPushCore
import KKPushStore
import KKPushSystem
import KantineKoning
import Logging

/// `kkpush backend`: the simulated Kantine Koning backend and its enrollment database.
struct BackendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backend",
        abstract: "Run the simulated Kantine Koning backend, and export/import/enroll into its enrollment database.",
        subcommands: [
            BackendServeCommand.self, BackendExportCommand.self, BackendImportCommand.self, BackendEnrollCommand.self,
            BackendMigrateCommand.self,
        ]
    )
}

/// The enrollment-database options of the backend commands that write (serve, import, enroll, migrate).
struct BackendDatabaseOptions: ParsableArguments {
    @Option(
        help:
            "The enrollment database: an SQLite file (created if missing, its folder must exist) or a PostgreSQL connection string as libpq reads it: postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=...&sslrootcert=...] or key=value pairs (host=... dbname=...), with the PG* variables and ~/.pgpass (default: $DATABASE_URL, else kkpush-backend.sqlite)."
    )
    var db: String?
    @Option(
        name: .customLong("schema-map"),
        help:
            "With a postgres:// database: a JSON file naming the table and mapping kkpush's column names to its own ({\"table\": \"public.enrollments\", \"columns\": {\"device_id\": \"id\"}})."
    )
    var schemaMap: String?

    /// The database: --db, else DATABASE_URL, else kkpush-backend.sqlite; an SQLite path is checked for writing.
    func location() throws -> EnrollmentStoreLocation {
        try BackendStoreOptions.location(db, mustExist: false)
    }

    /// The --schema-map file, read.
    func mapping() throws -> EnrollmentTableMapping? { try BackendStoreOptions.mapping(schemaMap) }
}

/// The enrollment-database options of `backend export`, which only reads.
struct BackendExistingDatabaseOptions: ParsableArguments {
    @Option(
        help:
            "The enrollment database to read: an SQLite file that backend serve, enroll or import wrote (it must exist: export does not create one), or a postgres:// URL (default: $DATABASE_URL, else kkpush-backend.sqlite)."
    )
    var db: String?
    @Option(
        name: .customLong("schema-map"),
        help: "With a postgres:// database: a JSON file naming the table and mapping kkpush's column names to its own."
    )
    var schemaMap: String?

    func location() throws -> EnrollmentStoreLocation {
        try BackendStoreOptions.location(db, mustExist: true)
    }

    func mapping() throws -> EnrollmentTableMapping? { try BackendStoreOptions.mapping(schemaMap) }
}

/// How the backend commands resolve `--db` (or DATABASE_URL) and `--schema-map`.
enum BackendStoreOptions {
    /// The default SQLite file.
    static let defaultPath = "kkpush-backend.sqlite"

    /// `value` (a flag's) as a store location; a bad postgres:// URL is a usage error naming the part at fault.
    static func parse(_ value: String, origin: String) throws -> EnrollmentStoreLocation {
        try EnrollmentStoreLocation.parse(value, origin: origin)
    }

    /// --db, else $DATABASE_URL, else the default file; an SQLite path is checked (BackendDatabasePath).
    static func location(_ db: String?, mustExist: Bool) throws -> EnrollmentStoreLocation {
        let location = try EnrollmentStoreLocation.resolve(
            given: db, origin: "--db", environment: CommandIO.current.environment, defaultPath: defaultPath)!
        if let path = location.sqlitePath { try BackendDatabasePath.check(path, mustExist: mustExist) }
        return location
    }

    static func mapping(_ schemaMap: String?) throws -> EnrollmentTableMapping? {
        try schemaMap.map { try EnrollmentTableMapping.load(path: $0) }
    }
}

/// Checks a `--db` path before SQLite opens it, so that a wrong path gets an error naming `--db`: a folder,
/// a file that is not an SQLite database (a JSON export given by mistake), a missing file for `export`,
/// a missing folder or a read-only file for the commands that write.
enum BackendDatabasePath {
    /// The 16 bytes every SQLite database file starts with.
    static let sqliteHeader = Array("SQLite format 3\u{0}".utf8)

    static func check(_ path: String, mustExist: Bool) throws {
        if path.trimmingWhitespace().isEmpty {
            throw CLIError.usage(
                .backendDbEmpty, "--db is empty.",
                fix: "Give the database file, for example --db kkpush-backend.sqlite.")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            if mustExist {
                throw CLIError.input(
                    .storeMissing,
                    "The enrollment database --db \(path) does not exist (export reads a database; it does not create one).",
                    fix: "Give the file that backend serve, enroll or import wrote (they create it), or check the path."
                )
            }
            try InputFile.checkWritable(path, what: "enrollment database", label: "--db")
            return
        }
        if isDirectory.boolValue {
            throw CLIError.input(
                .fileIsDirectory, "The enrollment database --db \(path) is a folder, not an SQLite file.",
                fix:
                    "Give a file path, for example --db \(path.hasSuffix("/") ? path : path + "/")kkpush-backend.sqlite."
            )
        }
        // A pipe or device is never a database (and opening a FIFO without a writer would wait forever).
        try InputFile.checkRegular(path, what: "enrollment database", label: "--db")
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CLIError.input(
                .fileUnreadable, "The enrollment database --db \(path) cannot be read.",
                fix: "Make it readable by this user (ls -l \(path)).")
        }
        let head = [UInt8]((try? handle.read(upToCount: sqliteHeader.count)) ?? Data())
        try? handle.close()
        if mustExist, head.isEmpty {
            // SQLite would take an empty file as an empty database and write its tables into it: a read never
            // changes the user's file.
            throw CLIError.input(
                .fileEmpty, "The enrollment database --db \(path) is empty (0 bytes), not a database.",
                fix: "Give the file that backend serve, enroll or import wrote, or check the path.")
        }
        if !head.isEmpty, head != sqliteHeader {
            let looksLike =
                head.first.map { [UInt8(ascii: "["), UInt8(ascii: "{")].contains($0) } == true
                ? " (it looks like JSON: an export? load that with kkpush backend import FILE --db DB)" : ""
            throw CLIError.input(
                .fileNotSqlite, "--db \(path) is not an SQLite database\(looksLike).",
                fix:
                    "Give the enrollment database that kkpush backend serve, enroll or import wrote\(mustExist ? "" : ", or a new file name to create one")."
            )
        }
        if !mustExist, !FileAccess.isWritable(path) {
            throw CLIError.input(
                .fileNotWritable, "The enrollment database --db \(path) is read-only for this user.",
                fix: "Make it writable (chmod u+w \(path)), or give another --db.")
        }
    }
}

/// The JWT secret option shared by the backend commands.
struct BackendSecretOptions: ParsableArguments {
    @Option(
        help:
            "The device-JWT secret, 16+ bytes (default: $KKPUSH_BACKEND_SECRET; prefer it or --secret-file). Make one: openssl rand -hex 32"
    )
    var secret: String?
    @Option(name: .customLong("secret-file"), help: "A file holding the device-JWT secret ('-' for stdin).")
    var secretFile: String?

    /// Checks that a secret is given once (without reading a file: stdin is read once, in run()).
    func check() throws {
        if secret != nil, secretFile != nil { throw ValidationError("Give --secret or --secret-file, not both.") }
        if secret == nil, secretFile == nil,
            (CommandIO.current.environment["KKPUSH_BACKEND_SECRET"] ?? "").isEmpty
        {
            throw ValidationError(
                "Give --secret-file FILE or set KKPUSH_BACKEND_SECRET (for example: export KKPUSH_BACKEND_SECRET=$(openssl rand -hex 32))."
            )
        }
    }

    func resolved() throws -> String {
        guard let value = try Secrets.resolve(Secrets.backendSecret, flag: secret, file: secretFile), !value.isEmpty
        else {
            throw ValidationError(
                "Give --secret-file FILE or set KKPUSH_BACKEND_SECRET (for example: export KKPUSH_BACKEND_SECRET=$(openssl rand -hex 32))."
            )
        }
        if value.utf8.count < DeviceJWT.minimumSecretLength {
            let origin =
                secret != nil ? "--secret" : secretFile.map { "--secret-file \($0)" } ?? "KKPUSH_BACKEND_SECRET"
            throw CLIError.usage(
                .backendSecretShort,
                "The device-JWT secret (\(origin)) is \(value.utf8.count) bytes; it needs at least \(DeviceJWT.minimumSecretLength).",
                fix:
                    "Make one: openssl rand -hex 32 > backend.secret; chmod 600 backend.secret; then --secret-file backend.secret."
            )
        }
        return value
    }
}
