import AudioGateCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error answered to a client as `{"error":{"code","message"}}` with the fitting status.
///
/// Every failure a client can cause ends up here; this is the one place errors become responses.
public struct APIError: HTTPResponseError, ResponseError, Equatable {
    /// Machine-readable reasons; the raw value is the `code` clients see.
    public typealias Code = FailureReason

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var status: HTTPResponse.Status { code.status }

    public var reason: FailureReason { code }

    /// Answers a feature's error.
    public init(_ error: some ResponseError) {
        self.init(error.reason, error.message)
    }

    /// The JSON body.
    public var json: String { responseJSON }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if code == .unauthorized { headers[.wwwAuthenticate] = "Bearer realm=\"audiogate\"" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: json)))
    }
}

extension FailureReason {
    /// The HTTP status that goes with the reason.
    public var status: HTTPResponse.Status {
        switch self {
        case .badParameter, .badBody, .badRequest: .badRequest
        case .unauthorized: .unauthorized
        case .forbiddenOrigin: .forbidden
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .conflict: .conflict
        case .tooLarge: .contentTooLarge
        case .unsupportedMediaType: .unsupportedMediaType
        case .misdirectedRequest: .misdirectedRequest
        case .tooManyRequests, .tooManyMarks: .tooManyRequests
        case .unavailable, .deviceUnavailable, .tooManyDecoders, .tooManyConnections: .serviceUnavailable
        case .insufficientStorage: HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
        case .internalError: .internalServerError
        }
    }
}

extension APIError {
    /// Maps any error thrown while answering a request to an `APIError`.
    public init(mapping error: any Error) {
        switch error {
        case is CancellationError:
            // Requests are only cancelled by a graceful shutdown.
            self.init(.unavailable, "the server is shutting down")
        case let error as APIError:
            self = error
        case let error as any ResponseError:
            self.init(error.reason, error.message)
        case let error as HTTPError:
            let code = Code.allCases.first { $0.status == error.status && $0 != .deviceUnavailable } ?? .internalError
            self.init(code, error.body ?? error.status.reasonPhrase)
        case let error as any HTTPResponseError:
            let code = Code.allCases.first { $0.status == error.status } ?? .internalError
            self.init(code, error.status.reasonPhrase)
        default:
            self.init(.internalError, "internal error")
        }
    }
}
