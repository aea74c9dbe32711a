import CZlib

/// zlib-wrapped deflate (RFC 1950/1951), as HdrHistogram's compressed encodings use it (Java's `Deflater`,
/// Python's `zlib.compress`).
enum Zlib {
    /// Compresses `input` into one complete zlib stream.
    static func compress(_ input: [UInt8], level: Int32 = Z_DEFAULT_COMPRESSION) throws(HistogramEncodingError)
        -> [UInt8]
    {
        var stream = z_stream()
        guard fb_deflateInit(&stream, level) == Z_OK else { throw .compression("deflateInit failed") }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))))
        let status: Int32 = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                stream.avail_in = UInt32(source.count)
                stream.next_out = destination.baseAddress
                stream.avail_out = UInt32(destination.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw .compression("deflate returned \(status)") }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// Inflates one zlib stream, refusing output beyond `limit` bytes (a hostile input could otherwise claim
    /// gigabytes).
    static func decompress(_ input: ArraySlice<UInt8>, limit: Int) throws(HistogramDecodingError) -> [UInt8] {
        var stream = z_stream()
        guard fb_inflateInit(&stream) == Z_OK else { throw .corrupt("inflateInit failed") }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let input = Array(input)
        var status: Int32 = Z_OK
        try input.withUnsafeBufferPointer { (source) throws(HistogramDecodingError) in
            stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
            stream.avail_in = UInt32(source.count)
            repeat {
                let produced: Int = chunk.withUnsafeMutableBufferPointer { destination in
                    stream.next_out = destination.baseAddress
                    stream.avail_out = UInt32(destination.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return destination.count - Int(stream.avail_out)
                }
                guard status == Z_OK || status == Z_STREAM_END else {
                    throw .corrupt("zlib inflate failed (status \(status))")
                }
                output.append(contentsOf: chunk[0..<produced])
                guard output.count <= limit else {
                    throw .corrupt("decompressed histogram exceeds \(limit) bytes")
                }
                if status == Z_OK, produced == 0, stream.avail_in == 0 {
                    throw .corrupt("compressed histogram is truncated")
                }
            } while status != Z_STREAM_END
        }
        return output
    }
}
