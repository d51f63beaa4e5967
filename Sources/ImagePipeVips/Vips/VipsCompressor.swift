// The libvips image compressor: header check → shrink-on-load decode → orient → sRGB → resize/crop → encode.
import CLibVips
import CVipsShim
import Foundation
import Synchronization
public import ImagePipe

/// Compresses images with libvips, decoding each source once.
///
/// The source is opened lazily first so its header can be checked (format allowlist, pixel limit)
/// before any pixel is decoded. It is then decoded once with shrink-on-load at the smallest size
/// that serves the largest variant, auto-oriented and converted to 8-bit sRGB, held in memory, and
/// every variant is resized (and cropped for `cover`, at the centre or where its position says) from that copy, watermarked when
/// it has one, and encoded with its metadata stripped or what its ``MetadataPolicy`` keeps. With a single variant nothing is
/// held: libvips streams decode into encode.
/// An animated GIF or WebP gives its WebP and GIF variants every frame, from a second decode of all
/// frames (``decodeFrames(_:)``); its other variants are made from the first frame as above.
public struct VipsCompressor: ImageCompressor {
    /// Encoder settings shared by every variant.
    public struct Configuration: Sendable, Hashable, Codable {
        /// Whether fixed-quality variants are scored too (`--score`), to audit what a fixed quality
        /// gives each image; `auto` variants always are, and with it record their output's full score
        /// where the search used sampled rows. Costs one score per variant.
        public var scoreEveryVariant = false
        /// Whether a JPEG variant that would be larger than its JPEG original, at the original's
        /// size, is the original's bytes without metadata instead (``VipsCompressor/keepingSmallerOriginal(_:source:)``);
        /// off with `--always-encode`.
        public var keepsSmallerOriginal = true
        /// PNG zlib level, 0–9.
        public var pngCompression: Int = 6
        /// Whether plain JPEGs that need no resizing skip libvips (see ``VipsCompressor/compressDirectly(_:variants:limits:memory:)``);
        /// off only to compare the two paths.
        package var decodesPlainJPEGsDirectly = true
        /// The facts the helper's analyses make of each original (`--facts`, all by default).
        public var facts = FactKinds.all

        /// The working memory to allow per image compressed at once: room for a 5120x2880 progressive
        /// JPEG (88 MB of coefficients) with its outputs, so two light images never wait for each other.
        public static let workingMemoryPerImage = 128 << 20

        /// The working memory to allow per image for `variants`: ``workingMemoryPerImage``, plus for
        /// `auto` variants the scoring of the largest one at its full box (an open side counted as
        /// long as the other), so that choosing qualities does not make images wait for each other.
        public static func workingMemoryPerImage(for variants: [VariantSpec]) -> Int {
            let scoring =
                variants.filter(\.isAuto).map { variant in
                    let width = min(variant.width, 8192), height = min(variant.height, 8192)
                    return min(width, variant.width == VariantSpec.unbounded ? height : width)
                        * min(height, variant.height == VariantSpec.unbounded ? width : height) * PerceptualScore.bytesPerPixel
                }.max() ?? 0
            return workingMemoryPerImage + scoring
        }

        /// The defaults.
        public init() {}
    }

    /// The loaders imagepipe accepts; anything else libvips might recognise is refused.
    public static let acceptedLoaders: [String: SourceFormat] = [
        "jpegload": .jpeg, "pngload": .png, "webpload": .webp, "tiffload": .tiff,
        "gifload": .gif, "heifload": .heif,
    ]

    /// Encoder settings.
    public let configuration: Configuration
    /// The logo of the variants' ``VariantSpec/watermark``, decoded once; nil without `--watermark`.
    public let watermarkLogo: WatermarkLogo?
    /// Images this compressor made without libvips (see ``compressDirectly(_:variants:limits:memory:)``).
    package let directCompressions = DirectPathCounter()

    /// Creates a compressor, starting libvips if needed; `watermarkLogo` is the logo the variants'
    /// watermarks name.
    public init(configuration: Configuration = .init(), watermarkLogo: WatermarkLogo? = nil) throws(ImagePipeError) {
        try Vips.ensureStarted()
        self.configuration = configuration
        self.watermarkLogo = watermarkLogo
    }

    /// Working memory from which an image leaves enough free heap behind to be worth trimming.
    static let trimAfterBytes = 8 << 20
    /// Whether an image of ``trimAfterBytes`` or more was compressed since the heap was last trimmed.
    static let heldMuchSinceTrim = Atomic<Bool>(false)

    /// Trims the heap when the pipeline has nothing in flight, if a large image ran since the last
    /// trim. Trimming after every large image, as imagepipe once did, cost 6% of a batch of photos:
    /// each image faulted back in the pages the last one had handed back. Between images of a busy
    /// batch the heap keeps what the allocator settings allow (``Vips/tuneAllocator(arenas:mmapThreshold:trimThreshold:)``);
    /// an idle worker gives the rest back.
    public func releaseMemory() {
        if Self.heldMuchSinceTrim.exchange(false, ordering: .relaxed) { ipv_release_memory() }
    }

    /// The steps, in pipeline order. A plain JPEG that needs no resizing takes the direct path
    /// (libjpeg alone, same bytes); everything else: header, format and size checks, working
    /// memory, one decode (and for an animated source's moving variants, one of every frame,
    /// within the frame budget), placeholder, then each variant resized from the decode,
    /// watermarked and encoded. A variant without a watermark that comes out larger than its original, of its
    /// format and size, is then the original's own bytes (``keepingSmallerOriginal(_:source:)``).
    /// A watermark shows on every variant that has one, and a metadata policy's tags on every variant
    /// that keeps them: neither the direct path nor the kept original ever makes such a variant.
    public func compress(
        _ source: SourceImage, variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory
    ) throws(ImagePipeError) -> CompressedImage {
        var compressed: CompressedImage
        var decode = OriginalDecode.unchecked
        // What the container says before any decode, read once: a JPEG's frame, a gain map.
        let start = Self.start(of: source)
        try Self.refuseUnreadFormats(start)
        // An HDR original whose gain map some variant carries is decoded by libvips, with its map.
        let carriesHDR = variants.contains(where: \.carriesHDR) && GainMap.kind(in: start) != nil
        if !carriesHDR, let direct = compressDirectly(source, variants: variants, limits: limits, memory: memory) {
            // The direct path gives up on any libjpeg warning.
            compressed = direct
            decode = .clean
        } else if configuration.keepsSmallerOriginal, Self.mayKeepOriginal(start: start, variants: variants) {
            // A JPEG that might stand for a variant is first decoded refusing warnings, so that a
            // clean decode proves it undamaged at no cost; checking it with a decode of its own cost a
            // 1800x1200 photo's web preset a tenth of its time. A damaged one (rare) is made again
            // as any other source, and is not kept.
            do throws(ImagePipeError) {
                compressed = try makeVariants(source, start: start, variants: variants, limits: limits, memory: memory, refusingWarnings: true)
                decode = .clean
            } catch  where error.code == .corruptImage {
                compressed = try makeVariants(source, start: start, variants: variants, limits: limits, memory: memory, refusingWarnings: false)
                decode = .warned
            }
        } else {
            compressed = try makeVariants(source, start: start, variants: variants, limits: limits, memory: memory, refusingWarnings: false)
        }
        if configuration.keepsSmallerOriginal {
            compressed = keepingSmallerOriginal(compressed, source: source, decode: decode)
        }
        if compressed.gainMap == nil {
            compressed.gainMap = Self.gainMap(start: start, format: compressed.sourceFormat, variants: variants)
        }
        return compressed
    }

    /// `refusingWarnings`: the loader fails on any warning (``compress(_:variants:limits:memory:)``
    /// says when), else only on truncated data.
    private func makeVariants(
        _ source: SourceImage, start: Data, variants: [VariantSpec], limits: CompressionLimits, memory: WorkingMemory, refusingWarnings: Bool
    ) throws(ImagePipeError) -> CompressedImage {
        // libvips keeps per-thread buffers; Dispatch threads are not libvips' own, so release them.
        var heldMuch = false
        defer {
            ipv_thread_done()
            // Noted once its buffers are freed, so an idle moment that began meanwhile does not miss it.
            if heldMuch { Self.heldMuchSinceTrim.store(true, ordering: .relaxed) }
        }
        // A failure's reason names only what this image raised, not an earlier image's warnings.
        ipv_begin_call()
        let clock = ContinuousClock()
        let started = clock.now

        var steps: [ImageStep] = []
        let header = try openHeader(source, refusingWarnings: refusingWarnings)
        let format = try Self.acceptedFormat(of: header)
        // Read before the header goes, and only when some variant keeps metadata.
        let metadata = variants.contains { $0.metadata != .strip } ? SourceMetadata(header) : nil
        let xmp = xmpForFacts(header, metadata: metadata)
        try Self.checkPixels(header, limits)
        let displayed = Self.displayedSize(of: header)
        // An animated source's WebP and GIF variants keep every frame; the rest take the first.
        let frames = Self.frameCount(of: header)
        let animated = variants.map { frames > 1 && $0.animates(focus: source.focus) }
        let anyAnimated = animated.contains(true)
        if anyAnimated { try Self.checkFrames(header, frames: frames, limits) }
        let outputs = ResizePlan(source: displayed, variants: variants).outputs
        let still = variants.indices.filter { !animated[$0] }.map { variants[$0] }
        let plan = still.isEmpty ? nil : ResizePlan(source: displayed, variants: still)
        // A PQ or HLG picture is tone mapped whole, once, and every still variant made from that.
        let hdrPicture = plan == nil ? nil : Self.hdrPicture(start: start, format: format)
        let needed =
            Self.workingMemory(header, format: format, variants: variants, sourceBytes: Self.heldBytes(source, format), focus: source.focus)
            + Self.gainMapMemory(header, start: start, format: format, variants: variants, source: source)
            + Self.toneMapMemory(header, picture: hdrPicture)
        heldMuch = needed >= Self.trimAfterBytes
        // Waiting for working memory is neither the header's work nor the decode's: a gap between them.
        steps.append(ImageStep(.header, from: started, to: clock.now))
        let reserved = memory.acquire(needed)
        defer { memory.release(reserved) }
        let decodeStart = clock.now

        var decoded: VipsImageHandle?
        var toneMapped: ToneMappedPicture?
        if let plan {
            if let hdrPicture { toneMapped = try toneMap(header, picture: hdrPicture) }
            decoded = try decodeOnce(
                source, header: header, whole: toneMapped?.image, plan: plan, variants: still, displayed: displayed,
                refusingWarnings: refusingWarnings, uncropped: configuration.facts.needsPixels)
        }
        let allFrames = anyAnimated ? try decodeFrames(source) : nil
        let gainMap = readGainMap(source, start: start, header: header, format: format, displayed: displayed, variants: still)
        let decodeEnd = clock.now
        let decodeTime = decodeEnd - started
        steps.append(ImageStep(.decode, from: decodeStart, to: decodeEnd))
        // The placeholder and the facts, from the decode (an animation's first frame when only
        // moving variants were asked for).
        var shown = decoded
        if shown == nil, let allFrames { shown = try firstFrame(of: allFrames) }
        // The facts describe the whole picture, whatever the variants: a decode too small for the
        // PDQ hash to stay near the reference's (only small variants) is not enough.
        var whole = shown
        if configuration.facts.needsPixels, let decoded, !Self.analysesMayRead(decoded, displayed: displayed) {
            whole = try decodeForAnalyses(source, header: header, whole: toneMapped?.image, displayed: displayed, refusingWarnings: refusingWarnings)
        }
        let (placeholder, facts) = analyse(whole, placeholderFrom: shown, source: source, start: start, xmp: xmp)
        var stepStart = clock.now
        steps.append(ImageStep(.analyses, from: decodeEnd, to: stepStart))
        var encoded: [EncodedVariant] = []
        encoded.reserveCapacity(variants.count)
        for (index, variant) in variants.enumerated() {
            if animated[index], let allFrames {
                encoded.append(try animate(allFrames, to: outputs[index], variant: variant, focus: source.focus))
            } else if let decoded {
                let resized =
                    Self.placesCrop(variant, focus: source.focus)
                    ? try placeCrop(decoded, to: outputs[index], variant: variant, focus: source.focus)
                    : try resize(decoded, to: outputs[index], crop: variant.fit == .cover)
                let blocks = metadata?.blocks(for: variant.metadata) ?? SourceMetadata.Blocks()
                var output = try encode(try overlayWatermark(resized, variant: variant), as: variant, metadata: blocks)
                if variant.carriesHDR, case .read(let map) = gainMap {
                    let carrying = clock.now
                    steps.append(ImageStep(.encode(variant: index), from: stepStart, to: carrying))
                    output = try carryingGainMap(output, map: map, displayed: displayed, focus: source.focus)
                    stepStart = clock.now
                    steps.append(ImageStep(.gainMap(variant: index), from: carrying, to: stepStart))
                    encoded.append(output)
                    continue
                }
                encoded.append(output)
            }
            let now = clock.now
            steps.append(ImageStep(.encode(variant: index), from: stepStart, to: now))
            stepStart = now
        }
        var compressed = CompressedImage(
            sourceFormat: format, sourceSize: displayed, variants: encoded,
            decodeTime: decodeTime, encodeTime: clock.now - started - decodeTime)
        compressed.placeholder = placeholder
        compressed.facts = facts
        compressed.gainMap = Self.gainMapRecord(gainMap, variants: encoded) ?? toneMapped.map(Self.toneMapRecord)
        compressed.steps = steps
        return compressed
    }

    // MARK: - Steps, in pipeline order

    /// The source bytes a compression holds: JPEG, PNG and TIFF loaders read an open file as they
    /// go; the others take it whole.
    private static func heldBytes(_ source: SourceImage, _ format: SourceFormat) -> Int {
        switch source.content {
        case .bytes(let data): data.count
        case .file(let opened): [.jpeg, .png, .tiff].contains(format) ? 0 : opened.byteCount
        }
    }

    /// The one decode every variant is made from, copied into memory. With one variant it is that
    /// variant's output itself: decode and resize stream through libvips together, and the encoder
    /// and the placeholder read the result (decoding the output back instead doubled the work for
    /// small images). With several it is the largest size any of them needs, its profile forgotten
    /// (it is sRGB now), so each variant is resized from it without being converted again.
    ///
    /// `uncropped` (when the facts read pixels, which describe the whole picture): a single `cover`
    /// variant is decoded whole at the size that covers its box and cropped in memory, as a placed
    /// crop is, rather than cropped as it is decoded.
    private func decodeOnce(
        _ source: SourceImage, header: VipsImageHandle, whole: VipsImageHandle?, plan: ResizePlan, variants: [VariantSpec], displayed: PixelSize,
        refusingWarnings: Bool, uncropped: Bool
    ) throws(ImagePipeError) -> VipsImageHandle {
        let decoded: VipsImageHandle
        if variants.count == 1, Self.placesCrop(variants[0], focus: source.focus) || (uncropped && variants[0].fit == .cover) {
            // Decoded whole at the size that covers the box; the crop is taken from it in memory.
            let covering = ResizePlan.coverSize(of: displayed, for: plan.outputs[0])
            decoded = try decode(
                source, header: header, whole: whole, to: covering, byWidth: ResizePlan.coversByWidth(displayed, plan.outputs[0]), crop: false,
                refusingWarnings: refusingWarnings)
        } else if variants.count == 1 {
            let variant = variants[0]
            decoded = try decode(
                source, header: header, whole: whole, to: plan.outputs[0], byWidth: ResizePlan.fitsByWidth(displayed, variant.box),
                crop: variant.fit == .cover, refusingWarnings: refusingWarnings)
        } else {
            decoded = try decode(
                source, header: header, whole: whole, to: plan.decodeSize, byWidth: plan.decodesByWidth, crop: false,
                refusingWarnings: refusingWarnings)
        }
        guard let memory = ipv_copy_memory(decoded.pointer) else { throw decodeError() }
        let copy = VipsImageHandle(memory)
        if variants.count > 1 { ipv_forget_profile(copy.pointer) }
        return copy
    }

    /// Shrink-on-load decode to fit `size` (or fill it and crop), auto-oriented, as 8-bit sRGB
    /// converted from any embedded profile; resized from `whole` instead, the picture already
    /// decoded upright in sRGB (a tone-mapped HDR one), when there is one.
    ///
    /// When `size` is the image's own, nothing can shrink on load, and the loader `header` already
    /// opened decodes it: opening the source a second time (a loader search, a header and an EXIF
    /// parse) cost a small image a fifth of its time.
    func decode(
        _ source: SourceImage, header: VipsImageHandle, whole: VipsImageHandle?, to size: PixelSize, byWidth: Bool, crop: Bool,
        refusingWarnings: Bool, reopening: Bool = false
    ) throws(ImagePipeError) -> VipsImageHandle {
        var out: UnsafeMutablePointer<VipsImage>?
        let box = Self.box(for: size, byWidth: byWidth, crop: crop)
        let toSRGB = ipv_profile_needs_conversion(header.pointer)
        let strict: Int32 = refusingWarnings ? 1 : 0
        let status: Int32
        switch source.content {
        case _ where whole != nil:
            status = ipv_thumbnail_image(whole?.pointer, box.width, box.height, crop ? 1 : 0, 0, &out)
        // A second decode (`reopening`) opens the source anew: the header's loader served the first.
        case _ where !reopening && size == Self.displayedSize(of: header):
            status = ipv_thumbnail_image(header.pointer, box.width, box.height, crop ? 1 : 0, toSRGB, &out)
        case .bytes(let data):
            status = data.withUnsafeBytes {
                ipv_thumbnail_buffer($0.baseAddress, $0.count, box.width, box.height, crop ? 1 : 0, toSRGB, strict, &out)
            }
        case .file(let opened):
            status = ipv_thumbnail_descriptor(opened.descriptor, box.width, box.height, crop ? 1 : 0, toSRGB, strict, &out)
        }
        guard status == 0, let out else { throw decodeError() }
        return try toSRGB8(VipsImageHandle(out))
    }

    /// Converts grey, CMYK, LAB and 16-bit images to 8-bit sRGB.
    private func toSRGB8(_ image: VipsImageHandle) throws(ImagePipeError) -> VipsImageHandle {
        var out: UnsafeMutablePointer<VipsImage>?
        guard ipv_to_srgb8(image.pointer, &out) == 0, let out else { throw decodeError() }
        return VipsImageHandle(out)
    }

    /// Resizes the in-memory intermediate to one variant's planned size exactly; the intermediate
    /// itself when it already is.
    ///
    /// A fit to one side would let libvips round the other from the intermediate's rounded size, a
    /// pixel away from the variant's size made alone (a 2048 px variant 1472 px high beside a banner,
    /// 1473 without it): the size is forced instead, which moves the aspect by under a pixel.
    private func resize(_ image: VipsImageHandle, to size: PixelSize, crop: Bool) throws(ImagePipeError) -> VipsImageHandle {
        if image.size == size { return image }
        var out: UnsafeMutablePointer<VipsImage>?
        let (width, height) = (image.size.width, image.size.height)
        // A copy that already covers the box in one side (a single cover variant decoded whole for
        // the facts) only needs its centre cut out: what thumbnail's centre crop takes, without the
        // pipeline it builds to find that nothing needs resizing.
        if crop, (width == size.width && height >= size.height) || (height == size.height && width >= size.width) {
            guard
                ipv_extract_area(
                    image.pointer, Int32((width - size.width) / 2), Int32((height - size.height) / 2), Int32(size.width), Int32(size.height), &out)
                    == 0, let out
            else { throw decodeError() }
            return VipsImageHandle(out)
        }
        // The decoded copy is sRGB already and its profile forgotten.
        let status =
            crop
            ? ipv_thumbnail_image(image.pointer, Int32(size.width), Int32(size.height), 1, 0, &out)
            : ipv_resize_exact(image.pointer, Int32(size.width), Int32(size.height), &out)
        guard status == 0, let out else { throw decodeError() }
        return VipsImageHandle(out)
    }

    /// What to ask libvips for so it produces `target`: for a crop, the box itself. For a fit, only the
    /// side that limits it (`byWidth`), the other left unbounded, so libvips' rounding of the other
    /// side can neither shave a pixel off the limiting one nor push the image out of its box.
    package static func box(for target: PixelSize, byWidth: Bool, crop: Bool) -> (width: Int32, height: Int32) {
        let unbounded = Int32(VariantSpec.unbounded)
        if crop { return (Int32(target.width), Int32(target.height)) }
        return byWidth ? (Int32(target.width), unbounded) : (unbounded, Int32(target.height))
    }
}
