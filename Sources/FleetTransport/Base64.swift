/// RFC 4648 §4 base64 with padding: the Sec-WebSocket-Key and Sec-WebSocket-Accept encoding. Tiny and pure, so the
/// WebSocket handshake needs no Foundation.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= input.count {
            let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            output.append(alphabet[Int(group >> 6 & 63)])
            output.append(alphabet[Int(group & 63)])
            index += 3
        }
        let rest = input.count - index
        if rest == 1 {
            let group = UInt32(input[index]) << 16
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            output.append(UInt8(ascii: "="))
            output.append(UInt8(ascii: "="))
        } else if rest == 2 {
            let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(alphabet[Int(group >> 18 & 63)])
            output.append(alphabet[Int(group >> 12 & 63)])
            output.append(alphabet[Int(group >> 6 & 63)])
            output.append(UInt8(ascii: "="))
        }
        return String(decoding: output, as: UTF8.self)
    }
}
