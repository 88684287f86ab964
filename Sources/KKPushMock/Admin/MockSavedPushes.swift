import Foundation
import KKPushCore
import Synchronization

/// A push the web console saved under a name, to replay to a device or a channel.
struct SavedPush: Sendable, Hashable, Codable {
    /// The name it is saved under (1 to 64 characters).
    var name: String
    /// `apns-topic` (for a channel: the bundle id, its push-type suffix dropped when replayed).
    var topic: String
    /// `apns-push-type` (nil: alert).
    var push_type: String?
    /// `apns-priority` (nil: 10, or 5 for background).
    var priority: Int?
    /// `apns-collapse-id`, if any.
    var collapse_id: String?
    /// The payload's JSON text.
    var payload: String

    static let shape = JSONInput.Shape.fields(["name", "topic", "push_type", "priority", "collapse_id", "payload"])
    static let maximumNameLength = 64
    /// At most this many saved pushes (the file and the console's list stay small).
    static let capacity = 500
}

/// The web console's saved pushes: kept for the server's life, and in a file when the server has one
/// (``MockServerConfiguration/savedPushesFile``), written whole (a temporary file, then a rename) on every change.
final class MockSavedPushes: Sendable {
    private let pushes: Mutex<[String: SavedPush]>
    let file: String?

    /// Reads `file` if it exists (`{"saved_pushes":[...]}`); throws `admin-saved-pushes-file` if it cannot be read.
    init(file: String?) throws(KKPushError) {
        self.file = file
        var loaded: [String: SavedPush] = [:]
        if let file, FileManager.default.fileExists(atPath: file) {
            do {
                struct Stored: Decodable { var saved_pushes: [SavedPush] }
                let data = try Data(contentsOf: URL(fileURLWithPath: file))
                for push in try JSONDecoder().decode(Stored.self, from: data).saved_pushes { loaded[push.name] = push }
            } catch {
                throw KKPushError(
                    code: .adminSavedPushesFile,
                    message:
                        "The saved pushes file \(file) (savedPushesFile) cannot be read: \(ErrorWords.describe(error)).",
                    fix: "Give a file the console wrote ({\"saved_pushes\":[...]}), or a new path.")
            }
        }
        pushes = Mutex(loaded)
    }

    /// Every saved push, by name.
    var all: [SavedPush] { pushes.withLock { $0.values.sorted { $0.name < $1.name } } }

    func named(_ name: String) -> SavedPush? { pushes.withLock { $0[name] } }

    /// Saves (or replaces) `push`; false if the store is full.
    func save(_ push: SavedPush) throws(KKPushError) -> Bool {
        let snapshot: [SavedPush]? = pushes.withLock { map in
            guard map[push.name] != nil || map.count < SavedPush.capacity else { return nil }
            map[push.name] = push
            return map.values.sorted { $0.name < $1.name }
        }
        guard let snapshot else { return false }
        try write(snapshot)
        return true
    }

    /// Removes the push `name`; false if there was none.
    func remove(_ name: String) throws(KKPushError) -> Bool {
        let snapshot: [SavedPush]? = pushes.withLock { map in
            guard map.removeValue(forKey: name) != nil else { return nil }
            return map.values.sorted { $0.name < $1.name }
        }
        guard let snapshot else { return false }
        try write(snapshot)
        return true
    }

    private func write(_ snapshot: [SavedPush]) throws(KKPushError) {
        guard let file else { return }
        struct Stored: Encodable { var saved_pushes: [SavedPush] }
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            try encoder.encode(Stored(saved_pushes: snapshot)).write(to: URL(fileURLWithPath: file), options: .atomic)
        } catch {
            throw KKPushError(
                code: .adminSavedPushesFile,
                message:
                    "The saved pushes file \(file) (savedPushesFile) cannot be written: \(ErrorWords.describe(error)).",
                fix: "Give the mock a saved pushes file in a writable folder.")
        }
    }
}
