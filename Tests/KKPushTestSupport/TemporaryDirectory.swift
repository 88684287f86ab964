public import Foundation

/// A fresh directory under the system's temporary directory, named `<prefix>-<UUID>`; the caller
/// removes it (or leaves it for the system to clean).
public func makeTemporaryDirectory(prefix: String = "kkpush") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Runs `body` with the path of a fresh temporary directory, and removes the directory afterwards.
public func withTemporaryDirectory<R>(prefix: String = "kkpush", _ body: (String) throws -> R) throws -> R {
    let url = try makeTemporaryDirectory(prefix: prefix)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url.path)
}

/// Runs async `body` with the path of a fresh temporary directory, and removes the directory afterwards.
public func withTemporaryDirectory<R>(prefix: String = "kkpush", _ body: (String) async throws -> R) async throws -> R {
    let url = try makeTemporaryDirectory(prefix: prefix)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url.path)
}
