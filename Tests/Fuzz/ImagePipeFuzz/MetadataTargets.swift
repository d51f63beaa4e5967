// Fuzz target for the EXIF reader and writer behind the metadata policies.
import Foundation
import ImagePipe
import ImagePipeVips

enum MetadataTargets {
    /// A source's EXIF block through ``ExifBlock``, then every policy's block written from it: the
    /// reading ends within its bounds, what is written fits one JPEG segment, reads back, and writes
    /// itself again; and no policy but `keep` lets a GPS tag, a serial number or a maker note through.
    static func exif(_ data: Data) {
        guard let block = ExifBlock(parsing: data) else { return }
        require(block.entries.count <= 4 * ExifBlock.maximumEntries, "\(block.entries.count) entries read")
        for policy in MetadataPolicy.allCases {
            let written = block.filtered(by: policy).serialized()
            require(written.count <= ExifBlock.maximumOutput, "a \(policy) block of \(written.count) bytes")
            guard let again = ExifBlock(parsing: written) else { fatalError("the \(policy) block written does not read back") }
            require(again.filtered(by: policy).serialized() == written, "the \(policy) block does not write itself again")
            require(
                again.entries.contains { $0.directory == .primary && $0.tag == 0x0112 && $0.value == (again.bigEndian ? [0, 1] : [1, 0]) },
                "the \(policy) block has no Orientation 1")
            guard policy != .keep else { continue }
            for entry in again.entries {
                require(entry.directory != .gps, "\(policy) kept GPS tag \(entry.tag)")
                require(![0xA431, 0xA435, 0x927C].contains(entry.tag), "\(policy) kept tag \(entry.tag)")
            }
        }
    }
}
