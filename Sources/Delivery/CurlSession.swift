import CCurl

/// What one HTTP request to the widget API came to.
enum HTTPResult: Sendable, Equatable {
    /// The server answered: its status, its `Retry-After` in seconds (nil when it sent none) and the
    /// start of its body (for the reason of a rejection).
    case response(status: Int, retryAfterSeconds: Double?, body: [UInt8])
    /// No answer. `requestSent` is false only when the request certainly never left (no connection,
    /// a failed TLS handshake): otherwise the server may have applied it.
    case failure(reason: String, requestSent: Bool)
}

/// libcurl's easy interface, one handle per widget, used only on that widget's delivery thread.
///
/// Keeping the handle keeps its connection: one TCP (and TLS) handshake per outage, not per push.
/// Redirects are not followed (a PUT with the token must not wander to another host), signals are
/// not used (the daemon has many threads), HTTP/1.1 is enough for one request at a time, and the
/// `abort` flag lets another thread end a transfer that would outlast the daemon's shutdown.
final class CurlSession {
    struct Options {
        var url: String
        /// Whole header lines besides Content-Type (`Authorization: Bearer …`, the configured extras).
        var headers: [String]
        var connectTimeoutSeconds: Double
        var timeoutSeconds: Double
        var caFile: String?
        var insecure: Bool
        /// Set from another thread: the transfer in progress (and every later one) ends at the next
        /// progress callback, which libcurl calls at least once a second.
        var abort: AbortFlag
    }

    private let curl: UnsafePointer<flowbridge_curl>
    private let abort: AbortFlag
    private let handle: UnsafeMutableRawPointer
    /// Header lists per Content-Type, built once: the token is formatted into a header line only here.
    private var headerLists: [String: UnsafeMutablePointer<curl_slist>] = [:]
    private let baseHeaders: [String]
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    /// The response body of the transfer in progress, up to `responseLimit` bytes.
    private var response: [UInt8] = []
    private static let responseLimit = 4096

    struct SetupError: Error, CustomStringConvertible {
        var description: String
    }

    init(_ options: Options) throws(SetupError) {
        let curl = try CurlLibrary.shared.get().functions
        guard let handle = curl.pointee.easy_init() else { throw SetupError(description: "libcurl cannot make a handle") }
        self.curl = curl
        self.handle = handle
        abort = options.abort
        baseHeaders = options.headers + ["Expect:"]  // no 100-continue round trip before a small body
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        let context = Unmanaged.passUnretained(self).toOpaque()
        var failed: [String] = []
        func set(_ name: String, _ code: CURLcode) { if code != CURLE_OK { failed.append(name) } }
        func set(_ name: String, _ option: CURLoption, _ value: Int) { set(name, flowbridge_curl_set_long(curl, handle, option, value)) }
        func set(_ name: String, _ option: CURLoption, _ value: String) { set(name, flowbridge_curl_set_string(curl, handle, option, value)) }
        func set(_ name: String, _ option: CURLoption, _ value: UnsafeMutableRawPointer) {
            set(name, flowbridge_curl_set_pointer(curl, handle, option, value))
        }
        set("URL", CURLOPT_URL, options.url)
        set("ERRORBUFFER", CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer))
        set("NOSIGNAL", CURLOPT_NOSIGNAL, 1)
        set("FOLLOWLOCATION", CURLOPT_FOLLOWLOCATION, 0)
        set("HTTP_VERSION", CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        set("USERAGENT", CURLOPT_USERAGENT, "flowbridge")
        set("CONNECTTIMEOUT_MS", CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(options.connectTimeoutSeconds))
        set("TIMEOUT_MS", CURLOPT_TIMEOUT_MS, Self.milliseconds(options.timeoutSeconds))
        set("WRITEFUNCTION", flowbridge_curl_set_write(curl, handle) { data, size, count, context in
            guard let context else { return 0 }
            let session = Unmanaged<CurlSession>.fromOpaque(context).takeUnretainedValue()
            let bytes = size * count
            if let data, session.response.count < CurlSession.responseLimit {
                let taken = min(bytes, CurlSession.responseLimit - session.response.count)
                data.withMemoryRebound(to: UInt8.self, capacity: taken) {
                    session.response.append(contentsOf: UnsafeBufferPointer(start: $0, count: taken))
                }
            }
            return bytes
        })
        set("WRITEDATA", CURLOPT_WRITEDATA, context)
        set("XFERINFOFUNCTION", flowbridge_curl_set_progress(curl, handle) { context, _, _, _, _ in
            guard let context else { return 0 }
            return Unmanaged<CurlSession>.fromOpaque(context).takeUnretainedValue().abort.isSet ? 1 : 0
        })
        set("XFERINFODATA", CURLOPT_XFERINFODATA, context)
        set("NOPROGRESS", CURLOPT_NOPROGRESS, 0)
        if let caFile = options.caFile {
            set("CAINFO", CURLOPT_CAINFO, caFile)
        } else {
            // The system's CAs by hashed lookup, one certificate when needed, rather than the whole
            // bundle file libcurl reads by default (0.8 MB less for every connection's store).
            set("CAINFO", flowbridge_curl_set_pointer(curl, handle, CURLOPT_CAINFO, nil))
            set("CAPATH", CURLOPT_CAPATH, Self.systemCAPath)
        }
        if options.insecure {
            set("SSL_VERIFYPEER", CURLOPT_SSL_VERIFYPEER, 0)
            set("SSL_VERIFYHOST", CURLOPT_SSL_VERIFYHOST, 0)
        }
        if !failed.isEmpty {  // deinit frees the handle
            throw SetupError(description: "libcurl refuses the options \(failed.joined(separator: ", "))")
        }
    }

    deinit {
        curl.pointee.easy_cleanup(handle)
        for list in headerLists.values { curl.pointee.slist_free_all(list) }
        errorBuffer.deallocate()
    }

    /// Sends one request and waits for its answer (at most the configured timeout).
    func perform(method: HTTPMethod, contentType: String, body: [UInt8]) -> HTTPResult {
        if abort.isSet { return .failure(reason: "stopped", requestSent: false) }
        response.removeAll(keepingCapacity: true)
        errorBuffer[0] = 0
        flowbridge_curl_set_string(curl, handle, CURLOPT_CUSTOMREQUEST, method.rawValue)
        flowbridge_curl_set_pointer(curl, handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headers(contentType: contentType)))
        flowbridge_curl_set_long(curl, handle, CURLOPT_POSTFIELDSIZE, body.count)
        _ = body.withUnsafeBytes { bytes in  // copied by libcurl
            flowbridge_curl_set_pointer(curl, handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
        }
        let code = curl.pointee.easy_perform(handle)
        guard code == CURLE_OK else {
            let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer)
                : curl.pointee.easy_strerror(code).map { String(cString: $0) } ?? "libcurl error \(code.rawValue)"
            return .failure(reason: detail, requestSent: requestMayHaveLeft(code))
        }
        var status = 0
        flowbridge_curl_get_long(curl, handle, CURLINFO_RESPONSE_CODE, &status)
        var retryAfter: curl_off_t = 0
        flowbridge_curl_get_off(curl, handle, CURLINFO_RETRY_AFTER, &retryAfter)
        return .response(status: status, retryAfterSeconds: retryAfter > 0 ? Double(retryAfter) : nil, body: response)
    }

    /// Whether a failed transfer may have delivered its request: only a failure to connect (or
    /// to agree on TLS) proves that it did not.
    private func requestMayHaveLeft(_ code: CURLcode) -> Bool {
        let beforeSending: Set<UInt32> = [
            CURLE_UNSUPPORTED_PROTOCOL.rawValue, CURLE_URL_MALFORMAT.rawValue, CURLE_COULDNT_RESOLVE_PROXY.rawValue,
            CURLE_COULDNT_RESOLVE_HOST.rawValue, CURLE_COULDNT_CONNECT.rawValue, CURLE_SSL_CONNECT_ERROR.rawValue,
            CURLE_PEER_FAILED_VERIFICATION.rawValue, CURLE_SSL_CERTPROBLEM.rawValue, CURLE_SSL_CIPHER.rawValue,
            CURLE_SSL_CACERT_BADFILE.rawValue, CURLE_SSL_ENGINE_NOTFOUND.rawValue, CURLE_OUT_OF_MEMORY.rawValue,
        ]
        if beforeSending.contains(code.rawValue) { return false }
        // A timeout or an abort before the connection was up sent nothing either.
        var sentBytes = 0
        flowbridge_curl_get_long(curl, handle, CURLINFO_REQUEST_SIZE, &sentBytes)
        var pretransfer: curl_off_t = 0
        flowbridge_curl_get_off(curl, handle, CURLINFO_PRETRANSFER_TIME_T, &pretransfer)
        if code == CURLE_OPERATION_TIMEDOUT || code == CURLE_ABORTED_BY_CALLBACK {
            return sentBytes > 0 || pretransfer > 0
        }
        return true
    }

    private func headers(contentType: String) -> UnsafeMutablePointer<curl_slist>? {
        if let list = headerLists[contentType] { return list }
        var list: UnsafeMutablePointer<curl_slist>?
        for line in baseHeaders + ["Content-Type: \(contentType)"] {
            list = curl.pointee.slist_append(list, line)
        }
        headerLists[contentType] = list
        return list
    }

    /// Where Debian keeps the system's trusted CA certificates, hashed for OpenSSL (as for the broker).
    static let systemCAPath = "/etc/ssl/certs"

    private static func milliseconds(_ seconds: Double) -> Int { max(1, Int((seconds * 1000).rounded())) }
}

/// libcurl, loaded and initialized once per process, when the first session needs it (see shim.h).
///
/// `@unchecked Sendable`: the table of functions is written once, before `shared` is published,
/// and only read after.
final class CurlLibrary: @unchecked Sendable {
    let functions: UnsafePointer<flowbridge_curl>

    private init(_ functions: UnsafePointer<flowbridge_curl>) { self.functions = functions }

    /// `curl_global_init`'s flags make no difference on Linux since libcurl 7.57: TLS (OpenSSL) is
    /// always initialized, and that is most of its cost; `flowbridge_curl_load` initializes OpenSSL
    /// first, without what the daemon does not use (shim.h).
    static let shared: Result<CurlLibrary, CurlSession.SetupError> = {
        let functions = UnsafeMutablePointer<flowbridge_curl>.allocate(capacity: 1)  // for the process's life
        functions.initialize(to: flowbridge_curl())
        if let error = flowbridge_curl_load(functions) {
            return .failure(CurlSession.SetupError(description: "libcurl cannot be loaded (\(String(cString: error))); install libcurl4"))
        }
        let code = functions.pointee.global_init(Int(CURL_GLOBAL_DEFAULT))
        guard code == CURLE_OK else {
            let reason = functions.pointee.easy_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
            return .failure(CurlSession.SetupError(description: "libcurl does not initialize: \(reason)"))
        }
        return .success(CurlLibrary(functions))
    }()
}
