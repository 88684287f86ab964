import Foundation
import KKPushCore
import KKPushSystem
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

    /// The errors APNs would answer this push with wherever it is replayed: its header values (`apns-priority`,
    /// `apns-push-type`, `apns-collapse-id`) and its payload (empty, not a JSON object, over the push type's limit),
    /// by the rules the client's pre-flight and the mock apply (``APNsRequestRules``). The topic is only required
    /// here: its suffix rule is judged where the push goes (a device takes `<bundle id>.push-type.liveactivity`, a
    /// channel the bundle id), so a push saved for a channel is not refused for the topic a device would need.
    var errors: [Problem] {
        let request = NotificationRequest(
            deviceToken: "", topic: topic, pushType: push_type.flatMap { $0.isEmpty ? nil : PushType($0) },
            priority: priority, collapseID: collapse_id.flatMap { $0.isEmpty ? nil : $0 },
            payload: Array(payload.utf8))
        return APNsRequestRules.check(request, authentication: .token, judging: [.payload]).errors
    }
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
            let bytes: [UInt8]
            do {
                // A missing, unreadable or empty file, or a folder, each said in the system's words.
                bytes = try InputFile.read(
                    file, what: "saved pushes file", label: "(savedPushesFile)", maximumSize: 64 << 20)
            } catch {
                throw KKPushError(
                    code: .adminSavedPushesFile,
                    message: (error as? KKPushError)?.message ?? ErrorWords.describe(error),
                    fix: "Give a file the console wrote ({\"saved_pushes\":[...]}), or a new path.")
            }
            do {
                struct Stored: Decodable { var saved_pushes: [SavedPush] }
                for push in try JSONDecoder().decode(Stored.self, from: Data(bytes)).saved_pushes {
                    loaded[push.name] = push
                }
            } catch {
                throw KKPushError(
                    code: .adminSavedPushesFile,
                    message:
                        "The saved pushes file (savedPushesFile) \(file) is not one the console wrote: \(ErrorWords.describe(error)).",
                    fix: "Give a file the console wrote ({\"saved_pushes\":[...]}), or a new path.")
            }
        }
        pushes = Mutex(loaded)
    }

    /// Every saved push, by name.
    var all: [SavedPush] { pushes.withLock { $0.values.sorted { $0.name < $1.name } } }

    func named(_ name: String) -> SavedPush? { pushes.withLock { $0[name] } }

    /// Saves (or replaces) `push`; false if the store is full. A change is kept only once the file holds it: when
    /// the write fails, the saved pushes stay as they were (and as the file has them) and the error is thrown.
    func save(_ push: SavedPush) throws(KKPushError) -> Bool {
        try change { map in
            guard map[push.name] != nil || map.count < SavedPush.capacity else { return false }
            map[push.name] = push
            return true
        }
    }

    /// Removes the push `name`; false if there was none. As ``save(_:)``, kept only once the file holds it.
    func remove(_ name: String) throws(KKPushError) -> Bool {
        try change { map in map.removeValue(forKey: name) != nil }
    }

    /// Applies `edit` to a copy of the saved pushes, writes the copy (when `edit` changed something) and only then
    /// puts it in place. Under the lock, so two changes are written in the order they are made (a slower write of
    /// an older set never lands over a newer one).
    private func change(_ edit: (inout [String: SavedPush]) -> Bool) throws(KKPushError) -> Bool {
        try pushes.withLock { (map: inout [String: SavedPush]) throws(KKPushError) -> Bool in
            var changed = map
            guard edit(&changed) else { return false }
            try write(changed.values.sorted { $0.name < $1.name })
            map = changed
            return true
        }
    }

    private func write(_ snapshot: [SavedPush]) throws(KKPushError) {
        guard let file else { return }
        struct Stored: Encodable { var saved_pushes: [SavedPush] }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        // Encoding plain strings and numbers cannot fail.
        let bytes = (try? Array(encoder.encode(Stored(saved_pushes: snapshot)))) ?? []
        do {
            try AtomicFile.write(bytes, to: file)
        } catch {
            // Read over the admin API (the console), where no flag names it: the file by its path.
            throw KKPushError(
                code: .adminSavedPushesFile,
                message: "The mock's saved pushes file \(file) cannot be written: \(error.text).",
                fix:
                    "Nothing was saved or deleted. Free space, or make the file's folder writable for the mock, then try again."
            )
        }
    }
}
