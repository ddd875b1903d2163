/// The body of `GET /v1/recordings`.
struct RecordingList: Encodable {
    struct Disk: Encodable {
        var usedBytes: Int
        var limitBytes: Int?
        var dataDir: String?
    }

    var recordings: [RecordingResource]
    var disk: Disk
}
