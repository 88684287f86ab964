/// kkpush's own version.
package enum KKPushVersion {
    /// The version string, semantic versioning.
    package static let string = "0.2.0"
}
