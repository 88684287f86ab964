/// Whether an `apns-topic` is covered by a bundle id: the one rule of a scope of bundle ids, shared by a
/// credentials file's `topics` (routing and `jwt scope`), the mock's topic-specific keys and its device registry, and
/// `diagnose`'s key findings.
///
/// A bundle id covers itself and itself followed by one of the push-type suffixes Apple documents
/// (``PushType/knownTopicSuffixes``: `.voip`, `.complication`, `.pushkit.fileprovider`, `.push-type.liveactivity`,
/// `.location-query`, `.voip-ptt`, `.push-type.widgets`, `.push-type.controls`): those topics are the same app's.
/// Any other `<bundle id>.X` is not covered: `nl.kantinekoning.app.widget` is an extension's own bundle id, another
/// app to APNs, which a key scoped to `nl.kantinekoning.app` does not serve. An empty topic (or bundle id) is never
/// covered: a push without a topic has none to be in a scope.
public enum TopicScope {
    /// True if `topic` is `bundleID`, or `bundleID` plus a documented push-type suffix. Exact bytes: no case folding,
    /// as a topic is compared everywhere else.
    public static func covers(bundleID: String, topic: String) -> Bool {
        let t = topic.utf8
        let b = bundleID.utf8
        guard !b.isEmpty, t.count >= b.count, t.starts(with: b) else { return false }
        if t.count == b.count { return true }
        let rest = t.dropFirst(b.count)
        return PushType.knownTopicSuffixes.contains { rest.elementsEqual($0.suffix.utf8) }
    }

    /// True if one of `bundleIDs` covers `topic` (``covers(bundleID:topic:)``); false for an empty list, which
    /// callers that read it as "any topic" check first.
    public static func covers(anyOf bundleIDs: some Sequence<String>, topic: String) -> Bool {
        bundleIDs.contains { covers(bundleID: $0, topic: topic) }
    }
}
