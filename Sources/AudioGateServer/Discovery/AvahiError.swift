import CAvahi

/// A failed Avahi call: its name, Avahi's error number and text.
struct AvahiError: Error, Sendable, Equatable, CustomStringConvertible {
    let call: String
    let code: Int32
    let message: String

    init(call: String, code: Int32) {
        self.call = call
        self.code = code
        message = String(cString: avahi_strerror(code))
    }

    var description: String { "\(call): \(message)" }

    /// The daemon went away (or was never there): the client waits for it to come back.
    var isDisconnected: Bool { code == Int32(AVAHI_ERR_DISCONNECTED) }
}

/// The one place an Avahi return value is checked: negative becomes an `AvahiError`.
@discardableResult
func avahiCheck(_ call: String, _ result: Int32) throws(AvahiError) -> Int32 {
    if result < 0 { throw AvahiError(call: call, code: result) }
    return result
}
