import CAvahi
import Logging
import Synchronization

/// Publishes one DNS-SD service through the system's Avahi daemon (D-Bus) for as long as it
/// lives: waits for a daemon that is not running yet, publishes again after the daemon restarts,
/// and takes Avahi's alternative name when another host has the name.
///
/// Avahi's own thread (a threaded poll) runs every callback with the poll's lock held; the
/// handles below are only touched there or under that lock, which is what makes the
/// `@unchecked Sendable` safe. `state` is read from any thread through its mutex.
final class AvahiPublisher: @unchecked Sendable {
    /// Where publishing stands.
    enum State: Sendable, Equatable {
        /// No daemon to talk to (yet): publishing starts when one appears.
        case waitingForDaemon
        /// Sent to the daemon, not yet established on the network.
        case registering
        /// Announced under this name.
        case published(name: String)
        case failed(String)
    }

    struct Service: Sendable {
        var name: String
        /// `_sendspin._tcp`
        var type: String
        var port: UInt16
        /// `key=value` TXT entries.
        var txt: [String]
    }

    private let service: Service
    private let logger: Logger
    private let onChange: @Sendable (State) -> Void
    private let current = Mutex<State>(.waitingForDaemon)
    private var poll: OpaquePointer?
    private var client: OpaquePointer?
    private var group: OpaquePointer?
    /// The name in use: the service's, or Avahi's alternative after a collision (avahi_malloc'd).
    private var name: UnsafeMutablePointer<CChar>?

    /// Starts publishing; `onChange` hears each change of state on Avahi's thread.
    init(service: Service, logger: Logger, onChange: @escaping @Sendable (State) -> Void) throws(AvahiError) {
        self.service = service
        self.logger = logger
        self.onChange = onChange
        name = avahi_strdup(service.name)
        guard let poll = avahi_threaded_poll_new() else { throw AvahiError(call: "avahi_threaded_poll_new", code: Int32(AVAHI_ERR_NO_MEMORY)) }
        self.poll = poll
        // The client's first callbacks run inside avahi_client_new, before the thread starts.
        try connect()
        try avahiCheck("avahi_threaded_poll_start", avahi_threaded_poll_start(poll))
    }

    deinit {
        if let poll { avahi_threaded_poll_stop(poll) }
        // Freeing the client frees its entry group and withdraws the service.
        if let client { avahi_client_free(client) }
        if let poll { avahi_threaded_poll_free(poll) }
        avahi_free(name)
    }

    /// Where publishing stands now.
    var state: State { current.withLock { $0 } }

    private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private static func publisher(_ context: UnsafeMutableRawPointer?) -> AvahiPublisher? {
        context.map { Unmanaged<AvahiPublisher>.fromOpaque($0).takeUnretainedValue() }
    }

    private func connect() throws(AvahiError) {
        var error: Int32 = 0
        let made = avahi_client_new(
            avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL,
            { client, state, context in AvahiPublisher.publisher(context)?.clientChanged(client, state) }, context, &error)
        guard let made else { throw AvahiError(call: "avahi_client_new", code: error) }
        client = made
    }

    private func set(_ state: State) {
        let changed = current.withLock { current -> Bool in
            defer { current = state }
            return current != state
        }
        if changed { onChange(state) }
    }

    private func clientChanged(_ client: OpaquePointer?, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            publish(client)
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host name is being (re)registered: the service follows once it is running again.
            if let group { avahi_entry_group_reset(group) }
            set(.registering)
        case AVAHI_CLIENT_FAILURE:
            let error = AvahiError(call: "avahi_client", code: avahi_client_errno(client))
            group = nil
            guard error.isDisconnected else { return set(.failed(error.description)) }
            // The daemon went away: a new client waits for it to come back (AVAHI_CLIENT_NO_FAIL).
            if let client { avahi_client_free(client) }
            self.client = nil
            set(.waitingForDaemon)
            do {
                try connect()
            } catch {
                set(.failed(error.description))
            }
        case AVAHI_CLIENT_CONNECTING:
            set(.waitingForDaemon)
        default:
            break
        }
    }

    private func publish(_ client: OpaquePointer?) {
        do throws(AvahiError) {
            if group == nil {
                group = avahi_entry_group_new(
                    client, { group, state, context in AvahiPublisher.publisher(context)?.groupChanged(group, state) }, context)
                guard group != nil else { throw AvahiError(call: "avahi_entry_group_new", code: avahi_client_errno(client)) }
            }
            guard avahi_entry_group_is_empty(group) != 0 else { return }
            var txt: OpaquePointer? = nil
            for entry in service.txt { txt = OpaquePointer(avahi_string_list_add(UnsafeMutablePointer(txt), entry)) }
            defer { avahi_string_list_free(UnsafeMutablePointer(txt)) }
            let added = avahi_entry_group_add_service_strlst(
                group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0), name, service.type, nil, nil, service.port,
                UnsafeMutablePointer(txt))
            if added == AVAHI_ERR_COLLISION { return rename(client) }
            try avahiCheck("avahi_entry_group_add_service_strlst", added)
            try avahiCheck("avahi_entry_group_commit", avahi_entry_group_commit(group))
            set(.registering)
        } catch {
            set(.failed(error.description))
        }
    }

    private func groupChanged(_ group: OpaquePointer?, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            set(.published(name: name.map { String(cString: $0) } ?? service.name))
        case AVAHI_ENTRY_GROUP_COLLISION:
            rename(avahi_entry_group_get_client(group))
        case AVAHI_ENTRY_GROUP_FAILURE:
            set(.failed(AvahiError(call: "avahi_entry_group", code: avahi_client_errno(avahi_entry_group_get_client(group))).description))
        default:
            break
        }
    }

    /// Another service has the name: Avahi's next alternative ("name #2") is tried.
    private func rename(_ client: OpaquePointer?) {
        let alternative = avahi_alternative_service_name(name)
        avahi_free(name)
        name = alternative
        logger.info("mdns name taken: trying \(name.map { String(cString: $0) } ?? "?")")
        if let group { avahi_entry_group_reset(group) }
        publish(client)
    }
}
