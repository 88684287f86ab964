internal import COpenSSL

/// OpenSSL's state when the process exits.
public enum OpenSSLExit {
    /// Tells OpenSSL not to free its process-wide state when the process exits (`OPENSSL_INIT_NO_ATEXIT`), and
    /// returns whether OpenSSL took it. Call it first in `main`, before anything uses OpenSSL (libcurl included): only
    /// OpenSSL's first initialisation decides.
    ///
    /// By default OpenSSL frees that state in an `atexit` handler. A thread that frees a key or a context while
    /// `exit` runs (a transfer thread that handed its answer over and is still ending) then works on freed state:
    /// `kkpush send --channel` once aborted at exit with "double free or corruption" while its transfer thread
    /// released its ES256 key. The system takes the memory back at exit either way.
    @discardableResult
    public static func keepStateUntilExit() -> Bool {
        OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
    }
}
