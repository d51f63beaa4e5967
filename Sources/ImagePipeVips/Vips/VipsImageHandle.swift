// Ownership of a libvips image reference: released exactly once when the handle goes away.
package import CVipsShim
package import ImagePipe

/// One reference to a `VipsImage`, released on deinit. Used within a single compression call.
package final class VipsImageHandle {
    package let pointer: UnsafeMutablePointer<VipsImage>

    package init(_ pointer: UnsafeMutablePointer<VipsImage>) {
        self.pointer = pointer
    }

    deinit { ipv_unref(pointer) }

    package var size: PixelSize { PixelSize(width: Int(pointer.pointee.Xsize), height: Int(pointer.pointee.Ysize)) }
    var hasAlpha: Bool { vips_image_hasalpha(pointer) != 0 }

    package func int(_ name: String) -> Int? {
        let value = ipv_get_int(pointer, name, Int32.min)
        return value == Int32.min ? nil : Int(value)
    }

    package func string(_ name: String) -> String? {
        ipv_get_string(pointer, name).map { String(cString: $0) }
    }
}
