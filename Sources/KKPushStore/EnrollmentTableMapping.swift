public import Foundation
import KKPushCore

/// Which PostgreSQL table and columns hold the enrollments: kkpush's own `public.device_enrollments` by default,
/// or the real backend's table, whose names may differ, read from a small JSON file (`--schema-map FILE`):
///
/// ```json
/// {"table": "app.enrollments", "columns": {"device_id": "enrollment_id", "team_codes": "teams"}}
/// ```
///
/// `columns` maps kkpush's column names (``logicalColumns``) to the table's; a column left out keeps its name.
/// Unknown keys and unknown column names are refused, naming them. Names are SQL identifiers, always
/// double-quoted in queries (a `"` inside one is doubled), never interpolated as they are.
public struct EnrollmentTableMapping: Sendable, Equatable {
    /// The schema (`public` by default).
    public var schema: String
    /// The table name.
    public var table: String
    /// kkpush's column name → the table's, for every logical column.
    public var columns: [String: String]
    /// Where the mapping came from (`--schema-map FILE`), nil for the default.
    public var source: String?

    /// kkpush's columns, in the order queries list them.
    public static let logicalColumns = [
        "device_id", "tenant_slug", "team_codes", "role", "hardware_identifier", "apns_token", "build_environment",
        "app_version", "is_test_user", "status", "team_manager_email", "updated_at", "generation", "token_updated_at",
        "aps_environment",
    ]

    /// The columns a read-only store does without, read as defaults when the table lacks them: kkpush's own, which
    /// the real backend's table (README of the app: its columns) does not have. `generation` reads as 1,
    /// `token_updated_at` as unknown, `aps_environment` as nil (the store says which were absent, so a command
    /// says what it cannot know). A store that writes needs every column.
    public static let optionalForReading: Set<String> = ["generation", "token_updated_at", "aps_environment"]

    /// What cannot be known without each of ``optionalForReading``, in the order of ``logicalColumns``.
    public static func notes(absent: Set<String>) -> [String] {
        logicalColumns.filter(absent.contains).map { column in
            switch column {
            case "generation":
                "generation unknown: the table has no generation (read as 1, so a device JWT is never found superseded)"
            case "token_updated_at":
                "token age unknown: the table has no token_updated_at (a 410 clears the token whenever it was registered)"
            case "aps_environment":
                "aps_environment unknown: the table has no aps_environment (read as not sent: the build environment decides)"
            default: "\(column) unknown: the table has no \(column)"
            }
        }
    }

    /// The type `ALTER TABLE ... ADD COLUMN` gives each of ``optionalForReading`` (what `backend migrate` would).
    public static let addedColumnTypes: [String: String] = [
        "generation": "integer NOT NULL DEFAULT 1", "token_updated_at": "timestamptz", "aps_environment": "text",
    ]

    /// kkpush's own table: `public.device_enrollments` with the logical column names.
    public static let standard = EnrollmentTableMapping(
        schema: "public", table: "device_enrollments",
        columns: Dictionary(uniqueKeysWithValues: logicalColumns.map { ($0, $0) }), source: nil)

    /// Whether this is kkpush's own table (the one `backend migrate` creates).
    public var isStandard: Bool { self == Self.standard }

    /// `schema.table` as written (unquoted), for messages.
    public var tableName: String { "\(schema).\(table)" }

    /// The table, quoted: `"public"."device_enrollments"`.
    public var qualifiedTable: String { "\(Self.quote(schema)).\(Self.quote(table))" }

    /// The table's name of a logical column.
    public func column(_ logical: String) -> String { columns[logical] ?? logical }

    /// The table's name of a logical column, quoted.
    public func quoted(_ logical: String) -> String { Self.quote(column(logical)) }

    /// `name` as a quoted SQL identifier.
    ///
    /// Every `"` is doubled scalar by scalar: a `"` followed by a combining mark is one Swift `Character`, which
    /// a Character-based replace (String's `replacingOccurrences` among them) leaves single, ending the
    /// identifier early in the SQL (found by fuzzing).
    public static func quote(_ name: String) -> String {
        var scalars = String.UnicodeScalarView()
        scalars.append("\"")
        for scalar in name.unicodeScalars {
            if scalar == "\"" { scalars.append("\"") }
            scalars.append(scalar)
        }
        scalars.append("\"")
        return String(scalars)
    }

    /// Reads a mapping file; `schema-map-invalid` naming the file and what is wrong.
    public static func load(path: String) throws -> EnrollmentTableMapping {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw KKPushError(
                code: .schemaMapUnreadable, message: "The schema map (schemaMap) \(path) cannot be read.",
                fix:
                    "Give a JSON file such as {\"table\": \"public.device_enrollments\", \"columns\": {\"device_id\": \"id\"}}.",
                underlying: KKPushError.Cause(String(describing: error)))
        }
        // Its messages say "The schema map (schemaMap) FILE ..."; others name the mapping by `source`.
        var mapping = try parse(data, source: "(schemaMap) \(path)")
        mapping.source = "the schema map (schemaMap) \(path)"
        return mapping
    }

    /// Parses a mapping; `source` names it in messages.
    public static func parse(_ data: Data, source: String) throws -> EnrollmentTableMapping {
        func invalid(_ why: String) -> KKPushError {
            KKPushError(
                code: .schemaMapInvalid, message: "The schema map \(source) is unusable: \(why).",
                fix:
                    "Write {\"table\": \"SCHEMA.TABLE\", \"columns\": {\"KKPUSH_NAME\": \"THEIR_NAME\", ...}} with kkpush's names from: \(logicalColumns.joined(separator: ", "))."
            )
        }
        if let syntax = JSONInput.syntaxProblem(Array(data)) {
            throw invalid(syntax.hasPrefix("it is ") ? syntax : "it is not valid JSON: \(syntax)")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw invalid("it is not a JSON object")
        }
        let unknownKeys = object.keys.filter { !["table", "columns"].contains($0) }.sorted()
        if !unknownKeys.isEmpty {
            throw invalid("unknown key(s) \(unknownKeys.joined(separator: ", ")) (only table and columns)")
        }
        var mapping = standard
        mapping.source = source
        if let table = object["table"] {
            guard let name = table as? String else { throw invalid("\"table\" is not a string") }
            let parts = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            switch parts.count {
            case 1: mapping.table = parts[0]
            case 2: (mapping.schema, mapping.table) = (parts[0], parts[1])
            default: throw invalid("\"table\" '\(name)' is not TABLE or SCHEMA.TABLE")
            }
            for part in [mapping.schema, mapping.table] {
                if let problem = identifierProblem(part) { throw invalid("\"table\" '\(name)': \(problem)") }
            }
        }
        if let columns = object["columns"] {
            guard let map = columns as? [String: Any] else { throw invalid("\"columns\" is not an object") }
            let unknown = map.keys.filter { !logicalColumns.contains($0) }.sorted()
            if !unknown.isEmpty {
                throw invalid("\"columns\" names unknown kkpush column(s) \(unknown.joined(separator: ", "))")
            }
            for (logical, value) in map {
                guard let name = value as? String else {
                    throw invalid("\"columns\".\(logical) is not a string")
                }
                if let problem = identifierProblem(name) {
                    throw invalid("\"columns\".\(logical) '\(name)': \(problem)")
                }
                mapping.columns[logical] = name
            }
            var seen: [String: String] = [:]
            for logical in logicalColumns {
                let name = mapping.column(logical)
                if let other = seen[name] {
                    throw invalid("\(other) and \(logical) both map to the column '\(name)'")
                }
                seen[name] = logical
            }
        }
        return mapping
    }

    /// Why `name` cannot be a PostgreSQL identifier, if it cannot: empty, longer than 63 bytes, a NUL.
    static func identifierProblem(_ name: String) -> String? {
        if name.isEmpty { return "the name is empty" }
        if name.utf8.count > 63 { return "the name is longer than 63 bytes (PostgreSQL's limit)" }
        if name.utf8.contains(0) { return "the name has a NUL character" }
        return nil
    }
}
