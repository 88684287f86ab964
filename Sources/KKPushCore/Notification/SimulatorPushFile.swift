/// A push written as an Xcode Simulator `.apns` file: what `xcrun simctl push` and a file dropped on a Simulator
/// window deliver to an app.
///
/// The file is a JSON object: `Simulator Target Bundle` (the app's bundle id: the topic without a push type's
/// suffix such as `.voip` or `.push-type.liveactivity`) first, then the payload's own bytes after its `{`, exactly as
/// sent (key order, spelling and white space as they are: re-encoding would reorder `aps`'s keys), so that
/// ``PayloadFile/read(_:fileName:)`` gives back the very payload, and ``PayloadFile/topic(for:)`` the topic with its
/// suffix. `simctl push --help` says the file must hold an object at
/// the top level, an `aps` key, and be 4096 bytes or less, and that only application remote notifications are
/// delivered (not VoIP, complication, File Provider and other types); ``make(payload:topic:pushType:)`` checks the
/// first three (an error each) and warns about the last. ``PayloadFile/read(_:fileName:)`` reads the file back.
public enum SimulatorPushFile {
    /// The largest file `simctl push` takes, in bytes (its help: "Be 4096 bytes or less").
    public static let sizeLimit = 4096

    /// The push types a `.apns` file delivers: application remote notifications (alert and background), the only
    /// ones `simctl push --help` names. Whether a Live Activity payload dropped on a Simulator updates the activity is
    /// not documented (reports differ); a Simulator on Apple silicon gets Live Activity pushes through sandbox APNs.
    public static let deliveredPushTypes: Set<PushType> = [.alert, .background]

    /// A written file: its bytes and what writing noticed.
    public struct Written: Sendable, Equatable {
        /// The file's bytes: `Simulator Target Bundle` first, then the payload's members as they were sent.
        public var bytes: [UInt8]
        /// The bundle id written as `Simulator Target Bundle`.
        public var bundleID: String
        /// `simulator-push-type` (warning): a push type the Simulator does not deliver.
        public var problems: [Problem]
    }

    /// The `.apns` file of a push: `payload` as sent, to `topic` (the `apns-topic`), of `pushType` (nil: the
    /// payload's own). Throws `simulator-file-not-object`, `simulator-file-no-aps` or `simulator-file-too-large`
    /// naming what is wrong.
    public static func make(payload: [UInt8], topic: String, pushType: PushType? = nil) throws(KKPushError)
        -> Written
    {
        let parsed: Payload
        do {
            parsed = try Payload(parsing: payload)
        } catch {
            throw KKPushError(
                code: .simulatorFileNotObject,
                message: "The push's payload is not a JSON object, so no .apns file can hold it: \(error.message)",
                fix: "Give a payload that is a JSON object with an aps key.")
        }
        guard parsed.aps != nil else {
            throw KKPushError(
                code: .simulatorFileNoAPS,
                message: "The push's payload has no aps key; simctl push refuses a file without one.",
                fix: "Add an aps object (an empty one, {\"aps\":{}}, is enough for a push with custom keys only).")
        }
        let type = pushType ?? PushType.implied(byTopic: topic) ?? parsed.suggestedPushType
        let bundleID = bundleID(fromTopic: topic)
        var problems: [Problem] = []
        var body = payload
        if parsed.custom(PayloadFile.simulatorTargetBundleKey) != nil,
            let without = PayloadFile.removingMember(PayloadFile.simulatorTargetBundleKey, from: payload)
        {
            // The file's own key names the target app; the payload's is left out (simctl would read either).
            body = without
            problems.append(
                Problem(
                    .warning, code: .simulatorTargetBundleReplaced,
                    message:
                        "The payload has a top-level 'Simulator Target Bundle' of its own, which the .apns file cannot hold beside the target app's: it is left out of the file, whose payload is that much shorter than the one sent.",
                    fix: "Rename that key in the payload, or leave it out."))
        }
        // The payload's bytes after its `{` follow the target bundle's member: the payload exactly as sent. It has
        // at least one member (aps), so a comma separates them.
        guard let open = body.firstIndex(of: UInt8(ascii: "{")) else {
            throw KKPushError(
                code: .simulatorFileNotObject,
                message: "The push's payload is not a JSON object, so no .apns file can hold it.",
                fix: "Give a payload that is a JSON object with an aps key.")
        }
        var out = Array(body[...open])
        JSONValue.writeString(PayloadFile.simulatorTargetBundleKey, to: &out)
        out.append(UInt8(ascii: ":"))
        JSONValue.writeString(bundleID, to: &out)
        out.append(UInt8(ascii: ","))
        out += body[(open + 1)...]
        guard out.count <= sizeLimit else {
            throw KKPushError(
                code: .simulatorFileTooLarge,
                message:
                    "The .apns file of this push would be \(out.count) bytes; simctl push takes at most \(sizeLimit) (the payload is \(body.count) bytes, the Simulator Target Bundle the rest).",
                fix: "Shorten the payload by \(out.count - sizeLimit) bytes to test it on a Simulator.")
        }
        if !deliveredPushTypes.contains(type) {
            problems.append(
                Problem(
                    .warning, code: .simulatorPushType,
                    message:
                        "A \(type) push is written, but simctl push delivers only application remote notifications (alert and background; VoIP, complication, File Provider and other types are not supported).",
                    fix:
                        "Send \(type) pushes through sandbox APNs to a device (or, on Apple silicon, a Simulator's own token); the file still shows the payload it would get."
                ))
        }
        return Written(bytes: out, bundleID: bundleID, problems: problems)
    }

    /// The bundle id in a topic: the topic without the longest known push-type suffix it ends with.
    public static func bundleID(fromTopic topic: String) -> String {
        guard let type = PushType.implied(byTopic: topic) else { return topic }
        return type.bundleID(fromTopic: topic)
    }
}
