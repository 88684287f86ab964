import Foundation

/// The proxy settings libcurl would read from the environment for an `https://` URL, read once when a
/// client starts and handed to libcurl as options.
///
/// Left to itself, libcurl 7.88 reads `no_proxy`/`NO_PROXY`, then `https_proxy`, `HTTPS_PROXY`, `all_proxy`
/// and `ALL_PROXY` with `getenv` for every transfer (six lookups a push, about 1 % of a push's
/// instructions). With `CURLOPT_PROXY` and `CURLOPT_NOPROXY` both set it reads none; the values below are
/// the ones it would have found, in its own order, so the behaviour is the same:
/// - the proxy: the first of `https_proxy`, `HTTPS_PROXY`, `all_proxy`, `ALL_PROXY` that is set (an empty
///   value means no proxy, and stops the search, as in libcurl); none set: no proxy (`""`);
/// - the hosts that bypass it: `no_proxy`, else `NO_PROXY`, else none (`""`). They apply to a proxy given
///   with `--proxy` too, as they did when libcurl read them.
struct EnvironmentProxy: Equatable {
    /// `CURLOPT_PROXY`'s value when no proxy is configured: `""` for none.
    var proxy: String
    /// `CURLOPT_NOPROXY`'s value: `""` for none.
    var noProxy: String

    init(proxy: String, noProxy: String) {
        self.proxy = proxy
        self.noProxy = noProxy
    }

    /// Reads the variables through `lookup` (`getenv` by default).
    init(lookup: (String) -> String? = { name in getenv(name).map { String(cString: $0) } }) {
        proxy = ""
        for name in ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
            if let value = lookup(name) {
                proxy = value
                break
            }
        }
        noProxy = lookup("no_proxy") ?? lookup("NO_PROXY") ?? ""
    }
}
