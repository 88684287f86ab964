import Foundation
import KKPushCore

/// The type of one column, as `pg_catalog` has it.
struct PostgresColumnType: Sendable, Equatable {
    /// `format_type`: `text`, `character varying(255)`, `timestamp without time zone`, `enrollment_role`, ...
    var display: String
    /// `pg_type.typname`: `text`, `varchar`, `uuid`, `_text`, `citext`, `enrollment_role`, ...
    var name: String
    /// `pg_type.typtype`: `b` base, `e` enum, `d` domain, ...
    var kind: String
    /// The element's typname of an array type (`text` for `_text`), else nil.
    var element: String?

    /// Whether it is one of PostgreSQL's text types (or citext), which kkpush reads and compares as they are.
    var isText: Bool { Self.textNames.contains(name) }
    /// Whether it is an enum type.
    var isEnum: Bool { kind == "e" }

    static let textNames: Set<String> = ["text", "varchar", "bpchar", "citext", "name"]
}

/// What a table offers: the logical columns it lacks, and each present one's type.
struct PostgresTableShape: Sendable {
    var absent: Set<String>
    var types: [String: PostgresColumnType]
}

/// Checks the mapped table before a store uses it: the table, every column kkpush needs (a read-only store does
/// without those of ``EnrollmentTableMapping/optionalForReading``), and types kkpush can read (named, with the
/// column, when one cannot be used).
enum PostgresSchemaCheck {
    /// Which types each logical column may have. Text columns accept every text type (text, varchar, char,
    /// citext); `hardware_identifier` and `device_id` also uuid; `role`, `status` and the environments also an
    /// enum type; timestamps with or without time zone (read as UTC).
    static func accepts(_ logical: String, _ t: PostgresColumnType) -> Bool {
        switch logical {
        case "team_codes": return t.element.map(PostgresColumnType.textNames.contains) ?? false
        case "is_test_user": return t.name == "bool"
        case "updated_at", "token_updated_at": return ["timestamptz", "timestamp"].contains(t.name)
        case "generation": return ["int2", "int4", "int8"].contains(t.name)
        case "hardware_identifier", "device_id": return t.isText || t.name == "uuid"
        case "role", "status", "build_environment", "aps_environment": return t.isText || t.isEnum
        default: return t.isText
        }
    }

    static let expectedDescription: [String: String] = {
        var d: [String: String] = [:]
        for c in EnrollmentTableMapping.logicalColumns { d[c] = "text (or varchar, char, citext)" }
        d["hardware_identifier"] = "text (or varchar, citext, uuid)"
        d["device_id"] = "text (or varchar, citext, uuid)"
        for c in ["role", "status", "build_environment", "aps_environment"] {
            d[c] = "text (or varchar, citext, an enum type)"
        }
        d["team_codes"] = "text[] (or varchar[], citext[])"
        d["is_test_user"] = "boolean"
        d["updated_at"] = "timestamptz (or timestamp)"
        d["token_updated_at"] = "timestamptz (or timestamp)"
        d["generation"] = "integer (or bigint, smallint)"
        return d
    }()

    /// The columns of the mapped table, or `store-not-migrated` / `store-schema-mismatch` naming what is missing
    /// or of a type kkpush cannot read.
    static func check(
        _ c: PQConnection, url: PostgresURL, mapping: EnrollmentTableMapping, readOnly: Bool
    ) throws -> PostgresTableShape {
        let rows = try c.exec(
            """
            SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), t.typname::text, t.typtype::text,
                et.typname::text
            FROM pg_catalog.pg_attribute a
            JOIN pg_catalog.pg_class r ON r.oid = a.attrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = r.relnamespace
            JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
            LEFT JOIN pg_catalog.pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
            WHERE n.nspname = $1 AND r.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped
                AND has_table_privilege(r.oid, 'SELECT')
            """, [mapping.schema, mapping.table]
        ).rows
        let via = mapping.source.map { " (mapped by \($0))" } ?? ""
        if rows.isEmpty {
            if mapping.isStandard {
                throw KKPushError(
                    code: .storeNotMigrated,
                    message: "The database \(url.named) has no table public.device_enrollments.",
                    fix:
                        "Migrate the database first (backendMigrateCommand)\(url.databaseForFix): it creates the table and its indexes."
                )
            }
            throw KKPushError(
                code: .storeSchemaMismatch,
                message:
                    "The database \(url.named) has no table \(mapping.tableName)\(via), or this user cannot see it.",
                fix: "Check the \"table\" of the schema map (SCHEMA.TABLE) and the user's privileges.")
        }
        var byName: [String: PostgresColumnType] = [:]
        for row in rows {
            guard let name = row[0] else { continue }
            byName[name] = PostgresColumnType(
                display: row[1] ?? "?", name: row[2] ?? "?", kind: row[3] ?? "b", element: row[4])
        }
        let absent = EnrollmentTableMapping.logicalColumns.filter { byName[mapping.column($0)] == nil }
        let missing = absent.filter { !readOnly || !EnrollmentTableMapping.optionalForReading.contains($0) }
        if !missing.isEmpty {
            let names = missing.map { mapping.column($0) == $0 ? $0 : "\($0) (as \(mapping.column($0)))" }
            let onlyAdded = Set(missing).isSubset(of: PostgresEnrollmentStore.addedColumns.map(\.name))
            let optional = missing.filter { EnrollmentTableMapping.optionalForReading.contains($0) }
            let readOnlyNote =
                optional.isEmpty
                ? ""
                : " \(optional.joined(separator: ", ")) \(optional.count == 1 ? "is" : "are") kkpush's own: a table without \(optional.count == 1 ? "it" : "them") can only be read (a diagnosis, a token check, an export, an audit); to write, add \(optional.count == 1 ? "it" : "them") (the PostgreSQL guide lists them)."
            throw KKPushError(
                code: mapping.isStandard ? .storeNotMigrated : .storeSchemaMismatch,
                message:
                    "The table \(mapping.tableName) in \(url.named)\(via) has no column \(names.joined(separator: ", ")).",
                fix: mapping.isStandard
                    ? (onlyAdded
                        ? "Migrate the database (backendMigrateCommand)\(url.databaseForFix): it adds \(missing.joined(separator: ", ")) to the table."
                        : optional.count == missing.count
                            ? "Reading (a diagnosis, a token check, an export, an audit) works without \(optional.count == 1 ? "it" : "them"); to write, the table's owner adds \(optional.count == 1 ? "it" : "them"): \(optional.map { "ALTER TABLE \(mapping.qualifiedTable) ADD COLUMN \(mapping.quoted($0)) \(EnrollmentTableMapping.addedColumnTypes[$0] ?? "text");" }.joined(separator: " ")) (the PostgreSQL guide lists them)."
                            : "Migrate the database (backendMigrateCommand)\(url.databaseForFix): an older table gets no new columns by itself (the PostgreSQL guide lists them).")
                    : "Map each to the table's column in the schema map's \"columns\" (kkpush name: their name)\(optional.isEmpty ? "" : ", or add \(optional.count == 1 ? "it" : "them"): \(optional.map { "ALTER TABLE \(mapping.qualifiedTable) ADD COLUMN \(mapping.quoted($0)) \(EnrollmentTableMapping.addedColumnTypes[$0] ?? "text")" }.joined(separator: "; "))").\(readOnlyNote)"
            )
        }
        var types: [String: PostgresColumnType] = [:]
        var wrong: [String] = []
        for logical in EnrollmentTableMapping.logicalColumns {
            guard let t = byName[mapping.column(logical)] else { continue }
            types[logical] = t
            if !accepts(logical, t) {
                wrong.append(
                    "\(mapping.column(logical)) is \(t.display), expected \(expectedDescription[logical] ?? "?")")
            }
        }
        if !wrong.isEmpty {
            throw KKPushError(
                code: .storeSchemaMismatch,
                message:
                    "The table \(mapping.tableName) in \(url.named)\(via) has columns of other types: \(wrong.joined(separator: "; ")).",
                fix: "Change the column types to the ones the PostgreSQL guide lists, or map other columns (schemaMap)."
            )
        }
        return PostgresTableShape(absent: Set(absent), types: types)
    }
}
