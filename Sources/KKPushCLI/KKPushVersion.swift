/// kkpush's own version.
public enum KKPushVersion {
    /// The version string, semantic versioning.
    public static let string = "0.1.0"
}
