public import KKPushCore

// The error codes only KKPushActivities throws, one per line: `kkpush … --json` prints them as {"error": {"code": …}}.
// Codes more than one module throws are in KKPushCore (`KKPushError+Codes.swift`).

extension KKPushError.Code {
    /// `activity-key-invalid` (KKPushActivities): an activity key that is empty, longer than 200 characters or not
    /// printable ASCII.
    public static let activityKeyInvalid = Self("activity-key-invalid", kind: .usage)
    /// `activity-exists` (KKPushActivities): a start for a key that already has an activity, where the caller asked
    /// for a refusal rather than the existing activity.
    public static let activityExists = Self("activity-exists", kind: .verdict)
    /// `activity-unknown` (KKPushActivities): an update, end or inspection of a key the registry does not know.
    public static let activityUnknown = Self("activity-unknown", kind: .input)
    /// `activity-no-update-token` (KKPushActivities): an update or end of an activity whose update token has not
    /// come back (still `requested`, or `stale`).
    public static let activityNoUpdateToken = Self("activity-no-update-token", kind: .verdict)
    /// `activity-ended` (KKPushActivities): an update or end of an activity that ended or was dismissed.
    public static let activityEnded = Self("activity-ended", kind: .verdict)
    /// `activity-start-budget` (KKPushActivities): a start past the device's start budget, refused as asked.
    public static let activityStartBudget = Self("activity-start-budget", kind: .verdict)
    /// `activity-no-push-to-start-token` (KKPushActivities): a start for a device and attributes type without a
    /// usable push-to-start token (none reported, or APNs said it is dead).
    public static let activityNoPushToStartToken = Self("activity-no-push-to-start-token", kind: .input)
    /// `activity-topic-missing` (KKPushActivities): an activity the app started itself, reported without the app's
    /// bundle id (topic) to record it under; or an update or end of an activity stored without a topic (by an older
    /// kkpush), which would go to the apns-topic `.push-type.liveactivity` APNs refuses. A verdict, as the other
    /// refusals of a known activity's update or end (`activity-no-update-token`, `activity-ended`): exit 1.
    public static let activityTopicMissing = Self("activity-topic-missing", kind: .verdict)
    /// `activity-input-invalid` (KKPushActivities): a start, update or end whose payload input cannot be built
    /// (attributes not a JSON object, an empty attributes type, a bad token).
    public static let activityInputInvalid = Self("activity-input-invalid", kind: .usage)
    /// `activity-settings-invalid` (KKPushActivities): a start budget or stale timeout out of range.
    public static let activitySettingsInvalid = Self("activity-settings-invalid", kind: .usage)
    /// `activity-registry-newer` (KKPushActivities): the registry's database was migrated by a newer kkpush.
    public static let activityRegistryNewer = Self("activity-registry-newer", kind: .input)
    /// `activity-registry-not-migrated` (KKPushActivities): the registry's tables are missing.
    public static let activityRegistryNotMigrated = Self("activity-registry-not-migrated", kind: .input)
    /// `activity-registry-failed` (KKPushActivities): a query of the registry's database failed.
    public static let activityRegistryFailed = Self("activity-registry-failed", kind: .failed)
    /// `activity-registry-closed` (KKPushActivities): a call after ``ActivityRegistry/close()``.
    public static let activityRegistryClosed = Self("activity-registry-closed", kind: .usage)
}
