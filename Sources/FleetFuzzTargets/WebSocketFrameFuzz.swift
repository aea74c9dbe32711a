import FleetTransport

/// The WebSocket frame decoder over the same bytes in one piece and split at a point chosen by the input: the
/// data stream, the control frames and the error must not depend on where the bytes were split.
enum WebSocketFrameFuzz {
    enum Token: Equatable {
        case data([UInt8])
        case ping([UInt8])
        case pong([UInt8])
        case close(code: UInt16?, reason: String)
        case failed(WebSocketError)
    }

    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.first else { return }
        // A small limit reaches the "payload too long" path without megabyte inputs.
        let maximum: UInt64 = first & 1 == 0 ? 1 << 20 : 16
        let input = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        let whole = decode([input], maximum: maximum)
        let cut = input.isEmpty ? 0 : Int(first >> 1) % input.count
        let halves = decode([UnsafeRawBufferPointer(rebasing: input[..<cut]),
                             UnsafeRawBufferPointer(rebasing: input[cut...])], maximum: maximum)
        guard whole == halves else {
            preconditionFailure("one piece and split at \(cut) disagree: \(whole) vs \(halves)")
        }
        var single: [UnsafeRawBufferPointer] = []
        for index in input.indices { single.append(UnsafeRawBufferPointer(rebasing: input[index..<(index + 1)])) }
        let bytewise = decode(single, maximum: maximum)
        guard whole == bytewise else {
            preconditionFailure("one piece and byte by byte disagree: \(whole) vs \(bytewise)")
        }
    }

    /// Decodes the pieces in order; consecutive data is joined so the split does not show.
    static func decode(_ pieces: [UnsafeRawBufferPointer], maximum: UInt64) -> [Token] {
        var decoder = WebSocketFrameDecoder(maximumPayloadLength: maximum)
        var tokens: [Token] = []
        for piece in pieces {
            do {
                try decoder.decode(piece) { event in
                    switch event {
                    case .data(let chunk):
                        if case .data(let earlier) = tokens.last {
                            tokens[tokens.count - 1] = .data(earlier + Array(chunk))
                        } else {
                            tokens.append(.data(Array(chunk)))
                        }
                    case .ping(let payload): tokens.append(.ping(Array(payload)))
                    case .pong(let payload): tokens.append(.pong(Array(payload)))
                    case .close(let code, let reason): tokens.append(.close(code: code, reason: reason))
                    }
                }
            } catch {
                tokens.append(.failed(error))
                guard decoder.isFinished else { preconditionFailure("an error left the decoder unfinished") }
                return tokens
            }
        }
        return tokens
    }
}
