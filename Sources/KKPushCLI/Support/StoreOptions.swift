import ArgumentParser

/// `--store` and `--schema-map`: the enrollment store a fleet command reads (`audit`, `token prune`), declared once.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "The enrollment store: an SQLite file or a postgres:// URL (default: $DATABASE_URL).")
    var store: String?

    @Option(
        name: .customLong("schema-map"),
        help: "With a postgres:// --store: a JSON file naming the table and mapping kkpush's column names to its own.")
    var schemaMap: String?
}
